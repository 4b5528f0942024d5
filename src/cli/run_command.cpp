// `specd run MODEL [PROMPT]`: one answer streamed to the terminal, or an interactive chat.
#include "cli/client.h"
#include "cli/commands.h"
#include "core/settings.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

namespace specd::cli {

namespace {

using json = nlohmann::json;

// Streams one request, printing the text as it comes; returns the answer or nullopt on error.
std::optional<std::string> stream_answer(ApiClient & c, const std::string & path, const json & body, bool chat) {
    std::string answer, error;
    const int status = c.stream(path, body, [&](const json & line) {
        if (!line.is_object()) return true;
        if (line.contains("error")) { error = line["error"].is_string() ? line["error"].get<std::string>() : line.dump(); return false; }
        const std::string piece = chat ? line.value("/message/content"_json_pointer, std::string())
                                       : line.value("response", std::string());
        answer += piece;
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
    });
    if (status == 0) error = "could not connect to the server; start it with `specd serve`";
    if (!error.empty()) {
        std::fprintf(stderr, "\nError: %s\n", error.c_str());
        return std::nullopt;
    }
    std::printf("\n");
    return answer;
}

} // namespace

int cmd_run(const Args & args) {
    if (args.empty()) {
        std::fprintf(stderr, "usage: specd run MODEL [PROMPT]\n");
        return 2;
    }
    const std::string model = args[0];
    std::string       prompt;
    for (size_t i = 1; i < args.size(); ++i) prompt += (i > 1 ? " " : "") + args[i];

    const HostPort hp = configured_host();
    ApiClient      c(hp.host, hp.port);
    if (!c.server_up()) {
        std::fprintf(stderr, "Error: could not connect to the server at %s:%d; start it with `specd serve`\n",
                     hp.host.c_str(), hp.port);
        return 1;
    }
    // Piped input without a prompt is the prompt, as with Ollama.
    if (prompt.empty() && !isatty(STDIN_FILENO)) {
        std::stringstream ss;
        ss << std::cin.rdbuf();
        prompt = ss.str();
    }
    if (!prompt.empty()) {
        return stream_answer(c, "/api/generate", {{"model", model}, {"prompt", prompt}}, false) ? 0 : 1;
    }

    json messages = json::array();
    for (;;) {
        std::printf(">>> ");
        std::fflush(stdout);
        std::string line;
        if (!std::getline(std::cin, line) || line == "/bye") break;
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        auto answer = stream_answer(c, "/api/chat", {{"model", model}, {"messages", messages}}, true);
        if (!answer) { messages.erase(messages.end() - 1); continue; }
        messages.push_back({{"role", "assistant"}, {"content", *answer}});
    }
    return 0;
}

} // namespace specd::cli
