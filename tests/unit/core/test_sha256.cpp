#include "core/sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

using namespace specd;

namespace {

std::string hash_hex(std::string_view bytes) { return sha256_digest(bytes).substr(7); }

} // namespace

// FIPS 180-4 / NIST CAVP vectors.
TEST(Sha256, KnownVectors) {
    EXPECT_EQ(hash_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hash_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hash_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(hash_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
    Sha256            h;
    const std::string chunk(1000, 'a');
    for (int i = 0; i < 1000; ++i) {
        h.update(chunk);
    }
    EXPECT_EQ(h.finish_digest(), "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the 56- and 64-byte padding boundaries (expected values from Python hashlib).
TEST(Sha256, PaddingBoundaries) {
    const std::pair<size_t, const char *> cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    for (const auto & [n, want] : cases) {
        EXPECT_EQ(hash_hex(std::string(n, 'a')), want) << n << " bytes";
    }
}

TEST(Sha256, StreamingInAnyChunkingMatchesOneShot) {
    std::string data;
    for (int i = 0; i < 1000; ++i) {
        data += char(i * 31 + 7);
    }
    const std::string want = sha256_digest(data);
    for (size_t chunk : {1, 3, 63, 64, 65, 127, 999}) {
        Sha256 h;
        for (size_t pos = 0; pos < data.size(); pos += chunk) {
            h.update(std::string_view(data).substr(pos, chunk));
        }
        EXPECT_EQ(h.finish_digest(), want) << "chunk " << chunk;
    }
}

TEST(Sha256, ResetStartsOver) {
    Sha256 h;
    h.update("garbage");
    h.finish();
    h.reset();
    h.update("abc");
    EXPECT_EQ(h.finish_digest(), sha256_digest("abc"));
}

// A copy is a digest of the bytes so far; both go on independently (BlobWriter::digest()).
TEST(Sha256, CopyContinuesFromTheSameState) {
    Sha256 h;
    h.update("ab");
    Sha256 copy = h;
    EXPECT_EQ(copy.finish_digest(), sha256_digest("ab"));
    h.update("c");
    EXPECT_EQ(h.finish_digest(), sha256_digest("abc"));

    Sha256 assigned;
    assigned.update("unrelated");
    Sha256 source;
    source.update("a");
    assigned = source;
    assigned.update("bc");
    EXPECT_EQ(assigned.finish_digest(), sha256_digest("abc"));
    Sha256 moved = std::move(source);
    moved.update("b");
    EXPECT_EQ(moved.finish_digest(), sha256_digest("ab"));
}
