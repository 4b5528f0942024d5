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
// and steps in which none did. Each arm's rate is the tokens committed per second of the whole
// step (drafting, decode and verification) over its last `window` steps, leaving out steps
// whose time per position (the work they were given, not what came of it) is over `spike`
// times the arm's median: the machine stalls now and then (plain steps of 23 ms took 40-60 ms
// every 20-30 steps on the 2-core machine, whatever the arm), and a few stalls among the
// handful of samples a decision rests on made drafting look ahead of plain steps it was 7%
// behind. Not the time per token: a drafting step whose drafts were all rejected costs twice
// a good one's per token, and leaving those out read drafting at bench/eagle3.json's e3_06, 4
// streams, ahead of plain steps (138 against 128 tokens/s) where its steps delivered 8% less
// (a step log of a wave: 476 tokens in 4.45 s of drafting steps, 504 in 4.33 s of plain
// ones), and it drafted for whole waves.
//
// The arms are compared in pairs of the same moment: each visit of the arm not chosen (a few
// steps now and then: the costs may change) is read against the chosen arm's steps right
// before it, of the same requests (none read a prompt in between), and the choice changes
// only on those readings (the mean of the last two). A step's cost drifts with the machine's
// speed and with the requests' lengths of context (e3_06's plain steps at 4 streams took
// 28-33 ms at the start of a wave and 35-43 at its end on the 2-core machine), so an arm's
// rate from another stretch of steps says more about those than about the arm: with the arm
// not chosen rated on its last visits against the chosen arm's latest steps, plain steps slowed
// at the end of a wave of requests that asked for no drafts read drafting's visit from a faster
// stretch 13% ahead, and the next wave drafted throughout and delivered 6% less than the plain
// wave beside it. Until both arms are measured, the steps alternate between them, so that the
// first reading is of one stretch too. Drafting chosen that delivers `shift` less than at the
// last reading calls a visit of plain steps at once, read alone: what changed may be the arm
// (a text its drafts stop matching), and plain steps cost a visit nothing more than their own.
//
// The choice has hysteresis (start_lead, stop_lead). The further ahead the chosen arm, the
// rarer the visits, and each visit that leaves the choice as it was doubles the gap to the
// next (up to max_every): a visit of drafting that loses costs more than its steps (each
// request's draft catches up), so under a steady load the choice settles and its visits
// become rare; a visit that changes the choice starts the gaps over. The session asks the gate
// only for steps that several requests share and in which some request may draft (a step of
// requests that all asked for no drafts neither visits nor counts towards one; its steps are
// plain ones all the same), and it gates drafts only: grammar-forced text is free to find and
// stays the controllers' call. A batch size not measured yet follows the nearest one that is,
// visiting the other arm now and then, until its own arms are measured.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace specd::spec {

struct DraftingGateConfig {
    double spike         = 1.5;  // a step slower per token than this x the arm's median is left out
    // Hysteresis: drafting starts when its rate is at least (1 + start_lead) x plain's and
    // stops when it falls below (1 + stop_lead) x plain's. Drafting that only matches plain
    // steps still loses over a request's life (its ends come at different steps and the batch
    // thins out; each draft first reads the prompt), so it stops where it no longer leads. And
    // it starts only on a clear lead: a reading rests on a visit of 4 steps, and drafting
    // steps vary (e3_06 at 4 streams: 5-8 tokens in 45-50 ms), so a visit reads a few percent
    // high or low by chance; with a start at 1.03x, fresh servers' waves switched to drafting
    // for whole waves that delivered 7% less than plain ones.
    double start_lead    = 0.05;
    double stop_lead     = 0.0;
    int    min_samples   = 12;   // per arm, before the arms are compared
    int    explore_every = 64;   // steps between visits of the arm not chosen ...
    int    explore_len   = 4;    // ... of this many steps (read against 2x as many before it)
    double clear_lead    = 1.2;  // one arm this far ahead: the other is visited 4x less often
    int    max_every     = 1024; // the longest gap between visits, after the back-off
    double shift         = 0.1;  // drafting chosen delivering this much less: a visit now
    // Visits cost at most this share of the chosen arm's time: the gap after a visit is at
    // least what it lost over this share of a step. A visit of drafting among plain steps
    // pays each sequence's catching up (e3_06 at 4 streams: its first step 88-157 ms against
    // 45-50 for the others and 30-35 for a plain one, about 60 ms lost in all): every 64 plain
    // steps, 3% of their time, and one in nearly every 4-stream wave.
    double visit_budget  = 0.01;
};

class DraftingGate {
  public:
    explicit DraftingGate(DraftingGateConfig config = {});

    // Whether the next step, with `batch` requests generating, may draft.
    bool allow(int batch);
    // What a step of `batch` generating requests did: whether any round drafted or verified
    // forced text, the tokens committed, the step's seconds and the positions it decoded.
    // Steps that also evaluated prompt chunks or images are not observed (their time is not
    // the rounds'): load_changed() instead, since the steps after them run other requests, or
    // the same ones at other lengths of context.
    void observe(int batch, bool drafted, double tokens, double seconds, int positions);
    void load_changed();

    // The measured rate of one arm (tokens per second) over its window, 0 until it has a
    // sample.
    double rate(int batch, bool drafted) const;

    static constexpr int window = 32; // samples kept per arm

  private:
    struct Arm {
        std::array<double, window> tokens{};
        std::array<double, window> seconds{};
        std::array<int, window>    positions{};
        int64_t                    samples = 0; // seen; the next goes to slot samples % window
        int    kept() const { return int(std::min<int64_t>(samples, window)); } // of the window
        void   add(double tok, double s, int pos);
        // Over the last `last` samples kept; a stall is judged against the whole window.
        double rate(double spike, int last = window) const;
        // Over the last `last` samples kept (at most kept()), stalls and all.
        struct Sum {
            double tokens = 0.0, seconds = 0.0;
            int    steps  = 0;
        };
        Sum totals(int last) const;
    };
    struct Batch {
        Arm  draft, plain;
        int  since_visit = 0; // steps on the chosen arm since the last visit of the other
        int  visit_left  = 0; // steps of the current visit still to go
        int  backoff     = 0; // visits in a row that left the choice as it was
        bool drafting    = false; // the choice
        bool decided     = false; // both arms measured: visits count from here
        // The chosen arm's steps observed in a row since the load last changed (load_changed,
        // another batch size in between, the choice changed): those a visit is read against.
        int     run        = 0;
        // A visit under way, or over and not read yet: the other arm's sample count and the
        // chosen arm's rate (its last 2 x explore_len steps) when it started.
        bool    in_visit   = false;
        int64_t visit_from = 0;
        double  reference  = 0.0;
        bool    look_now   = false; // drafting's rate fell: a visit at once, its reading alone
        double  step_s     = 0.0;   // the chosen arm's seconds a step over those steps
        // The seconds the last visit lost against the chosen arm (its steps, its drafts
        // catching up, against the time the chosen arm takes for as many tokens).
        double  visit_loss = 0.0;
        // The last two readings (drafting's rate / plain's), the newest at [readings % 2], and
        // the chosen arm's window rate at the newest.
        std::array<double, 2> leads{};
        int                   readings  = 0;
        double                chosen_at = 0.0;
        Arm &       chosen() { return drafting ? draft : plain; }
        Arm &       other() { return drafting ? plain : draft; }
        double      lead() const;
    };

    Batch & at(int batch);
    // A reading of drafting's lead; `alone`: the ones before it no longer count.
    void read(Batch & b, double lead, bool alone);
    // The visit that just ended, read against the chosen arm's steps before it: the choice
    // may change.
    void read_visit(Batch & b);
    // Whether this step visits the arm not chosen: the rest of a visit under way, or a new one
    // of explore_len steps once `every` steps went by on the chosen arm and it is `ready`.
    bool visiting(Batch & b, int64_t every, bool ready) const;
    // The decided batch size nearest to `batch` (another one), nullptr when none is.
    const Batch * nearest_decided(int batch) const;

    DraftingGateConfig config_;
    std::vector<Batch> batches_; // [batch size - 1]
    int                last_batch_ = 0; // of the last step observed
};

} // namespace specd::spec
