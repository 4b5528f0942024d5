#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

enum weight_init {
    WEIGHT_INIT_ONES,    // norm weights
    WEIGHT_INIT_ZEROS,   // biases
    WEIGHT_INIT_UNIFORM, // uniform in [-bound, bound)
    WEIGHT_INIT_CONST,   // every value `bound` (a scaled norm)
    WEIGHT_INIT_CUSTOM,  // written by `custom` (weights with a structure: copies, identities)
};

// One F32 tensor of a fixture model.
struct tensor_spec {
    std::string          name;
    std::vector<int64_t> ne; // ggml order, 1 to 4 dims: ne[0] is the row length (the input dimension)
    weight_init          init  = WEIGHT_INIT_ONES;
    double               bound = 0.0;
    // WEIGHT_INIT_CUSTOM: fills all n_elements() values, in ggml order.
    std::function<void(float *)> custom;
    // WEIGHT_INIT_UNIFORM: every row keeps its first `row_prefix` values and the rest are zero
    // (drawn all the same, so the kept ones are those of a full draw); 0 keeps all.
    int64_t                      row_prefix = 0;
    // WEIGHT_INIT_UNIFORM: rows set to zero after the draw (the others keep their values).
    std::vector<int64_t>         zero_rows  = {};

    int64_t n_elements() const {
        int64_t n = 1;
        for (const int64_t d : ne) {
            n *= d;
        }
        return n;
    }
};

// Uniform weights of standard deviation `std` lie in [-std * sqrt(3), std * sqrt(3)).
inline double uniform_bound(double std) { return std * std::sqrt(3.0); }

inline tensor_spec ones_spec(std::string name, int64_t n) { return {std::move(name), {n}, WEIGHT_INIT_ONES, 0.0, {}}; }
inline tensor_spec zeros_spec(std::string name, int64_t n) { return {std::move(name), {n}, WEIGHT_INIT_ZEROS, 0.0, {}}; }
inline tensor_spec const_spec(std::string name, int64_t n, double value) {
    return {std::move(name), {n}, WEIGHT_INIT_CONST, value, {}};
}
inline tensor_spec custom_spec(std::string name, std::vector<int64_t> ne, std::function<void(float *)> fill) {
    return {std::move(name), std::move(ne), WEIGHT_INIT_CUSTOM, 0.0, std::move(fill)};
}
inline tensor_spec uniform_spec(std::string name, std::vector<int64_t> ne, double bound) {
    return {std::move(name), std::move(ne), WEIGHT_INIT_UNIFORM, bound, {}};
}
// A matrix with rows of n_in values (the input dimension), n_out of them.
inline tensor_spec matrix_spec(std::string name, int64_t n_in, int64_t n_out, double bound) {
    return uniform_spec(std::move(name), {n_in, n_out}, bound);
}
