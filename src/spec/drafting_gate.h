#pragma once
// Whether drafting, as the depth controllers do it, makes a session's steps deliver more
// tokens per second than not drafting at all: measured, per batch size.
//
// Each DepthController plans from a cost model, and what the model leaves out or gets wrong
// under load (the CPU work of verifying each position, the draft catching up, a step whose
// positions cost more than the regression says) can make its drafting slower than none: four
// streams of a pair whose draft costs a fifth of the target's step drafted at a mean depth of
// 0.7 and delivered 0.94x of not drafting. The gate compares two arms per batch size (the
// requests generating in a step): steps in which some round drafted or verified forced text,
// and steps in which none did, each an exponentially faded rate of tokens committed per second
// of the whole step (drafting, decode and verification). While drafting is measured slower
// than plain steps by more than the margin, steps do not draft, but for a few now and then (the
// costs may change); while drafting is ahead, a few plain steps now and then keep the
// comparison current. Either way, the further ahead the chosen arm, the rarer the visits. The session asks it only for steps that
// several requests share, and it gates drafts only: grammar-forced text is free to find and
// stays the controllers' call.
#include <vector>

namespace specd::spec {

struct DraftingGateConfig {
    double forget        = 0.95; // per sample, each arm
    double margin        = 0.03; // drafting stops when its rate is below (1 - margin) x plain's
    int    min_samples   = 8;    // per arm, before the arms are compared
    int    explore_every = 64;   // steps between visits of the arm not chosen ...
    int    explore_len   = 4;    // ... of this many steps
    double clear_lead    = 1.2;  // one arm this far ahead: the other is visited 4x less often
};

class DraftingGate {
  public:
    explicit DraftingGate(DraftingGateConfig config = {});

    // Whether the next step, with `batch` requests generating, may draft.
    bool allow(int batch);
    // What a step of `batch` generating requests did: whether any round drafted or verified
    // forced text, the tokens committed, and the step's seconds. Steps that also evaluated
    // prompt chunks or images are not observed (their time is not the rounds').
    void observe(int batch, bool drafted, double tokens, double seconds);

    // The measured rate of one arm (tokens per second), 0 until it has a sample.
    double rate(int batch, bool drafted) const;

  private:
    struct Arm {
        double tokens  = 0.0;
        double seconds = 0.0;
        int    samples = 0;
        double rate() const { return seconds > 0.0 ? tokens / seconds : 0.0; }
    };
    struct Batch {
        Arm  draft, plain;
        int  since_visit = 0; // steps on the chosen arm since the last visit of the other
        int  visit_left  = 0; // steps of the current visit still to go
    };

    Batch & at(int batch);

    DraftingGateConfig config_;
    std::vector<Batch> batches_; // [batch size - 1]
};

} // namespace specd::spec
