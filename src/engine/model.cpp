#include "engine/model.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/context_memory.h"
#include "engine/text_cutter.h"

#include <fstream>
#include <sstream>

namespace specd::engine {

uint64_t available_memory_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string   key;
    uint64_t      kib = 0;
    std::string   unit;
    while (meminfo >> key >> kib >> unit) {
        if (key == "MemAvailable:") return kib * 1024;
    }
    return 0;
}

bool maps_weights(std::optional<bool> requested) { return requested.value_or(false); }

std::shared_ptr<Model> Model::load(const std::filesystem::path & path, const ModelLoadOptions & opts) {
    ensure_backend();
    const std::string shown = path.filename().string();
    std::shared_ptr<Model> m(new Model());
    m->info_ = read_gguf_info(path);
    m->opts_ = opts;
    if (m->info_.architecture == "clip") {
        throw bad_request(shown + " is a vision projector, not a text model");
    }

    std::error_code ec;
    const uint64_t file_size = std::filesystem::file_size(path, ec);
    const uint64_t available = available_memory_bytes();
    if (!ec && available > 0 && file_size > available) {
        std::ostringstream msg;
        msg.precision(2);
        msg << std::fixed << "model requires more system memory (" << file_size / 1073741824.0
            << " GiB) than is available (" << available / 1073741824.0 << " GiB)";
        throw bad_request(msg.str());
    }

    llama_model_params mp = llama_model_default_params();
    mp.load_mode          = opts.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.vocab_only         = opts.vocab_only;
    mp.load_mtp           = opts.load_mtp && !opts.vocab_only;
    const LayerPlacement placement(path, opts.vocab_only ? PlacementRequest{} : opts.placement);
    placement.apply(mp);
    m->devices_ = placement.devices();

    LogCapture capture;
    m->model_.reset(llama_model_load_from_file(path.c_str(), mp));
    if (!m->model_) {
        const std::string why = capture.first_error();
        if (why.find("unknown model architecture") != std::string::npos) {
            throw bad_request("unsupported model architecture '" + m->info_.architecture + "' in " + shown);
        }
        // llama.cpp's messages may name the file's full path; keep only the reason.
        std::string reason = why;
        if (auto colon = reason.rfind(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
        if (reason.find('/') != std::string::npos) reason = "invalid model data";
        throw bad_request("failed to load model " + shown + (reason.empty() ? "" : ": " + reason));
    }
    m->vocab_     = llama_model_get_vocab(m->model_.get());
    m->offloaded_ = parse_weight_lines(capture.buffer_lines());
    for (const auto & adapter : opts.adapters) {
        // A create checks adapters against the model's header (adapter_check), so a refusal
        // here means the file changed or llama.cpp wants more than that check knows.
        LogCapture       adapter_capture;
        adapter_lora_ptr a(llama_adapter_lora_init(m->model_.get(), adapter.c_str()));
        if (!a) {
            std::string reason = adapter_capture.first_error();
            if (reason.find('/') != std::string::npos) reason = "invalid adapter data";
            throw bad_request("failed to load LoRA adapter " + adapter.filename().string() + " for " + shown +
                              (reason.empty() ? "" : ": " + reason));
        }
        m->adapter_views_.push_back(a.get());
        m->adapters_.push_back(std::move(a));
    }
    return m;
}

std::vector<llama_token> Model::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<llama_token> tokens(text.size() + 8);
    int32_t n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                               static_cast<int32_t>(tokens.size()), add_special, parse_special);
    if (n < 0) {
        tokens.resize(-n);
        n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                           static_cast<int32_t>(tokens.size()), add_special, parse_special);
    }
    if (n < 0) throw Error(ErrorKind::internal, "tokenization failed");
    tokens.resize(n);
    return tokens;
}

Model::~Model() = default;

const TextCutter & Model::text_cutter() const {
    std::call_once(text_cutter_once_, [this] { text_cutter_ = std::make_unique<const TextCutter>(*this); });
    return *text_cutter_;
}

const VocabIndex & Model::vocab_index() const {
    std::call_once(vocab_index_once_, [this] {
        vocab_index_ = std::make_unique<const VocabIndex>(vocab_);
        vocab_index_bytes_.store(vocab_index_->bytes(), std::memory_order_release);
    });
    return *vocab_index_;
}

std::optional<ThreadChoice> Model::measured_threads() const {
    std::lock_guard lock(threads_mu_);
    return measured_threads_;
}

void Model::set_measured_threads(const ThreadChoice & choice) {
    std::lock_guard lock(threads_mu_);
    measured_threads_ = choice;
}

std::string Model::token_piece(llama_token token) const {
    char    buf[256];
    int32_t n = llama_token_to_piece(vocab_, token, buf, sizeof buf, 0, /*special=*/false);
    if (n >= 0) return std::string(buf, n);
    std::string big(-n, '\0');
    n = llama_token_to_piece(vocab_, token, big.data(), static_cast<int32_t>(big.size()), 0, false);
    big.resize(n > 0 ? n : 0);
    return big;
}

} // namespace specd::engine
