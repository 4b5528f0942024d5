#include "models/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

using namespace specd;
using namespace specd::models;
namespace fs = std::filesystem;
using specd::ErrorKind;

namespace {

void write_file(const fs::path & path, std::string_view bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_file(const fs::path & path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Not a real model: only the magic matters to the store.
std::string fake_gguf(std::string_view body) { return "GGUF" + std::string(body); }

ModelName name(std::string_view text) { return parse_or_throw(text); }

void backdate(const fs::path & path, std::chrono::minutes age) {
    fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

size_t count_files(const fs::path & dir) {
    size_t n = 0;
    for (const auto & e : fs::recursive_directory_iterator(dir)) {
        n += e.is_regular_file();
    }
    return n;
}

class StoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::random_device rd;
        dir_  = fs::temp_directory_path() / ("specd-store-test-" + std::to_string(rd()) + std::to_string(rd()));
        root_ = dir_ / "models";
        src_  = dir_ / "src";
        fs::create_directories(src_);
        write_file(src_ / "tiny.gguf", fake_gguf("tiny weights"));
        write_file(src_ / "draft.gguf", fake_gguf("draft weights"));
        write_file(src_ / "mmproj.gguf", fake_gguf("projector weights"));
        write_file(src_ / "fake.bin", "PK\x03\x04 not a gguf");
        store_ = std::make_unique<Store>(root_);
    }
    void TearDown() override {
        store_.reset();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    Manifest create(std::string_view model, std::string_view modelfile, const CreateOptions & options = {}) {
        return store_->create(name(model), parse_modelfile(modelfile), src_, options);
    }

    // The StoreError a call throws (kind + message), checked to name no absolute path.
    template <typename Fn> std::pair<ErrorKind, std::string> error_of(Fn && fn) {
        try {
            fn();
        } catch (const StoreError & e) {
            const std::string msg = e.what();
            EXPECT_EQ(msg.find(dir_.string()), std::string::npos) << "absolute path in: " << msg;
            return {e.kind(), msg};
        }
        ADD_FAILURE() << "expected a StoreError";
        return {ErrorKind::internal, ""};
    }

    fs::path               dir_, root_, src_;
    std::unique_ptr<Store> store_;
};

} // namespace

TEST_F(StoreTest, OpenCreatesLayout) {
    EXPECT_TRUE(fs::is_directory(root_ / "blobs"));
    EXPECT_TRUE(fs::is_directory(root_ / "manifests"));
    EXPECT_TRUE(store_->list().empty());
}

TEST_F(StoreTest, DefaultRootPrecedence) {
    auto save = [](const char * var) -> std::optional<std::string> {
        const char * v = std::getenv(var);
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
    const auto specd = save("SPECD_MODELS"), ollama = save("OLLAMA_MODELS"), home = save("HOME");
    ::setenv("HOME", "/users/someone", 1);
    ::unsetenv("SPECD_MODELS");
    ::unsetenv("OLLAMA_MODELS");
    EXPECT_EQ(Store::default_root(), fs::path("/users/someone/.specd/models"));
    ::setenv("OLLAMA_MODELS", "/srv/ollama", 1);
    EXPECT_EQ(Store::default_root(), fs::path("/srv/ollama"));
    ::setenv("SPECD_MODELS", "/srv/specd", 1);
    EXPECT_EQ(Store::default_root(), fs::path("/srv/specd"));
    auto restore = [](const char * var, const std::optional<std::string> & v) {
        v ? ::setenv(var, v->c_str(), 1) : ::unsetenv(var);
    };
    restore("SPECD_MODELS", specd);
    restore("OLLAMA_MODELS", ollama);
    restore("HOME", home);
}

TEST_F(StoreTest, PutBlobFromBytes) {
    const std::string digest = store_->put_blob_from_bytes("hello");
    EXPECT_EQ(digest, sha256_digest("hello"));
    const fs::path path = root_ / "blobs" / ("sha256-" + digest.substr(7));
    EXPECT_EQ(store_->blob_path(digest), path);
    EXPECT_EQ(read_file(path), "hello");
    EXPECT_EQ(store_->put_blob_from_bytes("hello"), digest); // dedupe
    EXPECT_EQ(count_files(root_ / "blobs"), 1u);
    EXPECT_EQ(store_->read_blob(digest), "hello");
    EXPECT_TRUE(store_->has_blob(digest));
    EXPECT_FALSE(store_->has_blob(sha256_digest("other")));
}

TEST_F(StoreTest, PutBlobFromFileHashesWhileCopying) {
    std::string big(3 * (1 << 20) + 7, '\0');
    std::mt19937 rng(1);
    for (auto & c : big) {
        c = char(rng());
    }
    write_file(src_ / "big.gguf", big);
    const std::string digest = store_->put_blob_from_file(src_ / "big.gguf");
    EXPECT_EQ(digest, sha256_digest(big));
    EXPECT_EQ(read_file(store_->blob_path(digest)), big);
    // Same size present: the dedupe path hashes first and copies nothing.
    EXPECT_EQ(store_->put_blob_from_file(src_ / "big.gguf"), digest);
    // Same size, different bytes: still a new blob.
    big[12345] ^= 1;
    write_file(src_ / "big2.gguf", big);
    EXPECT_EQ(store_->put_blob_from_file(src_ / "big2.gguf"), sha256_digest(big));
    EXPECT_EQ(count_files(root_ / "blobs"), 2u);

    auto [kind, msg] = error_of([&] { store_->put_blob_from_file(src_ / "missing.gguf"); });
    EXPECT_EQ(kind, ErrorKind::not_found);
    EXPECT_NE(msg.find("missing.gguf"), std::string::npos);
    std::tie(kind, msg) = error_of([&] { store_->put_blob_from_file(src_); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
}

TEST_F(StoreTest, BlobPathValidatesBeforeTouchingTheFilesystem) {
    const std::string bads[] = {"", "sha256:../../etc/passwd", "sha256:" + std::string(63, 'a'),
                                  "sha256:" + std::string(60, 'a') + "/../", "../../../../etc/passwd",
                                  "sha256-" + std::string(64, 'a') + "/x"};
    for (const std::string & bad : bads) {
        auto [kind, msg] = error_of([&] { store_->blob_path(bad); });
        EXPECT_EQ(kind, ErrorKind::bad_request) << bad;
        EXPECT_NE(msg.find("invalid digest"), std::string::npos);
        EXPECT_THROW(store_->has_blob(bad), StoreError);
        EXPECT_THROW(store_->read_blob(bad), StoreError);
    }
    // Uppercase and '-' forms name the same canonical file.
    const std::string hex(64, 'A');
    EXPECT_EQ(store_->blob_path("sha256-" + hex), root_ / "blobs" / ("sha256-" + std::string(64, 'a')));
}

TEST_F(StoreTest, BlobWriterVerifiesAndCleansUp) {
    {
        BlobWriter w = store_->begin_blob();
        w.write("payload");
        auto [kind, msg] = error_of([&] { w.commit(sha256_digest("something else")); });
        EXPECT_EQ(kind, ErrorKind::bad_request);
        EXPECT_NE(msg.find("digest mismatch"), std::string::npos);
    }
    {
        BlobWriter w = store_->begin_blob();
        w.write("abandoned"); // destroyed without commit
    }
    EXPECT_EQ(count_files(root_ / "blobs"), 0u);
    BlobWriter w = store_->begin_blob();
    w.write("pay");
    w.write("load");
    EXPECT_EQ(w.size(), 7u);
    EXPECT_EQ(w.commit(sha256_digest("payload")), sha256_digest("payload"));
    EXPECT_EQ(count_files(root_ / "blobs"), 1u);
}

TEST_F(StoreTest, ManifestRoundTrip) {
    Manifest m;
    m.config = {std::string(media_type::config), store_->put_blob_from_bytes("{}"), 2};
    m.layers.push_back({std::string(media_type::model), store_->put_blob_from_bytes(fake_gguf("x")), 5});
    store_->write_manifest(name("me/tiny:v1"), m);
    EXPECT_TRUE(fs::is_regular_file(root_ / "manifests/registry.ollama.ai/me/tiny/v1"));
    EXPECT_EQ(store_->read_manifest(name("me/tiny:v1")), m);
    EXPECT_EQ(store_->read_manifest(name("ME/TINY:V1")), m);
    EXPECT_FALSE(store_->read_manifest(name("me/tiny:v2")).has_value());

    // Ollama's on-disk format.
    const auto j = nlohmann::json::parse(read_file(root_ / "manifests/registry.ollama.ai/me/tiny/v1"));
    EXPECT_EQ(j["schemaVersion"], 2);
    EXPECT_EQ(j["mediaType"], "application/vnd.docker.distribution.manifest.v2+json");
    EXPECT_EQ(j["layers"][0]["mediaType"], "application/vnd.ollama.image.model");
    EXPECT_EQ(j["layers"][0]["size"], 5);

    // A manifest naming a blob that is not stored is refused.
    Manifest dangling = m;
    dangling.layers[0].digest = sha256_digest("not stored");
    auto [kind, msg]          = error_of([&] { store_->write_manifest(name("me/dangling"), dangling); });
    EXPECT_EQ(kind, ErrorKind::internal);
    EXPECT_FALSE(store_->read_manifest(name("me/dangling")));

    write_file(root_ / "manifests/registry.ollama.ai/me/broken/latest", "{oops");
    std::tie(kind, msg) = error_of([&] { store_->read_manifest(name("me/broken")); });
    EXPECT_EQ(kind, ErrorKind::internal);
    EXPECT_NE(msg.find("corrupt"), std::string::npos);
}

TEST_F(StoreTest, CreateAndResolveEverything) {
    std::vector<std::string> progress;
    CreateOptions            options;
    options.progress = [&](const std::string & s) { progress.push_back(s); };
    options.describe = [](const fs::path & gguf) {
        ModelConfig c;
        c.model_family = gguf.filename().string().starts_with("mmproj") ? "clip" : "llama";
        c.model_type   = std::to_string(fs::file_size(gguf)) + "B";
        return c;
    };
    const Manifest m = create("tiny", R"(FROM ./tiny.gguf
FROM mmproj.gguf
DRAFT ./draft.gguf
PARAMETER temperature 0.25
PARAMETER stop "<|im_end|>"
SYSTEM You are terse.
LICENSE MIT
MESSAGE user hi
MESSAGE assistant hello
)",
                              options);
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.front(), "parsing GGUF");
    EXPECT_EQ(progress.back(), "success");
    EXPECT_NE(std::find(progress.begin(), progress.end(), "writing manifest"), progress.end());

    const ResolvedModel r = store_->resolve(name("tiny"));
    EXPECT_EQ(r.name, name("tiny"));
    EXPECT_EQ(read_file(r.model_gguf), fake_gguf("tiny weights"));
    ASSERT_TRUE(r.projector && r.draft);
    EXPECT_EQ(read_file(*r.projector), fake_gguf("projector weights"));
    EXPECT_EQ(read_file(*r.draft), fake_gguf("draft weights"));
    EXPECT_EQ(r.params.temperature, 0.25);
    EXPECT_EQ(r.params.stop, (std::vector<std::string>{"<|im_end|>"}));
    EXPECT_TRUE(r.unsupported_params.empty());
    EXPECT_EQ(r.system, "You are terse.");
    EXPECT_FALSE(r.template_text);
    EXPECT_EQ(r.licenses, (std::vector<std::string>{"MIT"}));
    EXPECT_EQ(r.messages, (std::vector<ModelfileMessage>{{"user", "hi"}, {"assistant", "hello"}}));
    EXPECT_EQ(r.config.model_family, "llama");
    EXPECT_EQ(r.config.model_format, "gguf");
    EXPECT_EQ(r.config.model_type, std::to_string(fake_gguf("tiny weights").size()) + "B");
    EXPECT_EQ(r.config.diff_ids.size(), m.layers.size());
    EXPECT_EQ(r.manifest, m);
    EXPECT_EQ(r.digest, sha256_digest(read_file(root_ / "manifests/registry.ollama.ai/library/tiny/latest")));

    const auto entries = store_->list();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].name.display(), "tiny:latest");
    EXPECT_EQ(entries[0].digest, r.digest);
    EXPECT_EQ(entries[0].size, m.total_size());
    EXPECT_EQ(entries[0].config.model_family, "llama");
    EXPECT_LT(std::chrono::abs(std::chrono::system_clock::now() - entries[0].modified), std::chrono::minutes(1));

    // The Modelfile of a resolved model recreates it.
    const Modelfile mf = r.modelfile();
    EXPECT_EQ(mf.from.size(), 2u);
    EXPECT_EQ(parse_modelfile(format_modelfile(mf)), mf);
    store_->create(name("again"), mf, src_);
    EXPECT_EQ(store_->resolve(name("again")).manifest.layers, m.layers);
}

// As in Ollama, the projector is the FROM whose GGUF architecture is clip, on either line.
TEST_F(StoreTest, TheProjectorIsFoundByItsArchitecture) {
    CreateOptions options;
    options.describe = [](const fs::path & gguf) {
        ModelConfig c;
        c.model_family = gguf.filename().string().starts_with("mmproj") ? "clip" : "llama";
        return c;
    };
    create("vis", "FROM mmproj.gguf\nFROM ./tiny.gguf\n", options);
    const ResolvedModel r = store_->resolve(name("vis"));
    ASSERT_TRUE(r.projector);
    EXPECT_EQ(read_file(r.model_gguf), read_file(src_ / "tiny.gguf"));
    EXPECT_EQ(read_file(*r.projector), read_file(src_ / "mmproj.gguf"));

    auto [kind, msg] = error_of([&] { create("bad", "FROM mmproj.gguf\n", options); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_EQ(msg, "FROM mmproj.gguf is a vision projector (clip): add a FROM line with the text model");
    std::tie(kind, msg) = error_of([&] { create("bad", "FROM ./tiny.gguf\nFROM ./draft.gguf\n", options); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_NE(msg.find("neither is"), std::string::npos);
    EXPECT_FALSE(store_->read_manifest(name("bad")));
}

TEST_F(StoreTest, CreateRejectsNonGguf) {
    auto [kind, msg] = error_of([&] { create("bad", "FROM ./fake.bin\n"); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_EQ(msg, "not a GGUF file: fake.bin");
    std::tie(kind, msg) = error_of([&] { create("bad", "FROM ./tiny.gguf\nDRAFT fake.bin\n"); });
    EXPECT_EQ(msg, "not a GGUF file: fake.bin");
    std::tie(kind, msg) = error_of([&] { create("bad", "FROM ./tiny.gguf\nFROM ./fake.bin\n"); });
    EXPECT_EQ(msg, "not a GGUF file: fake.bin");
    write_file(src_ / "short.gguf", "GG");
    std::tie(kind, msg) = error_of([&] { create("bad", "FROM short.gguf\n"); });
    EXPECT_EQ(msg, "not a GGUF file: short.gguf");
    EXPECT_FALSE(store_->read_manifest(name("bad")));
    EXPECT_TRUE(store_->list().empty());
}

TEST_F(StoreTest, CreateErrors) {
    struct Case {
        const char * modelfile;
        ErrorKind    kind;
        const char * message_part;
    };
    const Case cases[] = {
        {"FROM ./tiny.gguf\nTEMPLATE {{ .Prompt }}\n", ErrorKind::bad_request, "TEMPLATE is not supported yet"},
        {"FROM ./tiny.gguf\nADAPTER ./lora.gguf\n", ErrorKind::not_found, "ADAPTER: no such file: lora.gguf"},
        {"FROM ./tiny.gguf\nADAPTER ./fake.bin\n", ErrorKind::bad_request, "not a GGUF file: fake.bin"},
        {"FROM ./missing.gguf\n", ErrorKind::not_found, "no such file: missing.gguf"},
        {"FROM /nowhere/at/all/missing.gguf\n", ErrorKind::not_found, "no such file: missing.gguf"},
        {"FROM nosuchmodel\n", ErrorKind::not_found, "no file or model named 'nosuchmodel'"},
        {"FROM ./tiny.gguf\nDRAFT ./tiny.gguf\n", ErrorKind::bad_request, "DRAFT must be a different model"},
        {"FROM ./tiny.gguf\nDRAFT nosuchdraft\n", ErrorKind::not_found, "DRAFT: no file or model named"},
        {"FROM ./tiny.gguf\nFROM ./a.gguf\nFROM ./b.gguf\n", ErrorKind::bad_request, "at most two FROM"},
        {"FROM .\n", ErrorKind::bad_request, "is a directory"},
    };
    for (const auto & c : cases) {
        auto [kind, msg] = error_of([&] { create("x", c.modelfile); });
        EXPECT_EQ(kind, c.kind) << c.modelfile;
        EXPECT_NE(msg.find(c.message_part), std::string::npos) << c.modelfile << " gave: " << msg;
    }
    EXPECT_TRUE(store_->list().empty());
    EXPECT_EQ(count_files(root_ / "blobs"), 0u) << "nothing written before validation";
}

TEST_F(StoreTest, RemoteCreateUsesOnlyBlobsAndModels) {
    CreateOptions remote;
    remote.allow_local_files = false;
    create("base", "FROM ./tiny.gguf\n");
    const std::string blob = store_->put_blob_from_file(src_ / "draft.gguf");
    const Modelfile   ok   = parse_modelfile("FROM " + store_->blob_path(blob).string() + "\nDRAFT base\n");
    ASSERT_NO_THROW(store_->create(name("uploaded"), ok, root_, remote));
    EXPECT_EQ(store_->resolve(name("uploaded")).draft, store_->resolve(name("base")).model_gguf);
    ASSERT_NO_THROW(store_->create(name("derived"), parse_modelfile("FROM base\n"), root_, remote));

    const std::string refused[] = {
        "FROM " + (src_ / "tiny.gguf").string() + "\n",
        "FROM tiny.gguf\n", // a valid model name, and a file in the Modelfile directory
        "FROM base\nDRAFT " + (src_ / "draft.gguf").string() + "\n",
        "FROM " + (root_ / "blobs" / "..").string() + "/src/tiny.gguf\n",
    };
    write_file(root_ / "tiny.gguf", fake_gguf("planted"));
    for (const auto & text : refused) {
        auto [kind, msg] = error_of([&] { store_->create(name("x"), parse_modelfile(text), root_, remote); });
        EXPECT_EQ(kind, ErrorKind::not_found) << text;
        EXPECT_NE(msg.find("no model or uploaded blob"), std::string::npos) << msg;
    }
    EXPECT_FALSE(store_->read_manifest(name("x")));
}

TEST_F(StoreTest, TemplateStoredWhenTheCallerAllowsIt) {
    CreateOptions options;
    options.allow_template = true;
    create("t", "FROM ./tiny.gguf\nTEMPLATE \"\"\"{{ .Prompt }}\"\"\"\n", options);
    EXPECT_EQ(store_->resolve(name("t")).template_text, "{{ .Prompt }}");
}

TEST_F(StoreTest, CreateFromAnotherModelInherits) {
    create("base", "FROM ./tiny.gguf\nDRAFT ./draft.gguf\nPARAMETER temperature 0.5\nPARAMETER num_ctx 1024\n"
                   "SYSTEM base system\nLICENSE MIT\n");
    create("me/derived:v1", "FROM base\nPARAMETER temperature 0.9\nPARAMETER top_k 5\nMESSAGE user hi\n");
    const auto base    = store_->resolve(name("base"));
    const auto derived = store_->resolve(name("me/derived:v1"));
    EXPECT_EQ(derived.model_gguf, base.model_gguf); // same blob, not a copy
    EXPECT_EQ(derived.draft, base.draft);
    EXPECT_EQ(derived.params.temperature, 0.9);
    EXPECT_EQ(derived.params.num_ctx, 1024);
    EXPECT_EQ(derived.params.top_k, 5);
    EXPECT_EQ(derived.system, "base system");
    EXPECT_EQ(derived.licenses, base.licenses);
    EXPECT_EQ(derived.messages.size(), 1u);

    // SYSTEM "" clears an inherited system prompt; a new DRAFT replaces the inherited one.
    write_file(src_ / "draft2.gguf", fake_gguf("another draft"));
    create("cleared", "FROM base\nSYSTEM \"\"\nDRAFT draft2.gguf\n");
    const auto cleared = store_->resolve(name("cleared"));
    EXPECT_EQ(cleared.system, "");
    EXPECT_EQ(cleared.manifest.find(media_type::system), nullptr);
    EXPECT_EQ(read_file(*cleared.draft), fake_gguf("another draft"));

    // A DRAFT model whose GGUF is the FROM model's is refused.
    auto [kind, msg] = error_of([&] { create("same", "FROM base\nDRAFT me/derived:v1\n"); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_NE(msg.find("DRAFT must be a different model"), std::string::npos);

    // DRAFT may name a model: its GGUF becomes the draft layer.
    create("drafted", "FROM ./draft.gguf\nDRAFT base\n");
    const auto drafted = store_->resolve(name("drafted"));
    EXPECT_EQ(drafted.draft, base.model_gguf);
}

TEST_F(StoreTest, RemoveCollectsOnlyUnsharedBlobs) {
    create("a", "FROM ./tiny.gguf\nSYSTEM only a\n");
    create("b", "FROM ./tiny.gguf\nSYSTEM only b\n");
    const auto a      = store_->resolve(name("a"));
    const auto b      = store_->resolve(name("b"));
    const auto blobs0 = count_files(root_ / "blobs");

    EXPECT_TRUE(store_->remove(name("a")));
    EXPECT_FALSE(store_->read_manifest(name("a")));
    EXPECT_FALSE(fs::exists(root_ / "manifests/registry.ollama.ai/library/a")) << "empty dirs pruned";
    EXPECT_TRUE(fs::exists(a.model_gguf)) << "shared with b";
    EXPECT_FALSE(store_->has_blob(a.manifest.find(media_type::system)->digest));
    EXPECT_LT(count_files(root_ / "blobs"), blobs0);
    EXPECT_NO_THROW(store_->resolve(name("b")));

    EXPECT_TRUE(store_->remove(name("B"))); // case-insensitive
    EXPECT_FALSE(fs::exists(b.model_gguf));
    EXPECT_EQ(count_files(root_ / "blobs"), 0u);
    EXPECT_EQ(count_files(root_ / "manifests"), 0u);
    EXPECT_FALSE(store_->remove(name("b")));
}

TEST_F(StoreTest, ReplacingAModelFreesItsOldLayers) {
    create("m", "FROM ./tiny.gguf\nSYSTEM first\n");
    const std::string first = store_->resolve(name("m")).manifest.find(media_type::system)->digest;
    create("m", "FROM m\nSYSTEM second\n"); // FROM itself, as people edit a model
    const auto r = store_->resolve(name("m"));
    EXPECT_EQ(r.system, "second");
    EXPECT_FALSE(store_->has_blob(first));
    EXPECT_TRUE(fs::exists(r.model_gguf));

    create("other", "FROM ./draft.gguf\n");
    const auto other_gguf = store_->resolve(name("other")).model_gguf;
    store_->copy(name("m"), name("other")); // overwrite
    EXPECT_FALSE(fs::exists(other_gguf));
    EXPECT_EQ(store_->resolve(name("other")).system, "second");
}

TEST_F(StoreTest, Copy) {
    create("src", "FROM ./tiny.gguf\nSYSTEM hi\n");
    store_->copy(name("src"), name("other/dst:v2"));
    EXPECT_EQ(store_->read_manifest(name("other/dst:v2")), store_->read_manifest(name("src")));
    EXPECT_EQ(store_->list().size(), 2u);
    // Removing the source keeps every blob the copy needs.
    store_->remove(name("src"));
    EXPECT_EQ(store_->resolve(name("other/dst:v2")).system, "hi");
    auto [kind, msg] = error_of([&] { store_->copy(name("nope"), name("x")); });
    EXPECT_EQ(kind, ErrorKind::not_found);
    EXPECT_EQ(msg, "model 'nope:latest' not found");
}

TEST_F(StoreTest, ResolveErrors) {
    auto [kind, msg] = error_of([&] { store_->resolve(name("ghost")); });
    EXPECT_EQ(kind, ErrorKind::not_found);
    EXPECT_EQ(msg, "model 'ghost:latest' not found");

    create("trunc", "FROM ./tiny.gguf\n");
    const auto r = store_->resolve(name("trunc"));
    write_file(r.model_gguf, "GGUF"); // a truncated blob
    std::tie(kind, msg) = error_of([&] { store_->resolve(name("trunc")); });
    EXPECT_EQ(kind, ErrorKind::internal);
    EXPECT_NE(msg.find("missing or truncated"), std::string::npos);
}

TEST_F(StoreTest, ResolveReportsParamsItDoesNotKnow) {
    // A model written by Ollama can carry options this server does not implement.
    Manifest m;
    m.config = {std::string(media_type::config), store_->put_blob_from_bytes("{}"), 2};
    const std::string params = R"({"low_vram":true,"temperature":0.5,"stop":["a"]})";
    m.layers.push_back({std::string(media_type::model), store_->put_blob_from_bytes(fake_gguf("w")), 5});
    m.layers.push_back({std::string(media_type::params), store_->put_blob_from_bytes(params), params.size()});
    m.layers.push_back({"application/vnd.ollama.image.unknown", store_->put_blob_from_bytes("?"), 1});
    store_->write_manifest(name("ollama"), m);
    const auto r = store_->resolve(name("ollama"));
    EXPECT_EQ(r.unsupported_params, (std::vector<std::string>{"low_vram"}));
    EXPECT_EQ(r.params.temperature, 0.5);
    EXPECT_EQ(r.params.stop, (std::vector<std::string>{"a"}));

    // A derived model keeps the layer kinds it does not interpret and drops unknown params.
    create("derived", "FROM ollama\n");
    const auto d = store_->resolve(name("derived"));
    EXPECT_NE(d.manifest.find("application/vnd.ollama.image.unknown"), nullptr);
    EXPECT_TRUE(d.unsupported_params.empty());
    EXPECT_EQ(d.params.temperature, 0.5);

    // An Ollama model with a LoRA layer resolves with the adapter's blob, as a Modelfile
    // ADAPTER line too.
    const std::string lora = store_->put_blob_from_bytes(fake_gguf("lora"));
    Manifest adapted = m;
    adapted.layers.push_back({std::string(media_type::adapter), lora, 8});
    store_->write_manifest(name("adapted"), adapted);
    const auto a = store_->resolve(name("adapted"));
    ASSERT_EQ(a.adapters.size(), 1u);
    EXPECT_EQ(a.adapters[0], store_->blob_path(lora));
    EXPECT_EQ(a.modelfile().adapters, (std::vector<std::string>{store_->blob_path(lora).string()}));
    EXPECT_TRUE(store_->resolve(name("ollama")).adapters.empty());
}

TEST_F(StoreTest, CreateWithAdapters) {
    write_file(src_ / "lora-a.gguf", fake_gguf("lora a"));
    write_file(src_ / "lora-b.gguf", fake_gguf("lora b"));
    std::vector<std::pair<std::string, std::string>> checked; // (model, adapter) file names
    CreateOptions opts;
    opts.check_adapter = [&](const fs::path & model, const fs::path & adapter) {
        EXPECT_EQ(read_file(model), fake_gguf("tiny weights")) << "checked against the model's GGUF";
        checked.emplace_back(model.filename().string(), adapter.filename().string());
        if (adapter.filename() == "lora-b.gguf") throw StoreError(ErrorKind::bad_request, "lora-b does not fit");
    };

    // A refused adapter writes nothing, not even the model's blob.
    auto [kind, msg] = error_of([&] { create("bad", "FROM ./tiny.gguf\nADAPTER lora-a.gguf\nADAPTER lora-b.gguf\n", opts); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_EQ(msg, "lora-b does not fit");
    EXPECT_EQ(count_files(root_ / "blobs"), 0u);
    EXPECT_TRUE(store_->list().empty());

    checked.clear();
    const Manifest m = create("adapted", "FROM ./tiny.gguf\nADAPTER lora-a.gguf\n", opts);
    EXPECT_EQ(checked, (decltype(checked){{"tiny.gguf", "lora-a.gguf"}}));
    const auto adapters = m.find_all(media_type::adapter);
    ASSERT_EQ(adapters.size(), 1u);
    EXPECT_EQ(read_file(store_->blob_path(adapters[0]->digest)), fake_gguf("lora a"));
    const auto r = store_->resolve(name("adapted"));
    ASSERT_EQ(r.adapters.size(), 1u);
    // The adapter is part of the model's identity: the manifest (and so the digest that
    // names prompt-cache states and decides reloads) differs from the plain model's.
    create("plain", "FROM ./tiny.gguf\n");
    EXPECT_NE(r.digest, store_->resolve(name("plain")).digest);

    // A model built FROM it keeps its adapter, and a new one stacks after it; naming the same
    // adapter again does not apply it twice. The check runs against the base GGUF (a blob).
    write_file(src_ / "lora-c.gguf", fake_gguf("lora c"));
    checked.clear();
    const Manifest d = create("derived", "FROM adapted\nADAPTER lora-c.gguf\nADAPTER lora-a.gguf\n", opts);
    std::vector<std::string> contents;
    for (const Layer * layer : d.find_all(media_type::adapter)) contents.push_back(read_file(store_->blob_path(layer->digest)));
    EXPECT_EQ(contents, (std::vector<std::string>{fake_gguf("lora a"), fake_gguf("lora c")}));
    ASSERT_EQ(checked.size(), 2u);
    EXPECT_TRUE(checked[0].first.starts_with("sha256-")) << checked[0].first;

    // A draft cannot carry an adapter (only its GGUF becomes the draft layer).
    std::tie(kind, msg) = error_of([&] { create("x", "FROM ./tiny.gguf\nDRAFT adapted\n", opts); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_NE(msg.find("LoRA adapter"), std::string::npos) << msg;
    // An adapter must be a file, not a model name.
    std::tie(kind, msg) = error_of([&] { create("x", "FROM ./tiny.gguf\nADAPTER plain\n", opts); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_NE(msg.find("must be a LoRA GGUF file"), std::string::npos) << msg;
}

TEST_F(StoreTest, CreateRewritesTheModel) {
    fs::path seen_out;
    CreateOptions opts;
    opts.describe = [](const fs::path & gguf) {
        ModelConfig c;
        c.model_family = "llama";
        c.file_type    = read_file(gguf) == fake_gguf("tiny weights") ? "F32" : "Q8_0";
        return c;
    };
    opts.rewrite_model = [&](const fs::path & in, const fs::path & out) {
        seen_out = out;
        EXPECT_EQ(out.parent_path(), root_ / "blobs") << "a temp file inside the store";
        EXPECT_TRUE(out.filename().string().starts_with(".tmp-")) << out;
        write_file(out, read_file(in) + " quantized");
    };
    const Manifest m = create("q", "FROM ./tiny.gguf\nSYSTEM hi\n", opts);
    EXPECT_EQ(read_file(store_->blob_path(m.find(media_type::model)->digest)), fake_gguf("tiny weights") + " quantized");
    EXPECT_FALSE(fs::exists(seen_out)) << "the temp file is gone";
    EXPECT_EQ(store_->resolve(name("q")).config.file_type, "Q8_0");
    EXPECT_EQ(store_->resolve(name("q")).system, "hi");

    // From a stored model: its layers are inherited, the model layer is the rewritten one.
    const Manifest r = create("q2", "FROM q\n", opts);
    EXPECT_EQ(read_file(store_->blob_path(r.find(media_type::model)->digest)),
              fake_gguf("tiny weights") + " quantized quantized");
    EXPECT_EQ(store_->resolve(name("q2")).system, "hi");

    // A refusal, or a failure after writing part of the output, leaves nothing behind.
    const size_t files_before = count_files(root_);
    opts.rewrite_model = [&](const fs::path &, const fs::path & out) {
        write_file(out, "GGUF half");
        throw StoreError(ErrorKind::bad_request, "already quantized");
    };
    auto [kind, msg] = error_of([&] { create("q3", "FROM ./draft.gguf\n", opts); });
    EXPECT_EQ(msg, "already quantized");
    EXPECT_EQ(count_files(root_), files_before);
    EXPECT_FALSE(store_->read_manifest(name("q3")));
}

TEST_F(StoreTest, CreateRewritesTheDraft) {
    CreateOptions opts;
    opts.rewrite_draft = [&](const fs::path & in, const fs::path & out) { write_file(out, read_file(in) + " quantized"); };
    const Manifest m = create("d", "FROM ./tiny.gguf\nDRAFT ./draft.gguf\n", opts);
    EXPECT_EQ(read_file(store_->blob_path(m.find(media_type::draft)->digest)), fake_gguf("draft weights") + " quantized");
    EXPECT_EQ(read_file(store_->blob_path(m.find(media_type::model)->digest)), fake_gguf("tiny weights"));
    // The original draft file was not stored beside its rewrite.
    EXPECT_FALSE(store_->has_blob(sha256_digest(fake_gguf("draft weights"))));

    // A draft inherited from FROM is rewritten too.
    const Manifest r = create("d2", "FROM d\n", opts);
    EXPECT_EQ(read_file(store_->blob_path(r.find(media_type::draft)->digest)),
              fake_gguf("draft weights") + " quantized quantized");

    // Without any draft: refused before anything is written.
    const size_t files_before = count_files(root_);
    auto [kind, msg]          = error_of([&] { create("d3", "FROM ./tiny.gguf\n", opts); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_NE(msg.find("needs a DRAFT"), std::string::npos) << msg;
    EXPECT_EQ(count_files(root_), files_before);
}

TEST_F(StoreTest, TempFilesAreInvisibleAndCleanedOnOpen) {
    create("tiny", "FROM ./tiny.gguf\n");
    // What a crash mid-write leaves behind: a half-written blob and a half-written manifest.
    const fs::path stale_blob     = root_ / "blobs/.tmp-0123456789abcdef";
    const fs::path stale_manifest = root_ / "manifests/registry.ollama.ai/library/tiny/.tmp-fedcba9876543210";
    const fs::path fresh_blob     = root_ / "blobs/.tmp-00000000000000ff";
    write_file(stale_blob, "GGUF half");
    write_file(stale_manifest, "{\"schemaVer");
    write_file(fresh_blob, "GGUF in progress");
    backdate(stale_blob, std::chrono::minutes(60));
    backdate(stale_manifest, std::chrono::minutes(60));

    // Readers never see temp files.
    const auto entries = store_->list();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].name.display(), "tiny:latest");
    EXPECT_EQ(store_->collect_garbage(std::chrono::seconds(0)), 0u);
    EXPECT_TRUE(fs::exists(stale_blob));

    Store reopened(root_);
    EXPECT_FALSE(fs::exists(stale_blob));
    EXPECT_FALSE(fs::exists(stale_manifest));
    EXPECT_TRUE(fs::exists(fresh_blob)) << "may belong to a live writer";
    EXPECT_NO_THROW(reopened.resolve(name("tiny")));
}

TEST_F(StoreTest, CollectGarbageSparesYoungAndForeignFiles) {
    create("keep", "FROM ./tiny.gguf\n");
    const std::string orphan_old = store_->put_blob_from_bytes("orphan old");
    const std::string orphan_new = store_->put_blob_from_bytes("orphan new");
    backdate(store_->blob_path(orphan_old), std::chrono::minutes(60));
    const fs::path partial = root_ / "blobs" / ("sha256-" + std::string(64, 'c') + "-partial");
    write_file(partial, "ollama download in progress");
    backdate(partial, std::chrono::minutes(60));

    EXPECT_EQ(store_->collect_garbage(), 1u);
    EXPECT_FALSE(store_->has_blob(orphan_old));
    EXPECT_TRUE(store_->has_blob(orphan_new)) << "younger than the grace period";
    EXPECT_TRUE(fs::exists(partial));
    EXPECT_NO_THROW(store_->resolve(name("keep")));

    // An unreadable manifest means we cannot know what is referenced: delete nothing.
    write_file(root_ / "manifests/registry.ollama.ai/library/broken/latest", "{oops");
    EXPECT_EQ(store_->collect_garbage(std::chrono::seconds(0)), 0u);
    EXPECT_TRUE(store_->has_blob(orphan_new));
}

TEST_F(StoreTest, ListSkipsJunkAndSortsNewestFirst) {
    create("older", "FROM ./tiny.gguf\n");
    create("newer", "FROM ./draft.gguf\n");
    backdate(root_ / "manifests/registry.ollama.ai/library/older/latest", std::chrono::minutes(5));
    write_file(root_ / "manifests/registry.ollama.ai/library/broken/latest", "{oops");
    write_file(root_ / "manifests/registry.ollama.ai/library/.hidden/latest", "{}");
    write_file(root_ / "manifests/stray-file", "x");
    write_file(root_ / "manifests/a/b/c/d/e", "too deep");
    const auto entries = store_->list();
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].name.display(), "newer:latest");
    EXPECT_EQ(entries[1].name.display(), "older:latest");
}

TEST_F(StoreTest, MixedCaseDirectoriesFromOtherTools) {
    create("tiny", "FROM ./tiny.gguf\n");
    // Another tool may keep the case the user typed on disk.
    const fs::path mixed = root_ / "manifests/hf.co/SomeOrg/Model-GGUF/Q4_K_M";
    fs::create_directories(mixed.parent_path());
    fs::copy_file(root_ / "manifests/registry.ollama.ai/library/tiny/latest", mixed);
    EXPECT_NO_THROW(store_->resolve(name("hf.co/someorg/model-gguf:q4_k_m")));
    EXPECT_NO_THROW(store_->resolve(name("hf.co/SomeOrg/Model-GGUF:Q4_K_M")));
    EXPECT_EQ(store_->list().size(), 2u);
    EXPECT_TRUE(store_->remove(name("hf.co/someorg/model-gguf:Q4_K_M")));
    EXPECT_FALSE(fs::exists(mixed));
}

TEST_F(StoreTest, WriteGuardHoldsOffCollection) {
    create("a", "FROM ./tiny.gguf\n");
    std::atomic<bool> removed{false};
    std::thread       remover;
    {
        Store::WriteGuard guard(*store_);
        remover = std::thread([&] {
            store_->remove(name("a"));
            removed = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_FALSE(removed.load()) << "remove ran while a writer was between blob and manifest";
    }
    remover.join();
    EXPECT_TRUE(removed.load());
}

// The DRAFT check runs before anything is written, with both GGUF paths; a refusal leaves
// the store untouched.
TEST_F(StoreTest, DraftCheckRunsBeforeWriting) {
    CreateOptions opts;
    std::vector<std::pair<fs::path, fs::path>> seen;
    opts.check_draft = [&](const fs::path & model, const fs::path & draft) {
        seen.emplace_back(model, draft);
        throw StoreError(ErrorKind::bad_request, "DRAFT cannot be used with this model: test");
    };
    auto [kind, msg] = error_of([&] { create("pair", "FROM ./tiny.gguf\nDRAFT ./draft.gguf\n", opts); });
    EXPECT_EQ(kind, ErrorKind::bad_request);
    EXPECT_EQ(msg, "DRAFT cannot be used with this model: test");
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].first.filename(), "tiny.gguf");
    EXPECT_EQ(seen[0].second.filename(), "draft.gguf");
    EXPECT_TRUE(store_->list().empty());
    EXPECT_EQ(count_files(root_ / "blobs"), 0u);

    opts.check_draft = [&](const fs::path &, const fs::path &) {};
    EXPECT_NO_THROW(create("pair", "FROM ./tiny.gguf\nDRAFT ./draft.gguf\n", opts));
}

// Drafts are stored under Ollama's media type; a model stored by an older specd (its own
// type) still resolves its draft, and a model created from it gets Ollama's type.
TEST_F(StoreTest, DraftLayersUseOllamasTypeAndTheOldOneStillReads) {
    const Manifest m = create("pair", "FROM ./tiny.gguf\nDRAFT ./draft.gguf\n");
    ASSERT_NE(m.find(media_type::draft), nullptr);
    EXPECT_EQ(m.find(media_type::draft)->media_type, "application/vnd.ollama.image.draft");

    Manifest old = m;
    for (auto & layer : old.layers) {
        if (layer.media_type == media_type::draft) layer.media_type = std::string(media_type::legacy_draft);
    }
    store_->write_manifest(name("old"), old);
    const auto resolved = store_->resolve(name("old"));
    ASSERT_TRUE(resolved.draft.has_value());
    EXPECT_EQ(read_file(*resolved.draft), fake_gguf("draft weights"));

    const Manifest again = create("again", "FROM old\nSYSTEM hi\n");
    int drafts = 0;
    for (const auto & layer : again.layers) {
        EXPECT_NE(layer.media_type, media_type::legacy_draft) << "carried along as a foreign layer";
        drafts += layer.media_type == media_type::draft;
    }
    EXPECT_EQ(drafts, 1);
}

// RENDERER, PARSER and REQUIRES go into the config and come back in the Modelfile.
TEST_F(StoreTest, OllamasRendererParserAndRequiresRoundTrip) {
    create("r", "FROM ./tiny.gguf\nRENDERER qwen3-coder\nPARSER qwen3-coder\nREQUIRES 0.12.0\n");
    const auto resolved = store_->resolve(name("r"));
    EXPECT_EQ(resolved.config.renderer, "qwen3-coder");
    EXPECT_EQ(resolved.config.parser, "qwen3-coder");
    EXPECT_EQ(resolved.config.requires_version, "0.12.0");
    const std::string text = format_modelfile(resolved.modelfile());
    EXPECT_NE(text.find("RENDERER qwen3-coder\n"), std::string::npos) << text;
    EXPECT_NE(text.find("REQUIRES 0.12.0\n"), std::string::npos) << text;
    // Inherited by a model created from it, unless its Modelfile says otherwise.
    create("r2", "FROM r\nPARSER other\n");
    EXPECT_EQ(store_->resolve(name("r2")).config.renderer, "qwen3-coder");
    EXPECT_EQ(store_->resolve(name("r2")).config.parser, "other");
}

// --- resumable downloads (pull)

namespace {

fs::path partial_path(const fs::path & root, const std::string & digest) {
    return root / "blobs" / (".tmp-partial-sha256-" + digest.substr(7));
}

} // namespace

TEST_F(StoreTest, ResumedBlobKeepsItsBytesAcrossWriters) {
    const std::string body   = "0123456789abcdefghij";
    const std::string digest = sha256_digest(body);
    {
        auto w = store_->resume_blob(digest);
        ASSERT_TRUE(w);
        EXPECT_EQ(w->size(), 0u);
        w->write(body.substr(0, 7));
        EXPECT_EQ(w->digest(), sha256_digest(body.substr(0, 7)));
    } // dropped uncommitted, as a broken transfer leaves it
    EXPECT_EQ(read_file(partial_path(root_, digest)), body.substr(0, 7));
    EXPECT_FALSE(store_->has_blob(digest));
    EXPECT_TRUE(store_->list().empty());

    auto w = store_->resume_blob(digest);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->size(), 7u);
    EXPECT_EQ(w->digest(), sha256_digest(body.substr(0, 7)));
    w->write(body.substr(7));
    EXPECT_EQ(w->commit(digest), digest);
    EXPECT_EQ(read_file(store_->blob_path(digest)), body);
    EXPECT_FALSE(fs::exists(partial_path(root_, digest)));
}

TEST_F(StoreTest, ResumedBlobRestartDiscardAndMismatch) {
    const std::string body   = "the real bytes";
    const std::string digest = sha256_digest(body);
    {
        auto w = store_->resume_blob(digest);
        w->write("garbage");
        w->restart();
        EXPECT_EQ(w->size(), 0u);
        w->write(body);
        EXPECT_EQ(w->digest(), digest);
        w->discard();
    }
    EXPECT_FALSE(fs::exists(partial_path(root_, digest)));
    {
        auto w = store_->resume_blob(digest);
        w->write("tampered bytes");
        EXPECT_EQ(error_of([&] { w->commit(digest); }).first, ErrorKind::bad_request);
    }
    EXPECT_FALSE(fs::exists(partial_path(root_, digest)));
    EXPECT_FALSE(store_->has_blob(digest));
    EXPECT_EQ(count_files(root_ / "blobs"), 0u);
}

TEST_F(StoreTest, ResumeBlobValidatesAndSkipsStoredBlobs) {
    EXPECT_EQ(error_of([&] { store_->resume_blob("sha256:../../etc/passwd"); }).first, ErrorKind::bad_request);
    EXPECT_EQ(error_of([&] { store_->resume_blob("sha256-../x"); }).first, ErrorKind::bad_request);
    EXPECT_EQ(count_files(root_), 0u);

    const std::string digest = store_->put_blob_from_bytes("stored");
    write_file(partial_path(root_, digest), "sto"); // a leftover next to it
    EXPECT_FALSE(store_->resume_blob(digest));
    EXPECT_FALSE(fs::exists(partial_path(root_, digest)));
}

TEST_F(StoreTest, SecondWriterOfOneDigestWaitsForTheFirst) {
    const std::string body   = "shared layer";
    const std::string digest = sha256_digest(body);
    auto              first  = store_->resume_blob(digest);
    ASSERT_TRUE(first);
    std::atomic<bool> returned{false};
    bool              second_got_writer = true;
    std::thread second([&] {
        second_got_writer = store_->resume_blob(digest).has_value();
        returned          = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(returned) << "the second writer must wait for the lock";
    first->write(body);
    first->commit(digest);
    second.join();
    EXPECT_TRUE(returned);
    EXPECT_FALSE(second_got_writer) << "the blob was stored by the first writer";
    EXPECT_FALSE(fs::exists(partial_path(root_, digest)));
    EXPECT_EQ(read_file(store_->blob_path(digest)), body);
}

TEST_F(StoreTest, StalePartialDownloadsAreKeptForAWeek) {
    const std::string a = sha256_digest("a"), b = sha256_digest("b");
    { store_->resume_blob(a)->write("a-part"); }
    { store_->resume_blob(b)->write("b-part"); }
    backdate(partial_path(root_, a), std::chrono::hours(2));
    backdate(partial_path(root_, b), std::chrono::hours(24 * 8));
    store_ = std::make_unique<Store>(root_);
    EXPECT_TRUE(fs::exists(partial_path(root_, a))) << "older than a plain temp file's limit, still resumable";
    EXPECT_FALSE(fs::exists(partial_path(root_, b)));
}
