#include "models/modelfile.h"

#include <algorithm>
#include <tuple>

namespace specd::models {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string lowercase(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; });
    return out;
}

std::string_view trim_start(std::string_view s) {
    while (!s.empty() && is_space(s.front())) {
        s.remove_prefix(1);
    }
    return s;
}

std::string_view trim(std::string_view s) {
    s = trim_start(s);
    while (!s.empty() && is_space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    for (size_t start = 0; start <= text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        std::string_view line = text.substr(start, end - start);
        // CRLF files from Windows editors; every CR before the LF, so that no value ever holds
        // "\r\n", which no quoting could write back (CR CR LF comes from converting twice).
        while (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

// Reads a value that starts at `first` (the rest of line `*index`, after the instruction).
// Quoted values may continue over the following lines: like Ollama, a quoted value ends at
// the first line end where the text so far, trimmed, ends with its closing quote.
// Advances *index to the value's last line. Returns nullopt when a quote never closes.
std::optional<std::string> read_value(const std::vector<std::string_view> & lines, size_t * index,
                                      std::string_view first) {
    first = trim_start(first);
    std::string_view quote;
    if (first.substr(0, 3) == "\"\"\"") {
        quote = "\"\"\"";
    } else if (first.substr(0, 1) == "\"") {
        quote = "\"";
    } else {
        return std::string(trim(first));
    }
    // Blanks at the end of the first line stay (the callers pass them on), as on every other
    // line of a quoted value: dropping them could put "\r\n" into the value, which no quoting
    // can write back.
    std::string buffer(first);
    for (;;) {
        const std::string_view trimmed = trim(buffer);
        if (trimmed.size() >= 2 * quote.size() && trimmed.ends_with(quote)) {
            return std::string(trimmed.substr(quote.size(), trimmed.size() - 2 * quote.size()));
        }
        if (*index + 1 >= lines.size()) {
            return std::nullopt;
        }
        ++*index;
        buffer += '\n';
        buffer += lines[*index];
    }
}

// Splits "word rest" where word matches `allowed`; word is empty when the text does not start
// with such a word followed by whitespace or the end.
std::pair<std::string_view, std::string_view> split_word(std::string_view text, bool (*allowed)(char)) {
    size_t n = 0;
    while (n < text.size() && allowed(text[n])) {
        ++n;
    }
    if (n < text.size() && !is_space(text[n])) {
        return {{}, text};
    }
    return {text.substr(0, n), text.substr(n)};
}

bool is_param_char(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

} // namespace

ModelfileError::ModelfileError(int line, const std::string & reason)
    : std::runtime_error(line > 0 ? "line " + std::to_string(line) + ": " + reason : reason),
      line_(line),
      reason_(reason) {}

Modelfile parse_modelfile(std::string_view text) {
    if (text.starts_with("\xEF\xBB\xBF")) {
        text.remove_prefix(3); // UTF-8 byte order mark
    }
    const auto lines = split_lines(text);
    Modelfile  mf;

    for (size_t i = 0; i < lines.size(); ++i) {
        const int              line_no = int(i) + 1;
        // Trailing blanks stay on `line`: they may belong to a quoted value (read_value).
        const std::string_view line    = trim_start(lines[i]);
        if (trim(line).empty() || line.front() == '#') {
            continue;
        }
        // Not a structured binding: the lambdas below capture `word`, which clang before 16
        // does not allow for bindings (the fuzz preset builds with clang 14).
        std::string_view word, rest;
        std::tie(word, rest) = split_word(line, is_alpha);
        if (word.empty()) {
            throw ModelfileError(line_no, "expected an instruction, got '" + std::string(line.substr(0, 20)) + "'");
        }
        const std::string instruction = lowercase(word);
        auto              upper       = [&] {
            std::string u(word);
            std::transform(u.begin(), u.end(), u.begin(),
                           [](char c) { return (c >= 'a' && c <= 'z') ? char(c - 'a' + 'A') : c; });
            return u;
        };
        auto value = [&](std::string_view from) {
            auto v = read_value(lines, &i, from);
            if (!v) {
                throw ModelfileError(line_no, "unterminated quoted value for " + upper());
            }
            return std::move(*v);
        };
        auto non_empty_value = [&](std::string_view from) {
            std::string v = value(from);
            if (trim(v).empty()) {
                throw ModelfileError(line_no, upper() + " needs a value");
            }
            return v;
        };

        if (instruction == "from") {
            mf.from.push_back(non_empty_value(rest));
        } else if (instruction == "draft") {
            if (mf.draft) {
                throw ModelfileError(line_no, "only one DRAFT is allowed");
            }
            mf.draft = non_empty_value(rest);
        } else if (instruction == "adapter") {
            mf.adapters.push_back(non_empty_value(rest));
        } else if (instruction == "system") {
            mf.system = value(rest);
        } else if (instruction == "template") {
            mf.template_text = value(rest);
        } else if (instruction == "license") {
            mf.licenses.push_back(value(rest));
        } else if (instruction == "parameter") {
            auto [name, param_rest] = split_word(trim_start(rest), is_param_char);
            if (name.empty()) {
                throw ModelfileError(line_no, "PARAMETER needs a name and a value");
            }
            const std::string param = lowercase(name);
            if (!is_known_parameter(param)) {
                throw ModelfileError(line_no, "unknown parameter: " + std::string(name));
            }
            const std::string v = value(param_rest);
            if (v.empty() && param != "stop") {
                throw ModelfileError(line_no, "PARAMETER " + param + " needs a value");
            }
            if (auto err = mf.params.set(param, v)) {
                throw ModelfileError(line_no, *err);
            }
        } else if (instruction == "renderer") {
            mf.renderer = non_empty_value(rest);
        } else if (instruction == "parser") {
            mf.parser = non_empty_value(rest);
        } else if (instruction == "requires") {
            mf.requires_version = non_empty_value(rest);
        } else if (instruction == "message") {
            auto [role, content] = split_word(trim_start(rest), is_alpha);
            const std::string r  = lowercase(role);
            if (r != "system" && r != "user" && r != "assistant") {
                throw ModelfileError(line_no, "MESSAGE role must be one of \"system\", \"user\", or \"assistant\"");
            }
            mf.messages.push_back({r, value(content)});
        } else {
            throw ModelfileError(line_no, "unknown instruction: " + upper() +
                                              " (expected FROM, PARAMETER, SYSTEM, TEMPLATE, DRAFT, "
                                              "LICENSE, MESSAGE, ADAPTER, RENDERER, PARSER or REQUIRES)");
        }
    }
    if (mf.from.empty()) {
        throw ModelfileError(0, "no FROM line");
    }
    return mf;
}

std::string quote_modelfile_value(std::string_view value) {
    // Try each form and keep the first that reads back exactly: the rules for where a quoted
    // value ends are simple to apply and awkward to invert.
    auto reads_back = [&](const std::string & candidate) {
        const auto lines = split_lines(candidate);
        size_t     index = 0;
        auto       v     = read_value(lines, &index, lines[0]);
        return v && *v == value && index + 1 == lines.size();
    };
    std::string bare(value);
    if (!value.empty() && !value.starts_with('"') && reads_back(bare)) {
        return bare;
    }
    for (std::string_view q : {"\"", "\"\"\""}) {
        std::string quoted = std::string(q) + std::string(value) + std::string(q);
        if (reads_back(quoted)) {
            return quoted;
        }
    }
    throw std::invalid_argument("text cannot be written as a Modelfile value");
}

std::string format_modelfile(const Modelfile & mf) {
    std::string out;
    auto        line = [&](std::string_view instruction, std::string_view value) {
        out += std::string(instruction) + " " + quote_modelfile_value(value) + "\n";
    };
    for (const auto & f : mf.from) {
        line("FROM", f);
    }
    if (mf.draft) {
        line("DRAFT", *mf.draft);
    }
    for (const auto & a : mf.adapters) {
        line("ADAPTER", a);
    }
    const nlohmann::json params = to_json(mf.params);
    for (const auto & [key, v] : params.items()) {
        if (key == "stop") {
            for (const auto & s : mf.params.stop) {
                line("PARAMETER stop", s);
            }
        } else {
            line("PARAMETER " + key, v.dump());
        }
    }
    if (mf.template_text) {
        line("TEMPLATE", *mf.template_text);
    }
    if (mf.system) {
        line("SYSTEM", *mf.system);
    }
    for (const auto & l : mf.licenses) {
        line("LICENSE", l);
    }
    for (const auto & m : mf.messages) {
        line("MESSAGE " + m.role, m.content);
    }
    if (mf.renderer) line("RENDERER", *mf.renderer);
    if (mf.parser) line("PARSER", *mf.parser);
    if (mf.requires_version) line("REQUIRES", *mf.requires_version);
    return out;
}

} // namespace specd::models
