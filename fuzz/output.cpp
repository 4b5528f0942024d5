// Model output on its way to the client: arbitrary token bytes, split at arbitrary points,
// through the engine's Utf8Stream and StopMatcher (in the order Session::Generation chains
// them), then through the functions the server writes NDJSON with. Asserts:
//  - Utf8Stream's text is valid UTF-8 and equals sanitize_utf8 of all the bytes at once;
//  - the text emitted ends right before the first stop string, as found on the text so far
//    at each piece (a stop completed by a later piece cannot win over one completed earlier);
//    with UTF-8 stop strings (what a request's JSON can hold) every emitted piece is itself
//    valid UTF-8;
//  - every NDJSON line (text chunks, the final object, an error) is one line of valid UTF-8
//    and valid JSON, and gives back the text when the text was valid UTF-8.
// Input layout (FuzzedDataProvider): flags and stop count from the end, then the stop strings,
// the model name and the pieces from the front.
#include "api/ollama_response.h"
#include "core/utf8.h"
#include "engine/stop_matcher.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

using namespace specd;

namespace {

void check(bool ok, const char * what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz-output: %s\n", what);
        __builtin_trap();
    }
}

// RFC 3629's well-formed byte sequences, written out apart from engine/utf8_stream.
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t        n  = 0;
        unsigned char lo = 0x80, hi = 0xBF; // range of the second byte
        if (c >= 0xC2 && c <= 0xDF) n = 1;
        else if (c == 0xE0) n = 2, lo = 0xA0;
        else if (c == 0xED) n = 2, hi = 0x9F;
        else if (c >= 0xE1 && c <= 0xEF) n = 2;
        else if (c == 0xF0) n = 3, lo = 0x90;
        else if (c == 0xF4) n = 3, hi = 0x8F;
        else if (c >= 0xF1 && c <= 0xF3) n = 3;
        else return false;
        if (i + n >= s.size()) return false;
        for (size_t k = 1; k <= n; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return false;
        }
        i += n + 1;
    }
    return true;
}

// One NDJSON line as the server writes it: one line, valid UTF-8, valid JSON. Its `field`
// (message.content in a chat) gives back `text` when that was valid UTF-8 (else it was
// replaced).
void check_line(const std::string & line, const std::string & text, const char * field, bool chat) {
    check(valid_utf8(line), "an NDJSON line is not valid UTF-8");
    check(!line.empty() && line.find('\n') == line.size() - 1, "an NDJSON line is not exactly one line");
    check(json::accept(line), "an NDJSON line is not valid JSON");
    if (!valid_utf8(text)) return;
    const auto j   = json::parse(line);
    const auto got = chat ? j["message"]["content"] : j[field];
    check(got.is_string() && got.get<std::string>() == text, "an NDJSON line does not give back its text");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    FuzzedDataProvider in(data, size);
    const bool chat       = in.ConsumeBool();
    const bool utf8_stops = in.ConsumeBool();
    const int  n_stops    = in.ConsumeIntegralInRange(0, 3);

    std::vector<std::string> stops;
    for (int i = 0; i < n_stops; ++i) {
        std::string s = in.ConsumeRandomLengthString(8);
        stops.push_back(utf8_stops ? sanitize_utf8(s) : s);
    }
    const std::string        model = in.ConsumeRandomLengthString(16);
    std::vector<std::string> pieces;
    std::string              all;
    while (in.remaining_bytes() > 0) {
        pieces.push_back(in.ConsumeRandomLengthString(12));
        all += pieces.back();
    }

    // Utf8Stream alone: split or not, the same text.
    {
        Utf8Stream utf8;
        std::string        text;
        for (const auto & p : pieces) text += utf8.push(p);
        text += utf8.flush();
        check(valid_utf8(text), "Utf8Stream gave invalid UTF-8");
        check(text == sanitize_utf8(all), "Utf8Stream differs from sanitize_utf8 on the whole");
    }

    // Utf8Stream then StopMatcher, as Session::Generation::commit() and finish() chain them.
    Utf8Stream  utf8;
    engine::StopMatcher matcher(stops);
    std::string         decoded;  // Utf8Stream's output so far
    std::string         emitted;  // what the client got
    std::string         expected; // where the first stop string cuts `decoded`, once one did
    bool                stopped = false, expect_stop = false;
    auto emit = [&](const std::string & text) {
        if (text.empty()) return;
        if (utf8_stops) check(valid_utf8(text), "an emitted piece is not valid UTF-8 (UTF-8 stop strings)");
        check_line(api::ndjson_line(api::text_chunk(model, text, chat)), text, "response", chat);
        emitted += text;
    };
    // The oracle: after each piece, the earliest stop string in all of the text so far.
    auto first_stop = [&] {
        size_t cut = std::string::npos;
        for (const auto & s : stops) {
            if (!s.empty()) cut = std::min(cut, decoded.find(s));
        }
        if (cut != std::string::npos && !expect_stop) {
            expect_stop = true;
            expected    = decoded.substr(0, cut);
        }
    };
    for (const auto & p : pieces) {
        const std::string text = utf8.push(p);
        decoded += text;
        first_stop();
        const auto r = matcher.push(text);
        emit(r.text);
        if (r.stopped) {
            stopped = true;
            break;
        }
    }
    if (!stopped) {
        const std::string text = utf8.flush();
        decoded += text;
        first_stop();
        const auto r = matcher.push(text);
        stopped      = r.stopped;
        emit(r.text + (r.stopped ? "" : matcher.flush()));
    }
    check(stopped == expect_stop, "the stop matcher and the oracle disagree on whether to stop");
    check(emitted == (expect_stop ? expected : decoded), "the emitted text is not the text before the first stop");

    // The other lines a generation writes: the final object (its full text when not streamed)
    // and an error whose message quotes raw bytes.
    check_line(api::ndjson_line(api::final_chunk(model, scheduler::DoneInfo{}, chat, emitted)), emitted, "response", chat);
    check_line(api::ndjson_line(api::error_body(all)), sanitize_utf8(all), "error", false);
    check_line(api::serialise(api::text_chunk(model, all, chat)) + "\n", all, "response", chat);
    return 0;
}
