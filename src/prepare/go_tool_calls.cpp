#include "prepare/go_tool_calls.h"

#include "core/json_input.h"

#include <utility>

namespace specd::prepare {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The end of the JSON object starting at `at` ('{'), strings and escapes skipped; npos when it
// does not close.
size_t object_end(const std::string & text, size_t at) {
    int  depth     = 0;
    bool in_string = false;
    for (size_t i = at; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{') {
            ++depth;
        } else if (c == '}' && --depth == 0) {
            return i + 1;
        }
    }
    return std::string::npos;
}

} // namespace

std::string go_tool_call_tag(std::string_view t) {
    for (const char * range : {"range .ToolCalls", "range $.ToolCalls"}) {
        const size_t r = t.find(range);
        if (r == std::string_view::npos) continue;
        const size_t open = t.rfind("{{", r);
        if (open == std::string_view::npos) continue;
        // The text node before the action: from the previous action's end.
        const size_t prev  = t.rfind("}}", open);
        const size_t start = prev == std::string_view::npos ? 0 : prev + 2;
        std::string_view text = t.substr(start, open - start);
        // A trim marker on the action ("{{- range") trims this text; the tag is what is left.
        const std::string_view tag = trim(text);
        if (!tag.empty()) return std::string(tag);
    }
    return "{";
}

GoToolCallReader::GoToolCallReader(std::string tag, const std::vector<Tool> & tools) : tag_(std::move(tag)) {
    for (const Tool & t : tools) names_.insert(t.name);
}

AnswerPart GoToolCallReader::push(std::string_view text) {
    pending_ += text;
    if (in_calls_) return {};
    // A bare "{" tag opens calls only at the start of the answer (Ollama's JSON-only form).
    const bool   bare = tag_ == "{";
    const size_t at   = bare ? (any_text_ ? std::string::npos : pending_.find_first_not_of(" \t\r\n")) : pending_.find(tag_);
    if (at != std::string::npos && (!bare || pending_[at] == '{')) {
        in_calls_ = true;
        AnswerPart before(pending_.substr(0, at));
        pending_.erase(0, at);
        return before;
    }
    if (bare) {
        if (pending_.find_first_not_of(" \t\r\n") == std::string::npos) return {}; // still undecided
        any_text_ = true;
        return AnswerPart(std::exchange(pending_, std::string()));
    }
    // Hold back the longest end of the text that could begin the tag.
    size_t keep = std::min(pending_.size(), tag_.size() - 1);
    while (keep > 0 && pending_.compare(pending_.size() - keep, keep, tag_, 0, keep) != 0) --keep;
    AnswerPart out(pending_.substr(0, pending_.size() - keep));
    pending_.erase(0, pending_.size() - keep);
    if (!trim(out.content).empty()) any_text_ = true;
    return out;
}

AnswerPart GoToolCallReader::finish() {
    AnswerPart out;
    if (!in_calls_) {
        out.content = std::exchange(pending_, std::string());
        return out;
    }
    for (size_t at = pending_.find(tag_); at != std::string::npos; at = pending_.find(tag_, at)) {
        const size_t open = tag_ == "{" ? at : pending_.find_first_not_of(" \t\r\n", at + tag_.size());
        if (open == std::string::npos || pending_[open] != '{') break;
        const size_t end = object_end(pending_, open);
        if (end == std::string::npos) break;
        const json call = json::parse(pending_.substr(open, end - open), nullptr, /*allow_exceptions=*/false);
        auto       name = call.is_object() ? call.find("name") : call.end();
        if (name == call.end() || !name->is_string() || !names_.count(name->get<std::string>())) break;
        auto args = call.find("arguments");
        if (args == call.end()) args = call.find("parameters");
        out.tool_calls.push_back({name->get<std::string>(), args != call.end() && args->is_object() ? args->dump() : "{}"});
        at = end;
    }
    // Nothing read as a call: the text was the answer after all.
    if (out.tool_calls.empty()) out.content = pending_;
    pending_.clear();
    return out;
}

} // namespace specd::prepare
