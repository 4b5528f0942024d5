#include "engine/gguf_info.h"

#include "core/error.h"
#include "engine/file_type_name.h"
#include "engine/llama_handles.h"

#include <cstdio>
#include <cstring>
#include <fstream>

namespace specd::engine {

namespace {

MetaEntry::Array array_of(const gguf_context * ctx, int64_t id, bool values) {
    const gguf_type  type = gguf_get_arr_type(ctx, id);
    MetaEntry::Array a{gguf_type_name(type), gguf_get_arr_n(ctx, id), {}};
    if (!values) return a;
    const void * data = type == GGUF_TYPE_STRING || type == GGUF_TYPE_ARRAY ? nullptr : gguf_get_arr_data(ctx, id);
    a.values.reserve(a.length);
    for (size_t i = 0; i < a.length; ++i) {
        switch (type) {
            case GGUF_TYPE_UINT8:   a.values.emplace_back(int64_t(static_cast<const uint8_t *>(data)[i])); break;
            case GGUF_TYPE_INT8:    a.values.emplace_back(int64_t(static_cast<const int8_t *>(data)[i])); break;
            case GGUF_TYPE_UINT16:  a.values.emplace_back(int64_t(static_cast<const uint16_t *>(data)[i])); break;
            case GGUF_TYPE_INT16:   a.values.emplace_back(int64_t(static_cast<const int16_t *>(data)[i])); break;
            case GGUF_TYPE_UINT32:  a.values.emplace_back(int64_t(static_cast<const uint32_t *>(data)[i])); break;
            case GGUF_TYPE_INT32:   a.values.emplace_back(int64_t(static_cast<const int32_t *>(data)[i])); break;
            case GGUF_TYPE_UINT64:  a.values.emplace_back(int64_t(static_cast<const uint64_t *>(data)[i])); break;
            case GGUF_TYPE_INT64:   a.values.emplace_back(static_cast<const int64_t *>(data)[i]); break;
            case GGUF_TYPE_FLOAT32: a.values.emplace_back(double(static_cast<const float *>(data)[i])); break;
            case GGUF_TYPE_FLOAT64: a.values.emplace_back(static_cast<const double *>(data)[i]); break;
            case GGUF_TYPE_BOOL:    a.values.emplace_back(static_cast<const int8_t *>(data)[i] != 0); break;
            case GGUF_TYPE_STRING:  a.values.emplace_back(std::string(gguf_get_arr_str(ctx, id, i))); break;
            default:                return a; // arrays of arrays: length only
        }
    }
    return a;
}

MetaEntry read_entry(const gguf_context * ctx, int64_t id, bool values) {
    MetaEntry e;
    e.key = gguf_get_key(ctx, id);
    switch (gguf_get_kv_type(ctx, id)) {
        case GGUF_TYPE_UINT8:   e.value = int64_t(gguf_get_val_u8(ctx, id)); break;
        case GGUF_TYPE_INT8:    e.value = int64_t(gguf_get_val_i8(ctx, id)); break;
        case GGUF_TYPE_UINT16:  e.value = int64_t(gguf_get_val_u16(ctx, id)); break;
        case GGUF_TYPE_INT16:   e.value = int64_t(gguf_get_val_i16(ctx, id)); break;
        case GGUF_TYPE_UINT32:  e.value = int64_t(gguf_get_val_u32(ctx, id)); break;
        case GGUF_TYPE_INT32:   e.value = int64_t(gguf_get_val_i32(ctx, id)); break;
        case GGUF_TYPE_UINT64:  e.value = int64_t(gguf_get_val_u64(ctx, id)); break;
        case GGUF_TYPE_INT64:   e.value = gguf_get_val_i64(ctx, id); break;
        case GGUF_TYPE_FLOAT32: e.value = double(gguf_get_val_f32(ctx, id)); break;
        case GGUF_TYPE_FLOAT64: e.value = gguf_get_val_f64(ctx, id); break;
        case GGUF_TYPE_BOOL:    e.value = gguf_get_val_bool(ctx, id); break;
        case GGUF_TYPE_STRING:  e.value = std::string(gguf_get_val_str(ctx, id)); break;
        case GGUF_TYPE_ARRAY:   e.value = array_of(ctx, id, values); break;
        default:                e.value = std::string("?"); break;
    }
    return e;
}

} // namespace

GgufInfo read_gguf_info(const std::filesystem::path & path, bool verbose) {
    const std::string shown = path.filename().string();
    {
        std::ifstream f(path, std::ios::binary);
        if (!f) throw bad_request("model file not found: " + shown);
        char magic[4] = {};
        f.read(magic, 4);
        if (f.gcount() != 4 || std::string(magic, 4) != "GGUF") {
            throw bad_request("not a GGUF file: " + shown);
        }
    }
    gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
    gguf_ptr ctx(gguf_init_from_file(path.c_str(), params));
    if (!ctx) throw bad_request("corrupt GGUF header: " + shown);

    GgufInfo info;
    const int64_t n_kv = gguf_get_n_kv(ctx.get());
    for (int64_t i = 0; i < n_kv; ++i) info.metadata.push_back(read_entry(ctx.get(), i, verbose));
    for (const auto & e : info.metadata) {
        const auto * s = std::get_if<std::string>(&e.value);
        const auto * n = std::get_if<int64_t>(&e.value);
        if (e.key == "general.architecture" && s) info.architecture = *s;
        if (e.key == "general.name" && s) info.name = *s;
        if (e.key == "tokenizer.chat_template" && s) info.chat_template = *s;
        if (e.key == "general.file_type" && n) {
            info.file_type = file_type_name(*n);
        }
    }
    for (const auto & e : info.metadata) {
        const auto * n = std::get_if<int64_t>(&e.value);
        if (n && e.key == info.architecture + ".context_length") info.context_length = *n;
    }
    for (int64_t t = 0; t < gguf_get_n_tensors(ctx.get()); ++t) {
        const int64_t * ne = gguf_get_tensor_ne(ctx.get(), t);
        uint64_t        n  = 1;
        for (int d = 0; d < GGML_MAX_DIMS; ++d) n *= static_cast<uint64_t>(ne[d]);
        info.n_params += n;
        if (!verbose) continue;
        GgufInfo::Tensor tensor{gguf_get_tensor_name(ctx.get(), t),
                                tensor_type_name(ggml_type_name(gguf_get_tensor_type(ctx.get(), t))), {}};
        int dims = GGML_MAX_DIMS;
        while (dims > 1 && ne[dims - 1] == 1) --dims;
        for (int d = 0; d < dims; ++d) tensor.shape.push_back(static_cast<uint64_t>(ne[d]));
        info.tensors.push_back(std::move(tensor));
    }
    if (info.file_type.empty() && gguf_get_n_tensors(ctx.get()) > 0) {
        info.file_type = tensor_type_name(ggml_type_name(gguf_get_tensor_type(ctx.get(), 0)));
    }
    return info;
}

std::string gguf_vocab_mismatch(const std::filesystem::path & a, const std::filesystem::path & b) {
    gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
    gguf_ptr ga(gguf_init_from_file(a.c_str(), params));
    gguf_ptr gb(gguf_init_from_file(b.c_str(), params));
    if (!ga || !gb) return "a GGUF header cannot be read";
    auto str = [](const gguf_context * g, const char * key) -> std::string {
        const int64_t id = gguf_find_key(g, key);
        return id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_STRING ? gguf_get_val_str(g, id) : "";
    };
    auto num = [](const gguf_context * g, const char * key) -> int64_t {
        const int64_t id = gguf_find_key(g, key);
        if (id < 0) return -1;
        switch (gguf_get_kv_type(g, id)) {
            case GGUF_TYPE_UINT32: return gguf_get_val_u32(g, id);
            case GGUF_TYPE_INT32: return gguf_get_val_i32(g, id);
            default: return -1;
        }
    };
    if (str(ga.get(), "tokenizer.ggml.model") != str(gb.get(), "tokenizer.ggml.model")) return "the tokenizer types differ";
    for (const char * key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
        if (num(ga.get(), key) != num(gb.get(), key)) return std::string("the special tokens differ (") + key + ")";
    }
    const int64_t ta = gguf_find_key(ga.get(), "tokenizer.ggml.tokens");
    const int64_t tb = gguf_find_key(gb.get(), "tokenizer.ggml.tokens");
    if (ta < 0 || tb < 0) return "a file has no vocabulary";
    const size_t na = gguf_get_arr_n(ga.get(), ta), nb = gguf_get_arr_n(gb.get(), tb);
    if (na != nb) return "the vocabularies have " + std::to_string(na) + " and " + std::to_string(nb) + " tokens";
    for (size_t i = 0; i < na; ++i) {
        if (std::strcmp(gguf_get_arr_str(ga.get(), ta, i), gguf_get_arr_str(gb.get(), tb, i)) != 0) {
            return "token " + std::to_string(i) + " differs";
        }
    }
    return "";
}

std::optional<int64_t> gguf_int(const GgufInfo & info, std::string_view key) {
    for (const auto & e : info.metadata) {
        if (e.key != key) continue;
        if (const auto * v = std::get_if<int64_t>(&e.value)) return *v;
        return std::nullopt;
    }
    return std::nullopt;
}

std::string format_parameter_count(uint64_t n) {
    char buf[32];
    if (n >= 1000000000ULL) std::snprintf(buf, sizeof buf, "%.1fB", n / 1e9);
    else if (n >= 1000000ULL) std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
    else if (n >= 1000ULL) std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
    else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
    return buf;
}

} // namespace specd::engine
