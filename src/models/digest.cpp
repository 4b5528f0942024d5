#include "models/digest.h"

#include <cstring>

namespace specd::models {

bool is_valid_digest(std::string_view digest) {
    // Exactly ^sha256[:-][0-9a-fA-F]{64}$ (Ollama's check), written out by hand: std::regex
    // costs more than the check itself, and the tests compare the two on every case.
    if (digest.size() != 71 || !digest.starts_with("sha256") || (digest[6] != ':' && digest[6] != '-')) {
        return false;
    }
    for (char c : digest.substr(7)) {
        const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (!hex) {
            return false;
        }
    }
    return true;
}

std::optional<std::string> normalize_digest(std::string_view digest) {
    if (!is_valid_digest(digest)) {
        return std::nullopt;
    }
    std::string out = "sha256:";
    for (char c : digest.substr(7)) {
        out += (c >= 'A' && c <= 'F') ? char(c - 'A' + 'a') : c;
    }
    return out;
}

std::optional<std::string> blob_filename(std::string_view digest) {
    auto normal = normalize_digest(digest);
    if (!normal) {
        return std::nullopt;
    }
    (*normal)[6] = '-';
    return normal;
}

namespace {

constexpr std::array<uint32_t, 64> k_round = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr std::array<uint32_t, 8> k_initial = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

} // namespace

Sha256::Sha256() { reset(); }

void Sha256::reset() {
    state_      = k_initial;
    buffer_len_ = 0;
    total_len_  = 0;
}

void Sha256::compress(const uint8_t * block) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
        w[i] = (uint32_t(block[4 * i]) << 24) | (uint32_t(block[4 * i + 1]) << 16) |
               (uint32_t(block[4 * i + 2]) << 8) | uint32_t(block[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
        const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i]              = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
    for (int i = 0; i < 64; ++i) {
        const uint32_t s1  = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        const uint32_t ch  = (e & f) ^ (~e & g);
        const uint32_t t1  = h + s1 + ch + k_round[i] + w[i];
        const uint32_t s0  = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        const uint32_t t2  = s0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
}

void Sha256::update(const void * data, size_t size) {
    auto * p = static_cast<const uint8_t *>(data);
    total_len_ += size;
    if (buffer_len_ > 0) {
        const size_t take = std::min(size, buffer_.size() - buffer_len_);
        std::memcpy(buffer_.data() + buffer_len_, p, take);
        buffer_len_ += take;
        p += take;
        size -= take;
        if (buffer_len_ < buffer_.size()) {
            return;
        }
        compress(buffer_.data());
        buffer_len_ = 0;
    }
    for (; size >= 64; p += 64, size -= 64) {
        compress(p);
    }
    if (size > 0) {
        std::memcpy(buffer_.data(), p, size);
        buffer_len_ = size;
    }
}

std::array<uint8_t, 32> Sha256::finish() {
    const uint64_t bit_len = total_len_ * 8;
    // Padding: 0x80, zeros up to 56 mod 64, then the message length in bits, big-endian.
    uint8_t pad[72] = {0x80};
    const size_t pad_len = (buffer_len_ < 56 ? 56 : 120) - buffer_len_;
    for (int i = 0; i < 8; ++i) {
        pad[pad_len + i] = uint8_t(bit_len >> (56 - 8 * i));
    }
    const uint64_t saved_total = total_len_;
    update(pad, pad_len + 8);
    total_len_ = saved_total;

    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i) {
        out[4 * i]     = uint8_t(state_[i] >> 24);
        out[4 * i + 1] = uint8_t(state_[i] >> 16);
        out[4 * i + 2] = uint8_t(state_[i] >> 8);
        out[4 * i + 3] = uint8_t(state_[i]);
    }
    return out;
}

std::string Sha256::finish_digest() {
    const auto hash = finish();
    return "sha256:" + to_hex(hash.data(), hash.size());
}

std::string to_hex(const uint8_t * data, size_t size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(size * 2, '\0');
    for (size_t i = 0; i < size; ++i) {
        out[2 * i]     = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 0xf];
    }
    return out;
}

std::string sha256_digest(std::string_view bytes) {
    Sha256 h;
    h.update(bytes);
    return h.finish_digest();
}

} // namespace specd::models
