#include "cli/answer_stream.h"

#include "cli/client.h"
#include "cli/human_format.h"
#include "cli/interrupt.h"
#include "cli/terminal.h"
#include "cli/word_wrap.h"

#include <cstdio>

namespace specd::cli {

namespace {

using json = nlohmann::json;

constexpr const char * k_dim   = "\033[2m";
constexpr const char * k_reset = "\033[0m";

void out(const std::string & text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

// Prints the pieces of one answer in order: a thinking block, then the content.
class AnswerPrinter {
  public:
    explicit AnswerPrinter(const AnswerDisplay & d)
        : hide_thinking_(d.hide_thinking), color_(stdout_is_terminal()), width_(d.word_wrap ? terminal_width() : 0),
          wrap_(width_) {}

    void thinking(const std::string & text) {
        if (hide_thinking_ || text.empty()) return;
        if (!in_thinking_) {
            in_thinking_ = true;
            out(std::string(color_ ? k_dim : "") + "Thinking...\n");
        }
        out(wrap_.feed(text));
    }

    void content(const std::string & text) {
        if (text.empty()) return;
        close_thinking();
        printed_ = true;
        out(wrap_.feed(text));
    }

    void finish() {
        out(wrap_.flush());
        close_thinking();
        if (printed_) out("\n");
    }

  private:
    void close_thinking() {
        if (!in_thinking_) return;
        in_thinking_ = false;
        out(wrap_.flush());
        out(std::string("\n...done thinking.\n\n") + (color_ ? k_reset : ""));
        wrap_ = WordWrap(width_); // the content starts a new line
    }

    bool     hide_thinking_;
    bool     color_;
    int      width_;
    bool     in_thinking_ = false;
    bool     printed_     = false;
    WordWrap wrap_;
};

std::string rate(uint64_t count, uint64_t ns) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f tokens/s", ns ? count / (ns / 1e9) : 0.0);
    return buf;
}

} // namespace

std::optional<Answer> stream_answer(ApiClient & c, const std::string & path, const json & body,
                                    const AnswerDisplay & display) {
    const bool    chat = path == "/api/chat";
    AnswerPrinter printer(display);
    Answer        answer;
    std::string   error;
    json          done_line;
    const int     status = c.stream(path, body, [&](const json & line) {
        if (!line.is_object()) return true;
        if (line.contains("error")) {
            error = line["error"].is_string() ? line["error"].get<std::string>() : line["error"].dump();
            return false;
        }
        const json &      m        = chat ? line.value("message", json::object()) : line;
        const std::string thinking = m.value("thinking", "");
        const std::string content  = m.value(chat ? "content" : "response", "");
        answer.thinking += thinking;
        answer.content += content;
        printer.thinking(thinking);
        printer.content(content);
        if (line.value("done", false)) done_line = line;
        if (interrupt_pending()) {
            answer.interrupted = true;
            return false;
        }
        return true;
    });
    // Ctrl+C may also end the stream from inside the client (a read cut short by the signal).
    if (answer.interrupted || interrupt_pending()) {
        answer.interrupted = true;
        printer.finish();
        return answer;
    }
    if (status == 0 && error.empty()) error = c.unreachable_message();
    if (error.empty() && status != 200) error = "the server answered HTTP " + std::to_string(status);
    if (!error.empty()) {
        printer.finish();
        fail(error);
        return std::nullopt;
    }
    printer.finish();
    if (display.verbose && done_line.is_object()) {
        std::fflush(stdout);
        std::fputs(answer_stats(done_line).c_str(), stderr);
    }
    return answer;
}

std::string answer_stats(const json & d) {
    auto n = [&](const char * key) { return d.value(key, uint64_t(0)); };
    std::string s;
    auto row = [&](const std::string & name, const std::string & value) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "%-24s%s\n", (name + ":").c_str(), value.c_str());
        s += buf;
    };
    row("total duration", human_nanoseconds(n("total_duration")));
    row("load duration", human_nanoseconds(n("load_duration")));
    row("prompt eval count", std::to_string(n("prompt_eval_count")) + " token(s)");
    row("prompt eval duration", human_nanoseconds(n("prompt_eval_duration")));
    row("prompt eval rate", rate(n("prompt_eval_count"), n("prompt_eval_duration")));
    row("eval count", std::to_string(n("eval_count")) + " token(s)");
    row("eval duration", human_nanoseconds(n("eval_duration")));
    row("eval rate", rate(n("eval_count"), n("eval_duration")));
    // specd's own: what speculation did for this answer (docs/api.md).
    if (const auto it = d.find("speculation"); it != d.end() && it->is_object()) {
        const json & sp       = *it;
        const auto   drafted  = sp.value("drafted", uint64_t(0));
        const auto   accepted = sp.value("accepted", uint64_t(0));
        char         pct[32]  = "";
        if (drafted) std::snprintf(pct, sizeof pct, " (%.1f%%)", 100.0 * accepted / drafted);
        row("draft rounds", std::to_string(sp.value("rounds", uint64_t(0))));
        row("draft tokens", std::to_string(drafted));
        row("draft accepted", std::to_string(accepted) + pct);
        char mean[32];
        std::snprintf(mean, sizeof mean, "%.2f", sp.value("mean_k", 0.0));
        row("draft mean depth", mean);
        // Under a format: tokens the grammar forced, drafts it cut (shown when there were any).
        for (const auto & [key, label] : {std::pair{"forced", "forced tokens"}, std::pair{"forced_accepted", "forced accepted"},
                                          std::pair{"grammar_truncated", "grammar truncated"},
                                          std::pair{"grammar_no_legal_draft", "grammar no legal draft"}}) {
            if (sp.value(key, uint64_t(0)) > 0) row(label, sp[key].dump());
        }
    }
    return s;
}

} // namespace specd::cli
