#include "model_quantize.h"

#include <llama.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

void model_quantize_in_place(const std::string & path, const std::string & type) {
    static const std::map<std::string, llama_ftype> types = {
        {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
        {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
        {"q4_k", LLAMA_FTYPE_MOSTLY_Q4_K_M},
        {"f16", LLAMA_FTYPE_MOSTLY_F16},
    };
    const auto it = types.find(type);
    if (it == types.end()) {
        throw std::runtime_error("unknown quantization type '" + type + "' (q8_0, q4_0, q4_k, f16)");
    }
    const std::string tmp = path + ".quantizing";
    llama_model_quantize_params params = llama_model_quantize_default_params();
    params.ftype   = it->second;
    params.nthread = 0; // all cores
    if (llama_model_quantize(path.c_str(), tmp.c_str(), &params) != 0) {
        std::filesystem::remove(tmp);
        throw std::runtime_error("quantizing " + path + " to " + type + " failed");
    }
    std::filesystem::rename(tmp, path);
}
