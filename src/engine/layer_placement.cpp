#include "engine/layer_placement.h"

#include "core/error.h"
#include "core/settings.h"

#include <fit.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace specd::engine {

namespace {

// common_fit_params swaps llama.cpp's process-wide logger while it runs.
std::mutex g_fit_mutex;

uint64_t free_bytes(ggml_backend_dev_t dev) {
    size_t free  = 0;
    size_t total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    return free;
}

std::string device_names(const std::vector<ggml_backend_dev_t> & devices) {
    std::string out;
    for (size_t i = 0; i < devices.size(); ++i) {
        out += (i ? ", " : "") + std::to_string(i) + ": " + ggml_backend_dev_name(devices[i]);
    }
    return out;
}

} // namespace

size_t fit_margin_bytes() {
    const auto v = setting("GPU_OVERHEAD");
    if (!v) return k_fit_margin_bytes;
    return *v == "0" ? 0 : static_cast<size_t>(parse_byte_size(*v));
}

std::optional<uint64_t> device_memory_cap() {
    const auto v = setting("GPU_MEMORY");
    if (!v) return std::nullopt;
    try {
        return parse_byte_size(*v);
    } catch (const std::invalid_argument & e) {
        throw std::invalid_argument(std::string("SPECD_GPU_MEMORY: ") + e.what());
    }
}

std::vector<float> fixed_tensor_split() {
    const auto v = setting("TENSOR_SPLIT");
    return v ? parse_tensor_split(*v) : std::vector<float>{};
}

std::vector<float> parse_tensor_split(const std::string & text) {
    std::vector<float> out;
    std::stringstream  in(text);
    std::string        part;
    float              sum = 0;
    while (std::getline(in, part, ',')) {
        size_t used = 0;
        float  x    = 0;
        try {
            x = std::stof(part, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used == 0 || used != part.size() || !(x >= 0) || x > 1e6f) {
            throw std::invalid_argument("SPECD_TENSOR_SPLIT must be a list of non-negative numbers such as 3,1");
        }
        out.push_back(x);
        sum += x;
    }
    if (out.empty() || !(sum > 0) || out.size() > llama_max_devices()) {
        throw std::invalid_argument("SPECD_TENSOR_SPLIT must have 1 to " + std::to_string(llama_max_devices()) +
                                    " proportions with a positive sum");
    }
    return out;
}

LayerPlacement::LayerPlacement(const std::filesystem::path & gguf, const PlacementRequest & request) {
    // No layer to offload: no device at all. Given a device, llama.cpp keeps a compute buffer
    // there for the host's layers (it offloads large batches' products), which is memory the
    // user asked not to use.
    if (request.devices.empty() || (request.num_gpu && *request.num_gpu == 0)) return;
    std::vector<ggml_backend_dev_t> devices = request.devices;
    if (request.main_gpu && size_t(*request.main_gpu) >= devices.size()) {
        throw bad_request("main_gpu " + std::to_string(*request.main_gpu) + " is not an offload device (there are " +
                          std::to_string(devices.size()) + ": " + device_names(devices) + ")");
    }
    const auto done = [&](const std::vector<ggml_backend_dev_t> & used) {
        devices_ = used;
        devices_.push_back(nullptr);
    };

    // A fixed split replaces the fit: the layers are taken as given, all when num_gpu is unset.
    if (const auto split = fixed_tensor_split(); !split.empty()) {
        tensor_split_.assign(llama_max_devices(), 0.0f);
        std::copy_n(split.begin(), std::min(split.size(), devices.size()), tensor_split_.begin());
        split_set_    = true;
        n_gpu_layers_ = request.num_gpu ? *request.num_gpu : -1;
        done(devices);
        return;
    }
    // Ollama's num_gpu: -1 (or unset) is "as many as fit"; a count is taken as given, on
    // main_gpu's device alone when it is set.
    if (request.num_gpu && *request.num_gpu >= 0) {
        n_gpu_layers_ = *request.num_gpu;
        done(request.main_gpu ? std::vector{devices[size_t(*request.main_gpu)]} : devices);
        return;
    }

    // One device first: main_gpu's, else by free memory; the first that holds the whole model
    // (the fit left n_gpu_layers at "all") takes it. Else the fit spreads it over every device.
    std::vector<ggml_backend_dev_t> order = devices;
    if (request.main_gpu) {
        order = {devices[size_t(*request.main_gpu)]};
    } else if (devices.size() > 1) {
        std::stable_sort(order.begin(), order.end(),
                         [](ggml_backend_dev_t a, ggml_backend_dev_t b) { return free_bytes(a) > free_bytes(b); });
    }
    for (ggml_backend_dev_t dev : order) {
        if (fit(gguf, {dev}, request) && n_gpu_layers_ < 0) {
            done({dev});
            return;
        }
        if (devices.size() == 1) break; // the spread below is the same fit
    }
    if (devices.size() > 1 && !fit(gguf, devices, request)) n_gpu_layers_ = 0;
    if (n_gpu_layers_ == 0) {
        std::fprintf(stderr, "specd: %s: no layer fits the offload devices' free memory less SPECD_GPU_OVERHEAD; "
                             "its layers stay on the CPU\n",
                     gguf.filename().c_str());
        return; // no device, as for num_gpu 0
    }
    done(devices);
}

bool LayerPlacement::fit(const std::filesystem::path & gguf, const std::vector<ggml_backend_dev_t> & devices,
                         const PlacementRequest & request) {
    std::vector<ggml_backend_dev_t> list = devices;
    list.push_back(nullptr);
    llama_model_params mp = llama_model_default_params();
    mp.devices            = list.data();
    llama_context_params cp = request.context;
    tensor_split_.assign(llama_max_devices(), 0.0f);
    overrides_.assign(llama_max_tensor_buft_overrides(), {nullptr, nullptr});
    // The fit leaves the margin free on each device, and also what the device reports free
    // beyond its budget (SPECD_GPU_MEMORY, else its total memory) less what the other loaded
    // models hold of it: a driver's free memory already counts other processes' allocations,
    // a budget counts the models of this server wherever they run.
    std::vector<size_t> margins(llama_max_devices(), fit_margin_bytes());
    const auto          cap = device_memory_cap();
    for (size_t i = 0; i < devices.size(); ++i) {
        size_t free  = 0;
        size_t total = 0;
        ggml_backend_dev_memory(devices[i], &free, &total);
        const uint64_t budget = cap ? *cap : total;
        const auto     held   = request.held.find(ggml_backend_dev_name(devices[i]));
        const uint64_t room   = budget - std::min<uint64_t>(budget, held == request.held.end() ? 0 : held->second);
        if (free > room) margins[i] += size_t(free - room);
    }
    // The draft's memory, every layer on these devices, is added to each of the fit's measures.
    llama_model_params     draft_mp = llama_model_default_params();
    llama_context_params   draft_cp = request.context;
    common_fit_extra_model draft{nullptr, &draft_mp, &draft_cp, false};
    if (request.draft) {
        draft.path_model = request.draft->c_str();
        draft_mp.devices = list.data();
    }
    std::lock_guard lock(g_fit_mutex);
    const auto status = common_fit_params(gguf.c_str(), &mp, &cp, tensor_split_.data(), overrides_.data(), margins.data(),
                                          cp.n_ctx, request.draft ? &draft : nullptr, GGML_LOG_LEVEL_ERROR);
    if (status != COMMON_PARAMS_FIT_STATUS_SUCCESS) {
        n_gpu_layers_ = 0; // nothing fits: the CPU holds it all, as without the devices
        split_set_    = false;
        return false;
    }
    n_gpu_layers_ = mp.n_gpu_layers;
    split_set_    = true;
    return true;
}

std::vector<ggml_backend_dev_t> LayerPlacement::devices() const {
    if (devices_.empty()) return {};
    return {devices_.begin(), devices_.end() - 1};
}

void LayerPlacement::apply(llama_model_params & mp) const {
    if (devices_.empty()) {
        // An empty list, not none: without a list llama.cpp takes every GPU it finds.
        static ggml_backend_dev_t no_device[] = {nullptr};
        mp.devices      = no_device;
        mp.n_gpu_layers = 0;
        return;
    }
    mp.devices      = const_cast<ggml_backend_dev_t *>(devices_.data());
    mp.n_gpu_layers = n_gpu_layers_;
    if (split_set_) {
        mp.tensor_split = tensor_split_.data();
        if (!overrides_.empty()) mp.tensor_buft_overrides = overrides_.data();
    }
}

} // namespace specd::engine
