#pragma once

#include <cstdint>
#include <string>
#include <vector>

enum weight_init {
    WEIGHT_INIT_ONES,    // norm weights
    WEIGHT_INIT_ZEROS,   // biases
    WEIGHT_INIT_UNIFORM, // uniform in [-bound, bound)
    WEIGHT_INIT_CONST,   // every value `bound` (a scaled norm)
};

// One F32 tensor of a fixture model.
struct tensor_spec {
    std::string          name;
    std::vector<int64_t> ne; // ggml order, 1 to 4 dims: ne[0] is the row length (the input dimension)
    weight_init          init  = WEIGHT_INIT_ONES;
    double               bound = 0.0;

    int64_t n_elements() const {
        int64_t n = 1;
        for (const int64_t d : ne) {
            n *= d;
        }
        return n;
    }
};
