#include "process/text_batcher.h"

#include <iterator>
#include <utility>

namespace specd::process {

std::vector<scheduler::Event> TextBatcher::take(scheduler::Event e) {
    std::vector<scheduler::Event> out;
    if (e.kind == scheduler::Event::Kind::text && !streamed_) {
        if (!held_) {
            held_ = std::move(e);
        } else {
            held_->text += e.text;
            held_->logprobs.insert(held_->logprobs.end(), std::make_move_iterator(e.logprobs.begin()),
                                   std::make_move_iterator(e.logprobs.end()));
        }
        return out;
    }
    // The end (done or error) sends what was held first: the text comes before it, as it
    // would have one piece at a time.
    if (held_) out.push_back(*std::exchange(held_, std::nullopt));
    out.push_back(std::move(e));
    return out;
}

} // namespace specd::process
