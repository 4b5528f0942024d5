#pragma once
// What a step of the target costs by the positions it decodes:
//   time = t_1 + [x > 0] o + x c_v,   x = the step's positions beyond its first,
// fitted by weighted least squares on timed steps. A step of several positions costs a fixed
// o more than a one-token step (the target leaves its one-token path), and c_v per position.
namespace specd::spec {

// Exponentially weighted sums for regressing y on d = [x > 0] and x (d * x = x, d * d = d).
struct StepSums {
    double w = 0.0, d = 0.0, x = 0.0, y = 0.0, xx = 0.0, dy = 0.0, xy = 0.0;
    void   fade(double f);
    void   add(double xi, double yi, double weight = 1.0);
    void   merge(const StepSums & o);
};

struct StepFit {
    double t_1 = 0.0; // one position (0: nothing timed)
    double o   = 0.0; // once, for a step of several positions
    double c_v = 0.0; // per position beyond the first
};

// Ridge regression of y on (1, d, x), o and c_v each pulled towards a ratio to t_1 (rho_o,
// rho_v) with `weight` observations' worth: they decide what the steps cannot (the t_1 / c_v
// split when every step had the same positions). A cost that comes out negative (noise: more
// positions never make a step cheaper) is fixed at 0 and the rest fitted again.
StepFit fit_steps(const StepSums & s, double rho_o, double rho_v, double weight);

} // namespace specd::spec
