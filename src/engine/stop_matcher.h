#pragma once
// Finds stop strings in streamed text, across token boundaries. Text that could still be
// the start of a stop string is held back until it is known either way, so a stop string
// is never emitted, not even in part.
#include <string>
#include <string_view>
#include <vector>

namespace specd::engine {

class StopMatcher {
  public:
    explicit StopMatcher(std::vector<std::string> stops);

    struct Result {
        std::string text;          // safe to emit now
        bool        stopped = false; // a stop string matched; `text` ends right before it
    };

    Result push(std::string_view text);
    // End of generation: whatever was held back is released.
    std::string flush();

  private:
    std::vector<std::string> stops_;
    std::string              held_;
};

} // namespace specd::engine
