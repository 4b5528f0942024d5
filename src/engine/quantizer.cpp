#include "engine/quantizer.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/file_type_name.h"
#include "engine/llama_handles.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <thread>

namespace specd::engine {

namespace {

// The types Ollama's create accepts, plus the other common llama.cpp ones.
constexpr std::array<std::pair<const char *, llama_ftype>, 16> k_types{{
    {"F16", LLAMA_FTYPE_MOSTLY_F16},       {"BF16", LLAMA_FTYPE_MOSTLY_BF16},
    {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
    {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"Q3_K_L", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
}};

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    return s;
}

// general.file_type of a GGUF header, as the name Ollama prints ("F16"); empty when the
// file is quantized or says nothing.
std::string unquantized_type(const std::filesystem::path & path) {
    gguf_ptr g(gguf_init_from_file(path.c_str(), {/*no_alloc=*/true, /*ctx=*/nullptr}));
    if (!g) throw bad_request("cannot quantize " + path.filename().string() + ": not a readable GGUF file");
    const int64_t id = gguf_find_key(g.get(), "general.file_type");
    if (id < 0 || gguf_get_kv_type(g.get(), id) != GGUF_TYPE_UINT32) return "";
    const std::string name = file_type_name(gguf_get_val_u32(g.get(), id));
    return name == "F32" || name == "F16" || name == "BF16" ? name : "";
}

} // namespace

std::optional<QuantizeType> parse_quantize_type(const std::string & name) {
    const std::string want = upper(name);
    for (const auto & [type, ftype] : k_types) {
        if (want == type) return QuantizeType{type, int(ftype)};
    }
    return std::nullopt;
}

std::string supported_quantize_types() {
    std::string out;
    for (const auto & [type, ftype] : k_types) out += (out.empty() ? "" : ", ") + std::string(type);
    return out;
}

void quantize_model(const std::filesystem::path & in, const std::filesystem::path & out, const QuantizeType & type,
                    const std::function<void(const std::string &)> & progress, const TensorProgress & tensors) {
    const std::string from = unquantized_type(in);
    if (from.empty()) {
        throw bad_request("quantization is only supported for F16, BF16 and F32 models: this model is already quantized");
    }
    ensure_backend();
    if (progress) progress("quantizing " + from + " model to " + type.name);
    llama_model_quantize_params params = llama_model_quantize_default_params();
    params.ftype   = llama_ftype(type.ftype);
    params.nthread = int32_t(std::max(1u, std::thread::hardware_concurrency()));
    // llama_model_quantize has no progress callback; it logs "[  12/ 201] name - ..." per
    // tensor on this thread.
    LogCapture capture([&](const char * line) {
        unsigned long done = 0, total = 0;
        if (tensors && std::sscanf(line, " [ %lu/ %lu]", &done, &total) == 2 && total > 0) tensors(done, total);
    });
    if (llama_model_quantize(in.c_str(), out.c_str(), &params) != 0) {
        std::string why = capture.first_error();
        if (why.find('/') != std::string::npos) why.clear(); // llama.cpp names full paths
        throw Error(ErrorKind::internal, "quantizing to " + type.name + " failed" + (why.empty() ? "" : ": " + why));
    }
}

} // namespace specd::engine
