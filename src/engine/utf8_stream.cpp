#include "engine/utf8_stream.h"

namespace specd::engine {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

// Length of the sequence that `lead` starts, or 0 for a byte that cannot start one.
int sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

// Whether `c` may follow `lead` as the second byte (rules out overlongs, surrogates and
// code points above U+10FFFF, per RFC 3629's table).
bool valid_second(unsigned char lead, unsigned char c) {
    switch (lead) {
        case 0xE0: return c >= 0xA0 && c <= 0xBF;
        case 0xED: return c >= 0x80 && c <= 0x9F;
        case 0xF0: return c >= 0x90 && c <= 0xBF;
        case 0xF4: return c >= 0x80 && c <= 0x8F;
        default:   return c >= 0x80 && c <= 0xBF;
    }
}

bool is_continuation(unsigned char c) { return c >= 0x80 && c <= 0xBF; }

// Decodes as much of `in` as possible into `out`. Returns how many trailing bytes form an
// incomplete but valid prefix (left for more input), which are not consumed.
size_t decode(std::string_view in, std::string & out) {
    size_t i = 0;
    while (i < in.size()) {
        const auto lead = static_cast<unsigned char>(in[i]);
        const int  len  = sequence_length(lead);
        if (len == 0) { out += replacement; ++i; continue; }
        if (len == 1) { out += static_cast<char>(lead); ++i; continue; }
        size_t j = 1;
        bool   ok = true;
        for (; j < static_cast<size_t>(len) && i + j < in.size(); ++j) {
            const auto c = static_cast<unsigned char>(in[i + j]);
            if (!(j == 1 ? valid_second(lead, c) : is_continuation(c))) { ok = false; break; }
        }
        if (!ok) { out += replacement; i += j; continue; } // drop the maximal invalid prefix
        if (j < static_cast<size_t>(len)) return in.size() - i; // incomplete: wait for more
        out.append(in.substr(i, len));
        i += len;
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

} // namespace specd::engine
