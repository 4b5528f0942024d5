#include "core/utf8.h"

namespace specd {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

bool is_continuation(unsigned char c) { return c >= 0x80 && c <= 0xBF; }

// Decodes as much of `in` as possible into `out`. Returns how many trailing bytes form an
// incomplete but valid prefix (left for more input), which are not consumed.
size_t decode(std::string_view in, std::string & out) {
    size_t i = 0;
    while (i < in.size()) {
        const auto lead = static_cast<unsigned char>(in[i]);
        const int  len  = int(utf8_sequence_length(lead));
        if (len == 0) { out += replacement; ++i; continue; }
        if (len == 1) { out += static_cast<char>(lead); ++i; continue; }
        size_t j = 1;
        bool   ok = true;
        for (; j < static_cast<size_t>(len) && i + j < in.size(); ++j) {
            const auto c = static_cast<unsigned char>(in[i + j]);
            if (!(j == 1 ? utf8_valid_second(lead, c) : is_continuation(c))) { ok = false; break; }
        }
        if (!ok) { out += replacement; i += j; continue; } // drop the maximal invalid prefix
        if (j < static_cast<size_t>(len)) return in.size() - i; // incomplete: wait for more
        out.append(in.substr(i, len));
        i += len;
    }
    return 0;
}

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
    if (n == 0 || s.size() < n) return {};
    if (n == 1) return {lead, 1};
    uint32_t cp = lead & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (i == 1 ? !utf8_valid_second(lead, c) : !is_continuation(c)) return {};
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
