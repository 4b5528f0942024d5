#pragma once
// Long message contents go into a chat template as short stand-ins, and come back into the
// rendered text afterwards. llama.cpp renders a template several times per request and its
// jinja values copy each string many times: a 3.9 MB message took ~1 s to render, in one
// call that cannot be cancelled. A stand-in keeps the content's first and last bytes (so
// `startswith`, `endswith` and `trim` in a template see what they would have seen) around a
// marker; restore() puts the content back only where the template copied the stand-in
// unchanged, exactly once. Anything else (a filter that rewrote it, a copy dropped or
// doubled) returns nullopt and the caller renders the real contents.
#include "core/request.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specd::engine {

class ContentStandIns {
  public:
    // Contents from this size up are stood in for; below it rendering costs little.
    static constexpr size_t k_min_bytes = 64 * 1024;

    // Stands in for the long contents of `messages` (not assistant turns, whose text
    // templates search for reasoning tags). Copies nothing when there are none.
    explicit ContentStandIns(const std::vector<Message> & messages);

    bool empty() const { return swaps_.empty(); }

    // The messages with their stand-ins; only when !empty().
    const std::vector<Message> & messages() const { return shortened_; }

    // `rendered` with every stand-in back as its content; nullopt unless each stand-in
    // occurs exactly once.
    std::optional<std::string> restore(const std::string & rendered) const;

  private:
    std::vector<Message>                             shortened_;
    std::vector<std::pair<std::string, std::string>> swaps_; // stand-in, content
};

} // namespace specd::engine
