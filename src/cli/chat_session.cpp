#include "cli/chat_session.h"

#include "cli/client.h"
#include "cli/interrupt.h"
#include "cli/line_reader.h"
#include "cli/multiline_input.h"
#include "cli/show_info.h"
#include "cli/terminal.h"
#include "core/settings.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace specd::cli {

namespace {

using json = nlohmann::json;

void say(const std::string & text) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
}

void usage() {
    say("Available Commands:\n"
        "  /set            Set session variables\n"
        "  /show           Show model information\n"
        "  /load <model>   Load a session or model\n"
        "  /save <model>   Save your current session\n"
        "  /clear          Clear session context\n"
        "  /bye            Exit\n"
        "  /?, /help       Help for a command\n"
        "  /? shortcuts    Help for keyboard shortcuts\n"
        "\n"
        "Use \"\"\" to begin a multi-line message.\n\n");
}

void usage_set() {
    say("Available Commands:\n"
        "  /set parameter ...     Set a parameter\n"
        "  /set system <string>   Set system message\n"
        "  /set history           Enable history\n"
        "  /set nohistory         Disable history\n"
        "  /set wordwrap          Enable wordwrap\n"
        "  /set nowordwrap        Disable wordwrap\n"
        "  /set format json       Enable JSON mode\n"
        "  /set noformat          Disable formatting\n"
        "  /set verbose           Show LLM stats\n"
        "  /set quiet             Disable LLM stats\n"
        "  /set think [level]     Enable thinking (level: low, medium, high)\n"
        "  /set nothink           Disable thinking\n\n");
}

void usage_show() {
    say("Available Commands:\n"
        "  /show info         Show details for this model\n"
        "  /show license      Show model license\n"
        "  /show modelfile    Show Modelfile for this model\n"
        "  /show parameters   Show parameters for this model\n"
        "  /show system       Show system message\n"
        "  /show template     Show prompt template\n\n");
}

void usage_parameters() {
    say("Available Parameters:\n"
        "  /set parameter seed <int>             Random number seed\n"
        "  /set parameter num_predict <int>      Max number of tokens to predict\n"
        "  /set parameter top_k <int>            Pick from top k num of tokens\n"
        "  /set parameter top_p <float>          Pick token based on sum of probabilities\n"
        "  /set parameter min_p <float>          Pick token based on top token probability * min_p\n"
        "  /set parameter num_ctx <int>          Set the context size\n"
        "  /set parameter temperature <float>    Set creativity level\n"
        "  /set parameter repeat_penalty <float> How strongly to penalize repetitions\n"
        "  /set parameter repeat_last_n <int>    Set how far back to look for repetitions\n"
        "  /set parameter draft_num_predict <int> Most tokens drafted per speculation round\n"
        "  /set parameter draft_depth <int>      A fixed speculation depth (0-16) instead of the controller\n"
        "  /set parameter stop <string> <string> ...   Set the stop parameters\n\n");
}

void usage_shortcuts() {
    say("Available keyboard shortcuts:\n"
        "  Ctrl + a            Move to the beginning of the line (Home)\n"
        "  Ctrl + e            Move to the end of the line (End)\n"
        "   Alt + b            Move back (left) one word\n"
        "   Alt + f            Move forward (right) one word\n"
        "  Ctrl + k            Delete the sentence after the cursor\n"
        "  Ctrl + u            Delete the sentence before the cursor\n"
        "  Ctrl + w            Delete the word before the cursor\n"
        "  Ctrl + r            Search the history\n"
        "\n"
        "  Ctrl + l            Clear the screen\n"
        "  Ctrl + c            Stop the model from responding\n"
        "  Ctrl + d            Exit (/bye)\n\n");
}

std::vector<std::string> words(const std::string & line) {
    std::istringstream       in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// The rest of `line` after its first `n` words.
std::string after_words(const std::string & line, size_t n) {
    size_t pos = 0;
    for (size_t i = 0; i < n; ++i) {
        pos = line.find_first_not_of(" \t", pos);
        pos = line.find_first_of(" \t", pos);
        if (pos == std::string::npos) return "";
    }
    pos = line.find_first_not_of(" \t", pos);
    return pos == std::string::npos ? "" : line.substr(pos);
}

std::filesystem::path history_file() {
    if (setting("NOHISTORY")) return {};
    const char * home = std::getenv("HOME");
    if (!home || !*home) return {};
    return std::filesystem::path(home) / ".specd" / "history";
}

class ChatSession {
  public:
    ChatSession(ApiClient & c, SessionSettings s) : c_(c), s_(std::move(s)), reader_(history_file()) {}

    int run() {
        for (;;) {
            std::string line;
            const auto  status = reader_.read(multi_.active() ? "... " : ">>> ", line);
            if (status == LineReader::Status::eof) {
                say("\n");
                return 0;
            }
            if (status == LineReader::Status::interrupted) {
                if (line.empty() && !multi_.active()) say("Use Ctrl + d or /bye to exit.\n");
                multi_.cancel();
                continue;
            }
            std::optional<std::string> text;
            if (multi_.active()) {
                const auto kind = multi_.kind();
                text            = multi_.add(line);
                if (text && kind == MultilineInput::Kind::system) {
                    set_system(*text);
                    continue;
                }
            } else if (line.rfind(R"(""")", 0) == 0) {
                text = multi_.open(MultilineInput::Kind::prompt, std::string_view(line).substr(3));
            } else if (!line.empty() && line[0] == '/') {
                if (!command(line)) return 0;
                continue;
            } else {
                text = line;
            }
            if (text && !text->empty()) send(*text);
        }
    }

  private:
    // Returns false for /bye.
    bool command(const std::string & line) {
        const auto args = words(line);
        const auto & cmd = args[0];
        if (cmd == "/bye" || cmd == "/exit") return false;
        if (cmd == "/set") set(line, args);
        else if (cmd == "/show") show(args);
        else if (cmd == "/load") load(args);
        else if (cmd == "/save") save(args);
        else if (cmd == "/clear") {
            messages_ = json::array();
            say("Cleared session context\n");
        } else if (cmd == "/?" || cmd == "/help") {
            const std::string topic = args.size() > 1 ? args[1] : "";
            if (topic == "set" || topic == "/set") usage_set();
            else if (topic == "show" || topic == "/show") usage_show();
            else if (topic == "shortcut" || topic == "shortcuts") usage_shortcuts();
            else usage();
        } else {
            say("Unknown command '" + cmd + "'. Type /? for help\n");
        }
        return true;
    }

    void set(const std::string & line, const std::vector<std::string> & args) {
        if (args.size() < 2) return usage_set();
        const std::string & what = args[1];
        if (what == "parameter") {
            if (args.size() < 4) return usage_parameters();
            models::Parameters next = s_.params;
            if (args[2] == "stop") next.stop.clear();
            std::string shown;
            for (size_t i = 3; i < args.size(); ++i) {
                if (auto err = next.set(args[2], args[i])) return say("Couldn't set parameter: " + *err + "\n");
                shown += (i > 3 ? ", " : "") + args[i];
                if (args[2] != "stop") break; // one value; stop takes several
            }
            s_.params = std::move(next);
            say("Set parameter '" + args[2] + "' to '" + shown + "'\n");
        } else if (what == "system") {
            const std::string rest = after_words(line, 2);
            if (rest.empty()) return usage_set();
            if (rest.rfind(R"(""")", 0) == 0) {
                if (auto text = multi_.open(MultilineInput::Kind::system, std::string_view(rest).substr(3))) set_system(*text);
                return;
            }
            set_system(rest);
        } else if (what == "history" || what == "nohistory") {
            reader_.set_history(what == "history");
            say("Set '" + what + "' mode.\n");
        } else if (what == "wordwrap" || what == "nowordwrap") {
            s_.display.word_wrap = what == "wordwrap";
            say("Set '" + what + "' mode.\n");
        } else if (what == "verbose" || what == "quiet") {
            s_.display.verbose = what == "verbose";
            say("Set '" + what + "' mode.\n");
        } else if (what == "think") {
            const std::string level = args.size() > 2 ? args[2] : "";
            if (!level.empty() && level != "low" && level != "medium" && level != "high") {
                return say("Invalid think level '" + level + "': use low, medium or high\n");
            }
            s_.think = level.empty() ? json(true) : json(level);
            say(level.empty() ? "Set 'think' mode.\n" : "Set 'think' mode to '" + level + "'.\n");
        } else if (what == "nothink") {
            s_.think = false;
            say("Set 'nothink' mode.\n");
        } else if (what == "format") {
            const std::string rest   = after_words(line, 2);
            const json        schema = json::parse(rest, nullptr, false);
            if (rest == "json") s_.format = "json";
            else if (schema.is_object()) s_.format = schema;
            else return say("Invalid or missing format. For 'json' mode use '/set format json'\n");
            say("Set format to '" + (rest == "json" ? rest : std::string("schema")) + "' mode.\n");
        } else if (what == "noformat") {
            s_.format = nullptr;
            say("Disabled format.\n");
        } else {
            say("Unknown command '/set " + what + "'. Type /? for help\n");
        }
    }

    void set_system(const std::string & text) {
        s_.system = text;
        say("Set system message.\n");
    }

    void show(const std::vector<std::string> & args) {
        if (args.size() < 2) return usage_show();
        const std::string & what = args[1];
        std::string         body;
        const int           status = c_.request("POST", "/api/show", {{"model", s_.model}}, body);
        if (status != 200) return (void) fail(error_message(body, status));
        const json s = json::parse(body);
        auto or_else = [&](const std::string & key, const std::string & none) {
            const std::string v = s.value(key, "");
            say((v.empty() ? none : v) + "\n");
        };
        if (what == "info") say(show_info_text(s, false));
        else if (what == "license") or_else("license", "No license was specified for this model.");
        else if (what == "modelfile") say(s.value("modelfile", "") + "\n");
        else if (what == "template") or_else("template", "No prompt template was specified for this model.");
        else if (what == "system") {
            if (s_.system) say(*s_.system + "\n\n");
            else or_else("system", "No system message was specified for this model.");
        } else if (what == "parameters") {
            const std::string model_params = s.value("parameters", "");
            std::string       out          = "Model defined parameters:\n";
            if (model_params.empty()) out += "  No additional parameters were specified for this model.\n";
            std::istringstream in(model_params);
            for (std::string l; std::getline(in, l);) out += "  " + l + "\n";
            if (!s_.params.empty()) {
                out += "\nUser defined parameters:\n";
                std::istringstream user(models::to_show_text(s_.params));
                for (std::string l; std::getline(user, l);) out += "  " + l + "\n";
            }
            say(out + "\n");
        } else {
            say("Unknown command '/show " + what + "'. Type /? for help\n");
        }
    }

    void load(const std::vector<std::string> & args) {
        if (args.size() != 2) return say("Usage:\n  /load <modelname>\n");
        say("Loading model '" + args[1] + "'\n");
        std::string body;
        int status = c_.request("POST", "/api/show", {{"model", args[1]}}, body);
        if (status == 404) return say("Couldn't find model '" + args[1] + "'\n");
        if (status == 200) status = load_model(args[1], body);
        if (status != 200) return (void) fail(error_message(body, status));
        s_.model  = args[1];
        messages_ = json::array();
    }

    // Ollama's /save: a new model from this one with the session's system message,
    // parameters and messages.
    void save(const std::vector<std::string> & args) {
        if (args.size() != 2) return say("Usage:\n  /save <modelname>\n");
        json body = {{"model", args[1]}, {"from", s_.model}, {"stream", false}};
        if (s_.system) body["system"] = *s_.system;
        if (!s_.params.empty()) body["parameters"] = models::to_json(s_.params);
        if (!messages_.empty()) body["messages"] = messages_;
        std::string out;
        const int   status = c_.request("POST", "/api/create", body, out);
        if (status != 200) return say("error: " + error_message(out, status) + "\n");
        say("Created new model '" + args[1] + "'\n");
    }

    int load_model(const std::string & model, std::string & body) {
        json req = {{"model", model}, {"stream", false}};
        if (!s_.keep_alive.is_null()) req["keep_alive"] = s_.keep_alive;
        return c_.request("POST", "/api/generate", req, body);
    }

    void send(const std::string & text) {
        messages_.push_back({{"role", "user"}, {"content", text}});
        json body        = request_body(s_);
        json & messages  = body["messages"] = json::array();
        if (s_.system) messages.push_back({{"role", "system"}, {"content", *s_.system}});
        for (const auto & m : messages_) messages.push_back(m);
        const auto answer = stream_answer(c_, "/api/chat", body, s_.display);
        if (!answer || (answer->interrupted && answer->content.empty())) {
            messages_.erase(messages_.end() - 1); // nothing was answered: the question is not kept
            return;
        }
        json reply = {{"role", "assistant"}, {"content", answer->content}};
        if (!answer->thinking.empty()) reply["thinking"] = answer->thinking;
        messages_.push_back(std::move(reply));
    }

    ApiClient &     c_;
    SessionSettings s_;
    LineReader      reader_;
    MultilineInput  multi_;
    json            messages_ = json::array(); // the conversation, without the system message
    InterruptGuard  interrupts_;
};

} // namespace

int run_interactive(ApiClient & c, SessionSettings settings) {
    // The model is loaded before the first prompt, so a model that cannot load fails here.
    json        req = {{"model", settings.model}, {"stream", false}};
    std::string body;
    if (!settings.keep_alive.is_null()) req["keep_alive"] = settings.keep_alive;
    const int status = c.request("POST", "/api/generate", req, body);
    if (status != 200) return fail(error_message(body, status));
    ChatSession session(c, std::move(settings));
    return session.run();
}

} // namespace specd::cli
