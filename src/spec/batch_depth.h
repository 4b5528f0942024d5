#pragma once
// One draft depth for a step that several requests share, chosen by what such steps cost as
// timed on this machine.
//
// Alone, a request's DepthController weighs its own round's cost and plans its own depth. In a
// batch the requests' rounds share one step, and what a step costs is not each request's
// rounds added up: the draft model (or head) decodes once per draft position for every
// sequence still drafting, so one request planning deeper than the rest makes the whole step
// wait for its draft decodes; and the target's time by positions is not a line (on 2 cores,
// bench/mtp.json's mtp_09 at 4 streams: 16 positions took 82 ms where 12 took 78 and 15 took
// 93). Requests planning 1-3 each delivered 102-108 tokens/s per step where all drafting 3
// delivered 120 (a temporary step log; bench/results/concurrency-mtp.md).
//
// So in a batch the session picks one depth D for every request: the one with the most tokens
// per second, the tokens as the requests' controllers expect them (each one's expected tokens
// from a round of d drafts) and the seconds as steps of this batch size at that depth took
// (what a step costs at a depth not timed yet: the cost model's prediction, scaled as the
// nearest depth that was timed compares with its own), the shallowest within a few percent of
// the best. Until a depth was timed at a batch size, that size's steps draft 1 (the cost
// model alone is far off on a fresh server). Now and then it visits the depth next to its
// choice, so a neighbour that got cheaper, or whose prediction was off, is measured; sooner
// where that neighbour has no time yet.
#include <functional>
#include <vector>

namespace specd::spec {

struct BatchDepthConfig {
    int    max_depth     = 16;
    double forget        = 0.8;  // per step timed at the same batch size and depth
    double min_weight    = 1.5;  // a depth's time stands once this much was timed (2 steps)
    double spike         = 1.5;  // a step over spike x its depth's time counts at that bound
    int    explore_every = 32;   // steps between visits of a neighbouring depth ...
    int    explore_len   = 2;    // ... of this many steps
    // ... or this many, where a neighbour has no time yet: its rate is the scaled prediction
    // alone, which read gemma4's assistant at 4 streams (bench/heads.json's g4head09) 13%
    // below what its steps delivered once timed.
    int    explore_new   = 8;
    // A deeper depth must promise this share more tokens per second than the shallowest one
    // as good within it: the tokens are the controllers' estimates, which read deep positions
    // high (measured only behind accepted drafts). On bench/eagle3.json's e3_09 at 4 streams
    // the choice drifted from 2.2 to 3.7-3.9 over three waves while the waves' rate fell from
    // 142 to 130-134 tokens/s (DepthConfig::prefer_shallow says the same of one request).
    double prefer_shallow = 0.03;
};

class BatchDepth {
  public:
    explicit BatchDepth(BatchDepthConfig config = {});

    // The depth for the next step of `batch` requests. expected[i][d]: request i's expected
    // tokens from a round of d drafts, for d = 0 .. its deepest (a request drafts at most
    // that). predicted(d): the cost model's seconds for a step in which every request drafts
    // d. 0 when no request may draft.
    int choose(int batch, const std::vector<std::vector<double>> & expected,
               const std::function<double(int)> & predicted);

    // A step of `batch` requests that all drafted `depth` took `seconds` (drafting, the
    // target's decode and feeding a head: everything the depth changes). The first step of a
    // batch size and depth is not counted: the first decode of a shape pays what later ones
    // do not (g4head09 at 4 streams: the first 16-position step's target decode took 198 ms,
    // the ones after it 110-133), and a depth visited two steps at a time would carry that for
    // a hundred steps.
    void observe(int batch, int depth, double seconds);

    // What steps of `batch` requests at `depth` took, as measured (0: not measured).
    double seconds(int batch, int depth) const;

  private:
    struct Timed {
        bool   stepped = false; // its first step was seen (and not counted)
        double s = 0.0, w = 0.0;
        double mean() const { return w > 0.0 ? s / w : 0.0; }
    };
    struct Batch {
        std::vector<Timed> depth; // [d]
        int  since_visit = 0;
        int  visit_left  = 0;
        int  visit_depth = 0;
        bool visit_up    = true; // the next visit goes one deeper (else one shallower)
    };
    Batch & at(int batch);

    BatchDepthConfig   config_;
    std::vector<Batch> batches_; // [batch size - 1]
};

} // namespace specd::spec
