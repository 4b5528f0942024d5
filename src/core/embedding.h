#pragma once
// What is done to an embedding vector after the model: shared by the API's answers and the
// tests that compare vectors.
#include <cmath>
#include <vector>

namespace specd {

// Scales `v` to unit L2 norm (a zero vector stays zero).
inline void normalize_l2(std::vector<float> & v) {
    double sum = 0;
    for (float x : v) sum += double(x) * x;
    if (sum <= 0) return;
    const double scale = 1.0 / std::sqrt(sum);
    for (float & x : v) x = float(x * scale);
}

} // namespace specd
