#include "spec/step_fit.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace specd::spec {

namespace {

// Solves the n x n system a * z = b in place (Gaussian elimination with partial pivoting);
// false when it is singular.
template <int N> bool solve(double (&a)[N][N], double (&b)[N], int n) {
    for (int c = 0; c < n; ++c) {
        int p = c;
        for (int r = c + 1; r < n; ++r) {
            if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
        }
        if (std::abs(a[p][c]) < 1e-300) return false;
        std::swap(a[p], a[c]);
        std::swap(b[p], b[c]);
        for (int r = c + 1; r < n; ++r) {
            const double f = a[r][c] / a[c][c];
            for (int k = c; k < n; ++k) a[r][k] -= f * a[c][k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; --c) {
        for (int k = c + 1; k < n; ++k) b[c] -= a[c][k] * b[k];
        b[c] /= a[c][c];
    }
    return true;
}

} // namespace

void StepSums::fade(double f) {
    w *= f;
    d *= f;
    x *= f;
    y *= f;
    xx *= f;
    dy *= f;
    xy *= f;
}

void StepSums::add(double xi, double yi, double weight) {
    const double di = xi > 0.0 ? 1.0 : 0.0;
    w += weight;
    d += weight * di;
    x += weight * xi;
    y += weight * yi;
    xx += weight * xi * xi;
    dy += weight * di * yi;
    xy += weight * xi * yi;
}

void StepSums::merge(const StepSums & o) {
    w += o.w;
    d += o.d;
    x += o.x;
    y += o.y;
    xx += o.xx;
    dy += o.dy;
    xy += o.xy;
}

// Minimises sum w (y - t_1 - o d - c_v x)^2 + lambda (o - rho_o t_1)^2 + lambda (c_v - rho_v t_1)^2.
StepFit fit_steps(const StepSums & s, double rho_o, double rho_v, double weight) {
    if (s.w <= 0.0) return {};
    const double lambda = weight;
    rho_o               = std::max(0.0, rho_o);
    rho_v               = std::max(0.0, rho_v);
    const double full_a[3][3] = {{s.w + lambda * (rho_o * rho_o + rho_v * rho_v), s.d - lambda * rho_o, s.x - lambda * rho_v},
                                 {s.d - lambda * rho_o, s.d + lambda, s.x},
                                 {s.x - lambda * rho_v, s.x, s.xx + lambda}};
    const double full_b[3]    = {s.y, s.dy, s.xy};

    double z[3]    = {s.y / s.w, 0.0, 0.0};
    bool   free[3] = {true, true, true};
    for (int pass = 0; pass < 3; ++pass) {
        int    idx[3];
        int    n = 0;
        for (int i = 0; i < 3; ++i) {
            if (free[i]) idx[n++] = i;
        }
        double a[3][3], b[3];
        for (int r = 0; r < n; ++r) {
            b[r] = full_b[idx[r]];
            for (int c = 0; c < n; ++c) a[r][c] = full_a[idx[r]][idx[c]];
        }
        if (!solve(a, b, n)) break;
        z[0] = z[1] = z[2] = 0.0;
        for (int r = 0; r < n; ++r) z[idx[r]] = b[r];
        // The most negative cost goes first: the others may recover once it is fixed.
        int worst = -1;
        for (int i = 1; i < 3; ++i) {
            if (free[i] && z[i] < 0.0 && (worst < 0 || z[i] < z[worst])) worst = i;
        }
        if (worst < 0) break;
        free[worst] = false;
    }

    StepFit out;
    out.t_1 = std::max(z[0], 1e-3 * s.y / s.w);
    out.o   = std::max(0.0, z[1]);
    out.c_v = std::max(0.0, z[2]);
    return out;
}

} // namespace specd::spec
