#include "core/base64.h"

#include <array>

namespace specd {

namespace {

constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Per byte: its 6-bit value for alphabet characters, else one of these.
constexpr int8_t k_invalid = -1;
constexpr int8_t k_pad     = -2;
constexpr int8_t k_skip    = -3; // CR, LF

constexpr std::array<int8_t, 256> make_values() {
    std::array<int8_t, 256> v{};
    v.fill(k_invalid);
    for (int i = 0; i < 64; ++i) {
        v[uint8_t(k_alphabet[i])] = int8_t(i);
    }
    v['=']  = k_pad;
    v['\r'] = k_skip;
    v['\n'] = k_skip;
    return v;
}

constexpr std::array<int8_t, 256> k_values = make_values();

} // namespace

size_t base64_decoded_size(std::string_view text) {
    size_t n_chars = 0;
    for (char c : text) {
        n_chars += k_values[uint8_t(c)] >= 0;
    }
    return n_chars / 4 * 3 + (n_chars % 4) * 3 / 4;
}

std::optional<std::vector<uint8_t>> decode_base64(std::string_view text) {
    std::vector<uint8_t> out;
    out.reserve(base64_decoded_size(text));
    uint32_t bits    = 0; // the undecoded low bits, n_bits of them (< 8)
    int      n_bits  = 0;
    size_t   n_chars = 0;
    size_t   n_pad   = 0;
    for (char c : text) {
        const int8_t v = k_values[uint8_t(c)];
        if (v == k_skip) {
            continue;
        }
        if (v == k_pad) {
            ++n_pad;
            continue;
        }
        if (v == k_invalid || n_pad > 0) {
            return std::nullopt;
        }
        bits = (bits << 6) | uint32_t(v);
        n_bits += 6;
        ++n_chars;
        if (n_bits >= 8) {
            n_bits -= 8;
            out.push_back(uint8_t(bits >> n_bits));
            bits &= (1u << n_bits) - 1;
        }
    }
    const size_t rem = n_chars % 4;
    if (rem == 1) {
        return std::nullopt;
    }
    // Padding, when present, completes the last group of four: "xx==" or "xxx=".
    if (n_pad > 0 && (rem == 0 || n_pad != 4 - rem)) {
        return std::nullopt;
    }
    return out;
}

std::string encode_base64(std::span<const uint8_t> bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t group = (uint32_t(bytes[i]) << 16) | (uint32_t(bytes[i + 1]) << 8) | bytes[i + 2];
        out += k_alphabet[group >> 18];
        out += k_alphabet[(group >> 12) & 63];
        out += k_alphabet[(group >> 6) & 63];
        out += k_alphabet[group & 63];
    }
    const size_t rem = bytes.size() - i;
    if (rem > 0) {
        const uint32_t group = (uint32_t(bytes[i]) << 16) | (rem == 2 ? uint32_t(bytes[i + 1]) << 8 : 0);
        out += k_alphabet[group >> 18];
        out += k_alphabet[(group >> 12) & 63];
        out += rem == 2 ? k_alphabet[(group >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

} // namespace specd
