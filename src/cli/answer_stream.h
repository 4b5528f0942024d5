#pragma once
// One answer of /api/generate or /api/chat streamed to the terminal as Ollama's CLI shows it:
// the thinking first ("Thinking..." ... "...done thinking.", dimmed on a terminal, or hidden),
// then the content, word-wrapped on a terminal; with verbose, the timings and specd's
// speculation counters on stderr after it.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace specd::cli {

class ApiClient;

struct AnswerDisplay {
    bool hide_thinking = false;
    bool word_wrap     = true;
    bool verbose       = false;
};

struct Answer {
    std::string content;
    std::string thinking;
    bool        interrupted = false; // Ctrl+C stopped it (interrupt.h)
};

// Streams `body` to `path` ("/api/generate" or "/api/chat"). On an error prints it (one line
// on stderr) and returns nullopt.
std::optional<Answer> stream_answer(ApiClient & c, const std::string & path, const nlohmann::json & body,
                                    const AnswerDisplay & display);

// The statistics of an answer's last line, as `--verbose` prints them.
std::string answer_stats(const nlohmann::json & done_line);

} // namespace specd::cli
