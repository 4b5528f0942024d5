// `specd run MODEL [PROMPT]`: one answer streamed to the terminal, or the interactive mode
// (chat_session) on a terminal without a prompt. A model that is not there is pulled first,
// through the server's /api/pull, as Ollama does.
#include "cli/chat_session.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/terminal.h"
#include "core/settings.h"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace specd::cli {

namespace {

using json = nlohmann::json;

// --format: "json" or a JSON schema object (the server checks the schema).
json parse_format(const std::string & text) {
    if (text.empty()) return nullptr;
    if (text == "json") return "json";
    json schema = json::parse(text, nullptr, false);
    if (!schema.is_object()) throw std::invalid_argument("invalid format \"" + text + "\"; expected \"json\" or a JSON schema object");
    return schema;
}

// --think, --think=false, --think=high.
json parse_think(const std::optional<std::string> & text) {
    if (!text) return nullptr;
    if (text->empty() || *text == "true") return true;
    if (*text == "false") return false;
    if (*text == "low" || *text == "medium" || *text == "high") return *text;
    throw std::invalid_argument("invalid value for --think: \"" + *text + "\" (true, false, low, medium or high)");
}

// --keepalive: a duration ("5m", "1h30m"), or a number of seconds (-1: forever, 0: unload).
json parse_keep_alive(const std::optional<std::string> & text) {
    if (!text) return nullptr;
    size_t used = 0;
    try {
        const long long seconds = std::stoll(*text, &used);
        if (used == text->size()) return seconds;
    } catch (const std::exception &) {
        // not a plain number: a duration string, which the server reads
    }
    return *text;
}

// Pulls the model when the server does not have it; returns an error message or "".
std::string ensure_model(ApiClient & c, const std::string & model, bool insecure) {
    std::string body;
    const int   status = c.request("POST", "/api/show", {{"model", model}}, body);
    if (status == 200) return "";
    if (status != 404) return error_message(body, status);
    ProgressPrinter printer;
    return stream_progress(c, "/api/pull", {{"model", model}, {"insecure", insecure}}, printer);
}

std::string read_stdin() {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
}

} // namespace

json request_body(const SessionSettings & s) {
    json body = {{"model", s.model}, {"stream", true}};
    if (!s.params.empty()) body["options"] = models::to_json(s.params);
    if (!s.format.is_null()) body["format"] = s.format;
    if (!s.think.is_null()) body["think"] = s.think;
    if (!s.keep_alive.is_null()) body["keep_alive"] = s.keep_alive;
    return body;
}

int cmd_run(const RunOptions & o) {
    SessionSettings s;
    s.model                 = o.model;
    s.display.verbose       = o.verbose;
    s.display.hide_thinking = o.hide_thinking;
    s.display.word_wrap     = o.word_wrap;
    try {
        s.format     = parse_format(o.format);
        s.think      = parse_think(o.think);
        s.keep_alive = parse_keep_alive(o.keep_alive);
    } catch (const std::exception & e) {
        return fail(e.what());
    }
    std::string prompt;
    for (const auto & word : o.prompt) prompt += (prompt.empty() ? "" : " ") + word;
    // Piped input comes before the prompt's words, as with Ollama (`cat file | run m "sum up"`).
    const bool interactive = prompt.empty() && isatty(STDIN_FILENO);
    if (!isatty(STDIN_FILENO)) {
        const std::string piped = read_stdin();
        if (!piped.empty()) prompt = prompt.empty() ? piped : piped + " " + prompt;
    }

    std::optional<HostPort> host;
    try {
        if (o.host) host = parse_host(*o.host);
    } catch (const std::invalid_argument & e) {
        return fail(e.what());
    }
    ApiClient c = host ? ApiClient(host->host, host->port) : ApiClient::configured();
    if (!c.server_up()) return fail(c.unreachable_message());
    if (auto err = ensure_model(c, o.model, o.insecure); !err.empty()) return fail(err);
    if (interactive) return run_interactive(c, std::move(s));

    json body      = request_body(s);
    body["prompt"] = prompt;
    const auto answer = stream_answer(c, "/api/generate", body, s.display);
    return answer ? 0 : 1;
}

} // namespace specd::cli
