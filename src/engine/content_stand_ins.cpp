#include "engine/content_stand_ins.h"

#include <algorithm>

namespace specd::engine {

namespace {

// What a template can test at either end of a content (a tag such as <tool_response>).
constexpr size_t k_kept_ends = 256;

// Control characters no chat text carries in this order; a content that holds the prefix
// is left as it is.
constexpr std::string_view k_marker = "\x1f\x1especd-stand-in-";

} // namespace

ContentStandIns::ContentStandIns(const std::vector<Message> & messages) {
    const auto long_content = [](const Message & m) { return m.role != "assistant" && m.content.size() >= k_min_bytes; };
    if (std::none_of(messages.begin(), messages.end(), long_content)) return;
    for (const auto & m : messages) {
        if (m.content.find(k_marker) != std::string::npos) return;
    }
    shortened_.reserve(messages.size());
    for (const auto & m : messages) {
        if (!long_content(m)) {
            shortened_.push_back(m);
            continue;
        }
        std::string stand_in = m.content.substr(0, k_kept_ends);
        stand_in += k_marker;
        stand_in += std::to_string(swaps_.size());
        stand_in += "\x1e\x1f";
        stand_in += m.content.substr(m.content.size() - k_kept_ends);
        Message shortened = m;
        shortened.content = stand_in;
        shortened_.push_back(std::move(shortened));
        swaps_.emplace_back(std::move(stand_in), m.content);
    }
}

std::optional<std::string> ContentStandIns::restore(const std::string & rendered) const {
    // Where each stand-in is, in the order they appear.
    std::vector<std::pair<size_t, const std::pair<std::string, std::string> *>> at;
    size_t total = rendered.size();
    for (const auto & swap : swaps_) {
        const size_t first = rendered.find(swap.first);
        if (first == std::string::npos || rendered.find(swap.first, first + 1) != std::string::npos) return std::nullopt;
        at.emplace_back(first, &swap);
        total += swap.second.size() - swap.first.size();
    }
    std::sort(at.begin(), at.end());
    std::string out;
    out.reserve(total);
    size_t from = 0;
    for (const auto & [pos, swap] : at) {
        if (pos < from) return std::nullopt; // two stand-ins overlapping: not a plain copy
        out.append(rendered, from, pos - from);
        out += swap->second;
        from = pos + swap->first.size();
    }
    out.append(rendered, from, std::string::npos);
    return out;
}

} // namespace specd::engine
