#include "core/utf8.h"

#include <algorithm>

namespace specd {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

bool is_continuation(unsigned char c) { return c >= 0x80 && c <= 0xBF; }

} // namespace

size_t utf8_sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

bool utf8_valid_second(unsigned char lead, unsigned char c) {
    switch (lead) {
        case 0xE0: return c >= 0xA0 && c <= 0xBF;
        case 0xED: return c >= 0x80 && c <= 0x9F;
        case 0xF0: return c >= 0x90 && c <= 0xBF;
        case 0xF4: return c >= 0x80 && c <= 0x8F;
        default:   return is_continuation(c);
    }
}

Utf8Char decode_utf8(std::string_view s) {
    if (s.empty()) return {};
    const auto   lead = static_cast<unsigned char>(s[0]);
    const size_t n    = utf8_sequence_length(lead);
    if (n == 0) return {};
    if (n == 1) return {lead, 1};
    uint32_t cp = lead & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
        if (i == s.size()) return {0, 0, i}; // ends inside the character
        const auto c = static_cast<unsigned char>(s[i]);
        if (i == 1 ? !utf8_valid_second(lead, c) : !is_continuation(c)) return {0, 0, i};
        cp = (cp << 6) | (c & 0x3F);
    }
    return {cp, n};
}

void append_utf8(std::string & out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

namespace {

// Decodes as much of `in` as possible into `out`. Returns how many trailing bytes form an
// incomplete but valid prefix (left for more input), which are not consumed.
size_t decode(std::string_view in, std::string & out) {
    size_t i = 0;
    while (i < in.size()) {
        const Utf8Char c = decode_utf8(in.substr(i));
        if (c.len > 0) {
            out.append(in.substr(i, c.len));
            i += c.len;
        } else if (c.prefix > 0 && c.prefix == in.size() - i) {
            return c.prefix; // incomplete: wait for more
        } else {
            out += replacement; // one for the maximal invalid prefix
            i += std::max<size_t>(c.prefix, 1);
        }
    }
    return 0;
}

} // namespace

std::string Utf8Stream::push(std::string_view bytes) {
    std::string in = pending_;
    in.append(bytes);
    std::string out;
    const size_t keep = decode(in, out);
    pending_ = in.substr(in.size() - keep);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out = pending_.empty() ? "" : std::string(replacement);
    pending_.clear();
    return out;
}

std::string sanitize_utf8(std::string_view bytes) {
    std::string out;
    if (decode(bytes, out) > 0) out += replacement;
    return out;
}

bool Utf8Validator::feed(std::string_view bytes) {
    for (const char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        if (need_ > 0) {
            if (lead_ ? !utf8_valid_second(lead_, c) : !is_continuation(c)) return false;
            --need_;
            lead_ = 0;
            continue;
        }
        const size_t n = utf8_sequence_length(c);
        if (n == 0) return false;
        need_ = uint8_t(n - 1);
        lead_ = n > 1 ? c : 0;
    }
    return true;
}

} // namespace specd
