// specd-testmodel: writes tiny random-weight GGUF models (llama, gemma4) with a real
// tokenizer, and vision projectors to go with them, for tests that cannot download weights.
// See usage_text below.

#include "bmp_image.h"
#include "gguf_writer.h"
#include "llama_layout.h"
#include "model_quantize.h"
#include "pair_calibration.h"
#include "weight_rng.h"

#include <llama.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

const char * const usage_text =
    "usage:\n"
    "  specd-testmodel --vocab FILE --out FILE [--arch llama|gemma4|qwen2vl] [--quantize TYPE] [model options]\n"
    "  specd-testmodel pair --vocab FILE --target FILE --draft FILE (--agreement P | --alpha A)\n"
    "                  [--extra-layers N] [--draft-type TYPE] [--arch llama|gemma4|qwen2vl] [model options]\n"
    "  specd-testmodel assistant --vocab FILE --target FILE --out FILE (--agreement P | --alpha A)\n"
    "                  [--hidden-weight W] [--output-dims N] [--quantize TYPE] [--draft-type TYPE]\n"
    "                  [gemma4 model options]\n"
    "  specd-testmodel eagle3 --vocab FILE --target FILE --out FILE (--agreement P | --alpha A)\n"
    "                  [--hidden-weight W] [--attention self|uniform] [--quantize TYPE] [model options]\n"
    "  specd-testmodel mtp --vocab FILE --out FILE (--agreement P | --alpha A) [--hidden-weight W]\n"
    "                  [--quantize TYPE] [model options]\n"
    "  specd-testmodel dflash --vocab FILE --target FILE --out FILE (--agreement P | --alpha A)\n"
    "                  [--quantize TYPE] [model options]\n"
    "  specd-testmodel agreement --draft FILE --target FILE [--seed N]\n"
    "  specd-testmodel projector --type gemma3|gemma4v|qwen2.5vl_merger|qwen2vl_merger --n-embd-text N --out FILE\n"
    "                  [options]\n"
    "  specd-testmodel lora --out FILE [--rank N] [--alpha A] [model options]\n"
    "  specd-testmodel image --out FILE.bmp [--width N] [--height N] [--seed N]\n"
    "\n"
    "Writes tiny random-weight GGUF models whose tokenizer and chat template come from a\n"
    "vocab-only GGUF (llama.cpp's models/ggml-vocab-*.gguf). The same options and seed always\n"
    "give the same bytes. A model that answers (not a head) has zero output rows for the\n"
    "vocab's end-of-generation tokens: it ends at a length, a stop string or a grammar only.\n"
    "  --arch A            llama (default) or gemma4: dense, every third layer full attention,\n"
    "                      the others a sliding window of 256 tokens, head size n_embd / n_head,\n"
    "                      2 KV heads unless --n-head-kv; qwen2vl: llama's tensors with M-RoPE\n"
    "                      (the text side of Qwen2-VL and Qwen2.5-VL)\n"
    "  --quantize TYPE     q8_0|q4_0|q4_k|f16 after writing (a 262k vocabulary in F32 is 64 MiB\n"
    "                      per matrix)\n"
    "\n"
    "model options:\n"
    "  --n-embd N          embedding size (default 64)\n"
    "  --n-layer N         layers; in pair mode, the draft's layers (default 2)\n"
    "  --n-head N          attention heads (default 4)\n"
    "  --n-head-kv N       KV heads (default: --n-head)\n"
    "  --n-ff N            feed-forward size (default 128)\n"
    "  --n-ctx-train N     training context length (default 4096)\n"
    "  --seed N            weight seed (default 1)\n"
    "  --chat-template F   use the text of F (a .jinja file) as tokenizer.chat_template\n"
    "\n"
    "pair mode: the draft shares the target's embeddings, output and first layers; the target\n"
    "adds --extra-layers (default 2) layers whose outputs are scaled by alpha. alpha is\n"
    "calibrated with libllama until the greedy choices of the two agree on a fraction P\n"
    "(0..1) of teacher-forced positions; --alpha A skips the calibration. The measured\n"
    "agreement is printed. --draft-type q8_0|q4_0|q4_k|f16 quantizes the draft (before the\n"
    "calibration, which then measures the quantized draft), so that it costs a few percent of\n"
    "the target's step, as a real draft does. With --arch gemma4 the draft has at least 3\n"
    "layers, and the target's added layers are scaled through their post norms.\n"
    "\n"
    "assistant mode: a gemma4 target and a gemma4-assistant head (an MTP drafter) for it.\n"
    "The head passes the drafted token's embedding through and repeats the target's output\n"
    "rows, so it chooses what the target would with all its layers off; the target's layers\n"
    "are all scaled by alpha, calibrated (as in pair mode, against the target at alpha 0) to\n"
    "agreement P, or given. The target's hidden state reaches the head's choice through\n"
    "--hidden-weight (default 0.01) times a random projection. --quantize quantizes both;\n"
    "--draft-type TYPE quantizes the head to TYPE (over --quantize's type for it), so that its\n"
    "step costs a fraction of the target's, as a real assistant's does (the agreement is\n"
    "calibrated on the unquantized function). --output-dims N: the target's output reads only\n"
    "the first N of its hidden state's dimensions (rescaled to the same logit spread), and the\n"
    "head is N + 32 wide instead of the target's width + 32 (a real assistant is far narrower\n"
    "than its target; its projection onto the vocabulary is most of its step).\n"
    "\n"
    "eagle3 mode: a llama target and an EAGLE3 head for it (one decoder layer with its own KV\n"
    "cache, fed the inputs of the target's first, middle and last layers). The head's attention\n"
    "looks at its own position only and passes the token's embedding to the target's output\n"
    "rows, so it chooses what the target would with all its layers off; alpha, calibration,\n"
    "--hidden-weight (the weight of the target's features, default 0.01) and --quantize (the\n"
    "target only) as in assistant mode. --attention uniform: for tests of how the head's cache\n"
    "is fed, its attention weighs every position alike, so its drafts depend on every pair the\n"
    "cache holds (the agreement is then not the head's).\n"
    "\n"
    "mtp mode: a glm4moe model that carries one MTP layer (a nextn layer: it drafts the token\n"
    "after next from the next token and the model's last hidden state), its trunk dense. The\n"
    "layer passes the token's embedding to the output rows, so it chooses what the trunk would\n"
    "with all its layers off; alpha, calibration, --hidden-weight (the hidden state's weight,\n"
    "default 0.01) and --quantize as in assistant mode.\n"
    "\n"
    "dflash mode: a llama target and a DFlash head for it (one layer with its own\n"
    "cache of the encoded inputs of the target's first, middle and last layers; it drafts a\n"
    "block of mask tokens in one decode). Every mask chooses what the target would with all its\n"
    "layers off after the token the block continues, so the first drafted token agrees as\n"
    "alpha allows and the later ones by chance; the target's output reads all but 16 of its\n"
    "dimensions (the head's ones are its own). Alpha, calibration and --quantize (the target\n"
    "only) as in assistant mode.\n"
    "\n"
    "agreement mode: prints the measured agreement of two existing models.\n"
    "\n"
    "projector mode: writes a tiny random-weight vision projector (an mmproj GGUF, loaded with\n"
    "mtmd_init_from_file next to a text model whose n_embd is --n-embd-text).\n"
    "gemma3: a SigLIP ViT whose patches are average-pooled --merge x --merge, so every image is\n"
    "(image-size / patch-size / merge)^2 tokens. gemma4v: gemma4's vision tower; mtmd resizes\n"
    "each image to 70-1120 cells of patch-size x merge pixels, keeping its aspect, one token per\n"
    "cell (with the default patch size, as many tokens as the real model gives). qwen2.5vl_merger:\n"
    "Qwen2.5-VL's ViT and 2x2 merger; images become 8-4096 tokens in multiples of 28 pixels,\n"
    "placed with M-RoPE positions. qwen2vl_merger: Qwen2-VL's (LayerNorms, an ungated feed-forward,\n"
    "no window attention), placed the same way.\n"
    "  --image-size N      gemma3: side of the square the image is resized to (default 64);\n"
    "                      gemma4v: nominal (default 224)\n"
    "  --patch-size N      ViT patch side (default 4; gemma4v 16)\n"
    "  --merge N           pooling kernel side (default 4; gemma4v 3)\n"
    "  --n-embd N          ViT embedding size (default 32)\n"
    "  --n-layer N         ViT layers (default 2)\n"
    "  --n-head N          ViT attention heads (default 2)\n"
    "  --n-ff N            ViT feed-forward size (default 64)\n"
    "  --seed N            weight seed (default 1)\n"
    "  --defect norm       gemma3, for tests: a projector that loads but aborts the process\n"
    "                      (GGML_ASSERT) on its first image\n"
    "\n"
    "lora mode: writes a random LoRA adapter (general.type adapter) for the model that the same\n"
    "model options describe (no vocabulary needed: an adapter has no tokenizer). Every\n"
    "attention and feed-forward matrix gets a lora_a/lora_b pair.\n"
    "  --rank N            LoRA rank (default 8)\n"
    "  --alpha A           adapter.lora.alpha; the update is scaled by alpha / rank (default: rank)\n"
    "\n"
    "image mode: writes a test picture, a 24-bit BMP with a pattern of its size and seed\n"
    "(default 64 x 64, seed 1), for examples that send an image.\n";

// Thrown for anything the user typed wrong: usage is shown, exit code 1.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct cli_options {
    std::string mode; // "", "pair", "assistant", "eagle3", "mtp", "dflash", "agreement", "projector", "lora" or "image"
    std::map<std::string, std::string> values;

    bool has(const std::string & key) const { return values.count(key) != 0; }

    const std::string & required(const std::string & key) const {
        const auto it = values.find(key);
        if (it == values.end()) {
            throw usage_error("missing " + key);
        }
        return it->second;
    }
};

cli_options parse_cli(int argc, char ** argv) {
    using names = std::vector<std::string_view>;
    static const names model_options = {
        "--n-embd", "--n-layer", "--n-head", "--n-head-kv", "--n-ff", "--n-ctx-train", "--seed", "--chat-template",
    };
    static const std::map<std::string_view, names> mode_options = {
        {"", {"--vocab", "--out", "--arch", "--quantize"}},
        {"pair", {"--vocab", "--target", "--draft", "--agreement", "--extra-layers", "--alpha", "--draft-type", "--arch"}},
        {"agreement", {"--draft", "--target", "--seed"}},
        {"assistant", {"--vocab", "--target", "--out", "--agreement", "--alpha", "--hidden-weight", "--output-dims", "--quantize", "--draft-type"}},
        {"eagle3", {"--vocab", "--target", "--out", "--agreement", "--alpha", "--hidden-weight", "--quantize", "--attention"}},
        {"mtp", {"--vocab", "--out", "--agreement", "--alpha", "--hidden-weight", "--quantize"}},
        {"dflash", {"--vocab", "--target", "--out", "--agreement", "--alpha", "--quantize"}},
        {"projector", {"--type", "--n-embd-text", "--out", "--image-size", "--patch-size", "--merge", "--n-embd",
                       "--n-layer", "--n-head", "--n-ff", "--seed", "--defect"}},
        {"lora", {"--out", "--rank", "--alpha"}},
        {"image", {"--out", "--width", "--height", "--seed"}},
    };

    cli_options opts;
    int i = 1;
    if (i < argc && mode_options.count(argv[i]) != 0) {
        opts.mode = argv[i++];
    }
    const names & allowed = mode_options.at(opts.mode);
    const bool with_model_options = opts.mode.empty() || opts.mode == "pair" || opts.mode == "lora" || opts.mode == "assistant" ||
                                    opts.mode == "eagle3" || opts.mode == "mtp" || opts.mode == "dflash";
    for (; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            throw usage_error("");
        }
        const auto in = [&](const names & list) { return std::find(list.begin(), list.end(), arg) != list.end(); };
        if (!in(allowed) && !(with_model_options && in(model_options))) {
            throw usage_error("unknown argument " + std::string(arg) +
                              (opts.mode.empty() ? std::string() : " for " + opts.mode));
        }
        if (i + 1 >= argc) {
            throw usage_error(std::string(arg) + " needs a value");
        }
        opts.values[std::string(arg)] = argv[++i];
    }
    return opts;
}

template <typename T>
T parse_number(const std::string & key, const std::string & text) {
    T value{};
    const char * end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) {
        throw usage_error(key + ": not a valid number: '" + text + "'");
    }
    return value;
}

uint64_t parse_seed(const cli_options & opts) {
    return opts.has("--seed") ? parse_number<uint64_t>("--seed", opts.values.at("--seed")) : 1;
}

uint32_t parse_count(const cli_options & opts, const std::string & key, uint32_t fallback) {
    if (!opts.has(key)) {
        return fallback;
    }
    const auto value = parse_number<uint32_t>(key, opts.values.at(key));
    if (value == 0) {
        throw usage_error(key + " must be positive");
    }
    return value;
}

// Required: only called for options that must be present.
double parse_real(const cli_options & opts, const std::string & key, double lo, double hi) {
    const auto value = parse_number<double>(key, opts.required(key));
    if (!std::isfinite(value) || value < lo || value > hi) {
        std::ostringstream msg;
        msg << key << " must be in [" << lo << ", " << hi << "], got " << value;
        throw usage_error(msg.str());
    }
    return value;
}

std::string read_text_file(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw usage_error("cannot read " + path);
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

model_write_params parse_model_params(const cli_options & opts) {
    model_write_params params;
    llama_hparams_spec & hp = params.hparams;
    hp.n_embd      = parse_count(opts, "--n-embd", hp.n_embd);
    hp.n_layer     = parse_count(opts, "--n-layer", hp.n_layer);
    hp.n_head      = parse_count(opts, "--n-head", hp.n_head);
    hp.n_head_kv   = parse_count(opts, "--n-head-kv", hp.n_head);
    hp.n_ff        = parse_count(opts, "--n-ff", hp.n_ff);
    hp.n_ctx_train = parse_count(opts, "--n-ctx-train", hp.n_ctx_train);
    if (const std::string problem = llama_hparams_check(hp); !problem.empty()) {
        throw usage_error(problem);
    }
    params.seed = parse_seed(opts);
    if (opts.has("--chat-template")) {
        params.chat_template = read_text_file(opts.values.at("--chat-template"));
    }
    return params;
}

void describe(const std::string & path, uint64_t size, const vocab_file & vocab, const model_write_params & params) {
    const llama_hparams_spec & hp = params.hparams;
    std::printf("wrote %s: %llu bytes, n_vocab %u, n_embd %u, n_layer %u, n_head %u, n_head_kv %u, n_ff %u, seed %llu, chat template %s\n",
                path.c_str(), (unsigned long long) size, vocab.n_vocab, hp.n_embd, hp.n_layer, hp.n_head,
                hp.n_head_kv, hp.n_ff, (unsigned long long) params.seed,
                params.chat_template || vocab.has_chat_template ? "yes" : "no");
}

void describe(const std::string & path, uint64_t size, const vocab_file & vocab, const glm4moe_write_params & params) {
    const llama_hparams_spec & hp = params.hparams;
    std::printf("wrote %s: %llu bytes, glm4moe, n_vocab %u, n_embd %u, n_layer %u + 1 MTP layer, n_head %u, "
                "n_ff %u, seed %llu\n",
                path.c_str(), (unsigned long long) size, vocab.n_vocab, hp.n_embd, hp.n_layer, hp.n_head, hp.n_ff,
                (unsigned long long) params.seed);
}

void describe(const std::string & path, uint64_t size, const vocab_file & vocab, const gemma4_write_params & params) {
    const gemma4_hparams_spec & hp = params.hparams;
    std::printf("wrote %s: %llu bytes, gemma4, n_vocab %u, n_embd %u, n_layer %u, n_head %u, n_head_kv %u, "
                "head %u, n_ff %u, window %u, seed %llu\n",
                path.c_str(), (unsigned long long) size, vocab.n_vocab, hp.n_embd, hp.n_layer, hp.n_head,
                hp.n_head_kv, hp.head_dim, hp.n_ff, hp.n_swa, (unsigned long long) params.seed);
}

// The positions agreement is measured on: seeded random token ids, so every part of the
// vocabulary and no particular text is favoured; 384 positions resolve agreement to ~0.003.
std::vector<llama_token> probe_tokens(uint32_t n_vocab, uint64_t seed) {
    weight_rng rng(seed, "agreement-probe");
    std::vector<llama_token> tokens(384);
    for (llama_token & t : tokens) {
        t = llama_token(rng.below(n_vocab));
    }
    return tokens;
}

gemma4_write_params parse_gemma4_params(const cli_options & opts) {
    gemma4_write_params params;
    gemma4_hparams_spec & hp = params.hparams;
    hp.n_embd       = parse_count(opts, "--n-embd", hp.n_embd);
    hp.n_layer      = parse_count(opts, "--n-layer", hp.n_layer);
    hp.n_head       = parse_count(opts, "--n-head", hp.n_head);
    hp.n_head_kv    = parse_count(opts, "--n-head-kv", hp.n_head_kv);
    hp.n_ff         = parse_count(opts, "--n-ff", hp.n_ff);
    hp.n_ctx_train  = parse_count(opts, "--n-ctx-train", hp.n_ctx_train);
    if (hp.n_embd % hp.n_head != 0) {
        throw usage_error("--n-embd must be a multiple of --n-head");
    }
    hp.head_dim     = hp.n_embd / hp.n_head;
    hp.head_dim_swa = hp.head_dim;
    if (const std::string problem = gemma4_hparams_check(hp); !problem.empty()) {
        throw usage_error(problem);
    }
    params.seed = parse_seed(opts);
    if (opts.has("--chat-template")) {
        params.chat_template = read_text_file(opts.values.at("--chat-template"));
    }
    return params;
}

// --arch: llama (the default), gemma4, or qwen2vl (written by llama's layout, with M-RoPE).
std::string parse_arch(const cli_options & opts) {
    const std::string arch = opts.has("--arch") ? opts.values.at("--arch") : "llama";
    if (arch != "llama" && arch != "gemma4" && arch != "qwen2vl") {
        throw usage_error("--arch: llama, gemma4 or qwen2vl, got '" + arch + "'");
    }
    return arch;
}

// The model options for an architecture written by llama's layout (every --arch but gemma4).
model_write_params parse_llama_layout_params(const cli_options & opts, const std::string & arch) {
    model_write_params params = parse_model_params(opts);
    params.hparams.arch       = arch;
    return params;
}

int run_single(const cli_options & opts) {
    const vocab_file vocab = vocab_file_load(opts.required("--vocab"));
    const std::string & out = opts.required("--out");
    const std::string arch = parse_arch(opts);
    if (arch == "gemma4") {
        const gemma4_write_params params = parse_gemma4_params(opts);
        describe(out, gemma4_model_write(out, vocab, params), vocab, params);
    } else {
        const model_write_params params = parse_llama_layout_params(opts, arch);
        if (const std::string problem = llama_hparams_check(params.hparams); !problem.empty()) {
            throw usage_error(problem);
        }
        describe(out, model_write(out, vocab, params), vocab, params);
    }
    if (opts.has("--quantize")) {
        model_quantize_in_place(out, opts.values.at("--quantize"));
        std::printf("quantized %s to %s: %llu bytes\n", out.c_str(), opts.values.at("--quantize").c_str(),
                    (unsigned long long) std::filesystem::file_size(out));
    }
    return 0;
}

// Writes a pair's draft and (for each alpha asked) target of one architecture.
struct pair_writer {
    std::function<void(const std::string & path)>                   write_draft;
    std::function<uint64_t(const std::string & path, double alpha)> write_target;
    std::function<void(const std::string & path, uint64_t size)>    describe_target;
    uint64_t                                                        seed = 1;
};

// The draft as `draft` says, the target with n_extra more layers. Same seed and tensor names,
// so the target's embeddings, output and first layers are bit-identical to the draft's; only
// the extra layers differ, scaled by the alpha each target is written with.
template <typename Params>
pair_writer pair_of(const vocab_file & vocab, const Params & draft, uint32_t n_extra,
                    uint64_t (*write)(const std::string &, const vocab_file &, const Params &)) {
    Params target                    = draft;
    target.hparams.scaled_from_layer = draft.hparams.n_layer;
    target.hparams.n_layer          += n_extra;
    pair_writer w;
    w.seed        = draft.seed;
    w.write_draft = [&vocab, draft, write](const std::string & path) { describe(path, write(path, vocab, draft), vocab, draft); };
    w.write_target = [&vocab, target, write](const std::string & path, double alpha) mutable {
        target.hparams.residual_scale = alpha;
        return write(path, vocab, target);
    };
    w.describe_target = [&vocab, target](const std::string & path, uint64_t size) { describe(path, size, vocab, target); };
    return w;
}

// The target at the alpha --alpha gives, or at the alpha calibrated to agreement `want`
// (pair_calibrate) when it gives none; the target on disk is the one returned.
pair_calibration_result calibrate_or_write(const cli_options & opts, const agreement_probe & probe, double want,
                                           const std::function<std::string(double)> & write_target) {
    if (!opts.has("--alpha")) return pair_calibrate(probe, want, write_target);
    pair_calibration_result result;
    result.residual_scale = parse_real(opts, "--alpha", 0.0, 1e6);
    result.agreement      = probe.measure(write_target(result.residual_scale));
    result.n_evals        = 1;
    return result;
}

int run_pair(const cli_options & opts) {
    const vocab_file vocab = vocab_file_load(opts.required("--vocab"));
    const std::string & draft_path  = opts.required("--draft");
    const std::string & target_path = opts.required("--target");
    const bool calibrate = !opts.has("--alpha");
    const double want = calibrate ? parse_real(opts, "--agreement", 0.0, 1.0) : 0.0;
    const uint32_t n_extra = parse_count(opts, "--extra-layers", 2);
    if (draft_path == target_path) {
        throw usage_error("--draft and --target must be different files");
    }
    const std::string arch = parse_arch(opts);
    const pair_writer w = arch == "gemma4" ? pair_of(vocab, parse_gemma4_params(opts), n_extra, &gemma4_model_write)
                                           : pair_of(vocab, parse_llama_layout_params(opts, arch), n_extra, &model_write);

    w.write_draft(draft_path);
    if (opts.has("--draft-type")) {
        model_quantize_in_place(draft_path, opts.values.at("--draft-type"));
        std::printf("quantized %s to %s: %llu bytes\n", draft_path.c_str(), opts.values.at("--draft-type").c_str(),
                    (unsigned long long) std::filesystem::file_size(draft_path));
    }

    uint64_t target_size = 0;
    const auto write_target = [&](double alpha) {
        target_size = w.write_target(target_path, alpha);
        return target_path;
    };

    const agreement_probe probe(draft_path, probe_tokens(vocab.n_vocab, w.seed));
    const pair_calibration_result result = calibrate_or_write(opts, probe, want, write_target);
    w.describe_target(target_path, target_size);
    if (calibrate) {
        std::printf("agreement %.4f (requested %.4f, alpha %.6g, %zu positions, %d evaluations)\n",
                    result.agreement, want, result.residual_scale, probe.n_positions(), result.n_evals);
    } else {
        std::printf("agreement %.4f (alpha %.6g, %zu positions)\n", result.agreement, result.residual_scale,
                    probe.n_positions());
    }

    if (calibrate && std::abs(result.agreement - want) > 0.1) {
        std::fprintf(stderr, "error: could not reach agreement %.3f with this pair (closest: %.3f)\n", want,
                     result.agreement);
        return 1;
    }
    return 0;
}

std::optional<std::string> optional_value(const cli_options & opts, const std::string & key) {
    return opts.has(key) ? std::optional(opts.values.at(key)) : std::nullopt;
}

// A head's target (--target), every layer scaled by alpha: calibrated against itself with
// every layer off (the head's function) to --agreement, or written at --alpha; quantized
// after the calibration when asked.
template <typename Params>
int calibrate_head_target(const cli_options & opts, const vocab_file & vocab, Params target,
                          uint64_t (*write)(const std::string &, const vocab_file &, const Params &),
                          const std::string & target_path, const std::optional<std::string> & quantize) {
    const bool          calibrate   = !opts.has("--alpha");
    const double        want        = calibrate ? parse_real(opts, "--agreement", 0.0, 1.0) : 0.0;
    const std::string   reference   = target_path + ".reference.tmp";
    struct Remove {
        std::string path;
        ~Remove() { std::filesystem::remove(path); }
    } remove_reference{reference};
    target.hparams.residual_scale = 0.0;
    write(reference, vocab, target);
    const agreement_probe probe(reference, probe_tokens(vocab.n_vocab, target.seed));

    uint64_t   target_size  = 0;
    const auto write_target = [&](double alpha) {
        target.hparams.residual_scale = alpha;
        target_size                   = write(target_path, vocab, target);
        return target_path;
    };
    const pair_calibration_result result = calibrate_or_write(opts, probe, want, write_target);
    if (quantize) {
        model_quantize_in_place(target_path, *quantize);
        target_size = std::filesystem::file_size(target_path);
    }
    describe(target_path, target_size, vocab, target);
    std::printf("agreement with the head's function %.4f (alpha %.6g, %zu positions, %d evaluations%s)\n",
                result.agreement, result.residual_scale, probe.n_positions(), result.n_evals,
                quantize ? ", measured before quantization" : "");
    if (calibrate && std::abs(result.agreement - want) > 0.1) {
        std::fprintf(stderr, "error: could not reach agreement %.3f (closest: %.3f)\n", want, result.agreement);
        return 1;
    }
    return 0;
}

int run_assistant(const cli_options & opts) {
    const vocab_file    vocab       = vocab_file_load(opts.required("--vocab"));
    const std::string & target_path = opts.required("--target");
    const std::string & out         = opts.required("--out");
    if (target_path == out) throw usage_error("--target and --out must be different files");

    gemma4_write_params target = parse_gemma4_params(opts);
    target.hparams.scaled_from_layer = 0; // every layer: at alpha 0 the target is the head's function
    target.hparams.output_dims       = parse_count(opts, "--output-dims", 0);
    gemma4_assistant_spec spec;
    spec.target      = target.hparams;
    spec.target_seed = target.seed;
    if (opts.has("--hidden-weight")) spec.hidden_weight = parse_real(opts, "--hidden-weight", 0.0, 10.0);
    if (const std::string problem = gemma4_assistant_check(spec); !problem.empty()) throw usage_error(problem);
    const std::optional<std::string> quantize  = optional_value(opts, "--quantize");
    const std::optional<std::string> head_type = optional_value(opts, "--draft-type");

    gemma4_assistant_write(out, vocab, spec);
    if (head_type || quantize) model_quantize_in_place(out, head_type ? *head_type : *quantize);
    std::printf("wrote %s: %llu bytes, gemma4-assistant, n_vocab %u, n_embd %u (target %u), n_layer %u, n_head %u, "
                "hidden weight %g, seed %llu\n",
                out.c_str(), (unsigned long long) std::filesystem::file_size(out), vocab.n_vocab, spec.n_embd(),
                spec.target.n_embd, spec.n_layer, spec.n_head, spec.hidden_weight, (unsigned long long) target.seed);

    return calibrate_head_target(opts, vocab, target, &gemma4_model_write, target_path, quantize);
}

int run_eagle3(const cli_options & opts) {
    const vocab_file    vocab       = vocab_file_load(opts.required("--vocab"));
    const std::string & target_path = opts.required("--target");
    const std::string & out         = opts.required("--out");
    if (target_path == out) throw usage_error("--target and --out must be different files");

    model_write_params target = parse_llama_layout_params(opts, "llama");
    target.hparams.scaled_from_layer = 0; // every layer: at alpha 0 the target is the head's function
    eagle3_spec spec;
    spec.target      = target.hparams;
    spec.target_seed = target.seed;
    spec.layers      = eagle3_default_layers(target.hparams.n_layer);
    if (opts.has("--hidden-weight")) spec.hidden_weight = parse_real(opts, "--hidden-weight", 0.0, 10.0);
    if (opts.has("--attention")) {
        const std::string & a = opts.values.at("--attention");
        if (a != "self" && a != "uniform") throw usage_error("--attention: self or uniform, got '" + a + "'");
        spec.uniform_attention = a == "uniform";
    }
    if (const std::string problem = eagle3_check(spec); !problem.empty()) throw usage_error(problem);
    const std::optional<std::string> quantize = optional_value(opts, "--quantize");

    eagle3_write(out, vocab, spec);
    std::printf("wrote %s: %llu bytes, eagle3, n_vocab %u, n_embd %u (target %u), layers %u %u %u, "
                "hidden weight %g, seed %llu\n",
                out.c_str(), (unsigned long long) std::filesystem::file_size(out), vocab.n_vocab, spec.n_embd(),
                spec.target.n_embd, spec.layers[0], spec.layers[1], spec.layers[2], spec.hidden_weight,
                (unsigned long long) target.seed);
    return calibrate_head_target(opts, vocab, target, &model_write, target_path, quantize);
}

int run_dflash(const cli_options & opts) {
    const vocab_file    vocab       = vocab_file_load(opts.required("--vocab"));
    const std::string & target_path = opts.required("--target");
    const std::string & out         = opts.required("--out");
    if (target_path == out) throw usage_error("--target and --out must be different files");

    model_write_params target = parse_llama_layout_params(opts, "llama");
    target.hparams.scaled_from_layer = 0; // every layer: at alpha 0 the target is the head's function
    dflash_spec spec;
    target.hparams.output_dims = target.hparams.n_embd - spec.n_ones; // what the head carries
    spec.target      = target.hparams;
    spec.target_seed = target.seed;
    spec.layers      = eagle3_default_layers(target.hparams.n_layer);
    if (const std::string problem = dflash_check(spec); !problem.empty()) throw usage_error(problem);
    const std::optional<std::string> quantize = optional_value(opts, "--quantize");

    dflash_write(out, vocab, spec);
    std::printf("wrote %s: %llu bytes, dflash, n_vocab %u, n_embd %u, layers %u %u %u, block %u, mask token %u, "
                "seed %llu\n",
                out.c_str(), (unsigned long long) std::filesystem::file_size(out), vocab.n_vocab, spec.target.n_embd,
                spec.layers[0], spec.layers[1], spec.layers[2], spec.block_size, dflash_mask_token(vocab.n_vocab),
                (unsigned long long) target.seed);
    return calibrate_head_target(opts, vocab, target, &model_write, target_path, quantize);
}

int run_mtp(const cli_options & opts) {
    const vocab_file     vocab = vocab_file_load(opts.required("--vocab"));
    const std::string &  out   = opts.required("--out");
    glm4moe_write_params model;
    const model_write_params trunk = parse_model_params(opts);
    model.hparams                   = trunk.hparams;
    model.seed                      = trunk.seed;
    model.hparams.scaled_from_layer = 0; // every layer: at alpha 0 the trunk is the MTP layer's function
    if (opts.has("--hidden-weight")) model.mtp.hidden_weight = parse_real(opts, "--hidden-weight", 0.0, 10.0);
    if (const std::string problem = glm4moe_check(model); !problem.empty()) throw usage_error(problem);
    const std::optional<std::string> quantize = optional_value(opts, "--quantize");
    std::printf("glm4moe with one MTP layer: %u experts of %u, hidden weight %g, attention weight %g\n",
                model.mtp.n_expert, model.mtp.n_ff_exp, model.mtp.hidden_weight, model.mtp.attention_weight);
    return calibrate_head_target(opts, vocab, model, &glm4moe_model_write, out, quantize);
}

int run_agreement(const cli_options & opts) {
    const std::string & draft_path  = opts.required("--draft");
    const std::string & target_path = opts.required("--target");
    const vocab_file vocab = vocab_file_load(draft_path);
    const uint64_t seed = parse_seed(opts);
    const agreement_probe probe(draft_path, probe_tokens(vocab.n_vocab, seed));
    std::printf("agreement %.4f (%zu positions)\n", probe.measure(target_path), probe.n_positions());
    return 0;
}

int run_projector(const cli_options & opts) {
    const std::string &                 type = opts.required("--type");
    const std::optional<projector_kind> kind = projector_kind_named(type);
    if (!kind) {
        throw usage_error("--type: gemma3, gemma4v, qwen2.5vl_merger or qwen2vl_merger, got '" + type + "'");
    }
    projector_write_params params;
    params.hparams = clip_hparams_default(*kind);
    clip_hparams_spec & hp = params.hparams;
    hp.n_embd_text = parse_count(opts, "--n-embd-text", 0);
    if (hp.n_embd_text == 0) {
        throw usage_error("missing --n-embd-text");
    }
    hp.image_size = parse_count(opts, "--image-size", hp.image_size);
    hp.patch_size = parse_count(opts, "--patch-size", hp.patch_size);
    hp.n_merge    = parse_count(opts, "--merge", hp.n_merge);
    hp.n_embd     = parse_count(opts, "--n-embd", hp.n_embd);
    hp.n_layer    = parse_count(opts, "--n-layer", hp.n_layer);
    hp.n_head     = parse_count(opts, "--n-head", hp.n_head);
    hp.n_ff       = parse_count(opts, "--n-ff", hp.n_ff);
    if (const std::string problem = clip_hparams_check(hp); !problem.empty()) {
        throw usage_error(problem);
    }
    params.seed = parse_seed(opts);
    if (opts.has("--defect")) {
        if (opts.values.at("--defect") != "norm" || hp.kind != projector_kind::gemma3) {
            throw usage_error("--defect: only 'norm', for a gemma3 projector");
        }
        hp.broken_norm = true;
    }

    const std::string & out = opts.required("--out");
    const uint64_t size = projector_write(out, params);
    const std::string tokens = hp.kind == projector_kind::gemma3    ? std::to_string(hp.n_image_tokens()) + " image tokens"
                               : hp.kind == projector_kind::gemma4v ? "70-1120 image tokens"
                                                                    : "8-4096 image tokens, M-RoPE";
    std::printf("wrote %s: %llu bytes, %s projector, image %ux%u, patch %u, merge %u, %s, "
                "n_embd %u, n_layer %u, n_head %u, n_ff %u, n_embd_text %u, seed %llu\n",
                out.c_str(), (unsigned long long) size, hp.type_name(), hp.image_size, hp.image_size, hp.patch_size,
                hp.n_merge, tokens.c_str(), hp.n_embd, hp.n_layer, hp.n_head, hp.n_ff, hp.n_embd_text,
                (unsigned long long) params.seed);
    return 0;
}

int run_lora(const cli_options & opts) {
    if (opts.has("--chat-template")) {
        throw usage_error("--chat-template: an adapter has no tokenizer");
    }
    const model_write_params model = parse_model_params(opts);
    lora_write_params params;
    params.spec.base  = model.hparams;
    params.spec.rank  = parse_count(opts, "--rank", params.spec.rank);
    params.spec.alpha = opts.has("--alpha") ? float(parse_real(opts, "--alpha", 0.0, 1e6)) : float(params.spec.rank);
    params.seed       = model.seed;
    const std::string & out = opts.required("--out");
    const uint64_t size = lora_write(out, params);
    const llama_hparams_spec & hp = params.spec.base;
    std::printf("wrote %s: %llu bytes, LoRA adapter rank %u, alpha %g, for n_embd %u, n_layer %u, n_head %u, "
                "n_head_kv %u, n_ff %u, seed %llu\n",
                out.c_str(), (unsigned long long) size, params.spec.rank, params.spec.alpha, hp.n_embd, hp.n_layer,
                hp.n_head, hp.n_head_kv, hp.n_ff, (unsigned long long) params.seed);
    return 0;
}

// libllama narrates every load; a fixture generator should only speak up about errors.
void log_errors_only(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

} // namespace

int main(int argc, char ** argv) {
    llama_log_set(log_errors_only, nullptr);
    llama_backend_init();
    int rc = 1;
    try {
        const cli_options opts = parse_cli(argc, argv);
        if (opts.mode == "pair") {
            rc = run_pair(opts);
        } else if (opts.mode == "assistant") {
            rc = run_assistant(opts);
        } else if (opts.mode == "eagle3") {
            rc = run_eagle3(opts);
        } else if (opts.mode == "mtp") {
            rc = run_mtp(opts);
        } else if (opts.mode == "dflash") {
            rc = run_dflash(opts);
        } else if (opts.mode == "agreement") {
            rc = run_agreement(opts);
        } else if (opts.mode == "projector") {
            rc = run_projector(opts);
        } else if (opts.mode == "lora") {
            rc = run_lora(opts);
        } else if (opts.mode == "image") {
            testmodel::write_bmp(opts.required("--out"), parse_count(opts, "--width", 64), parse_count(opts, "--height", 64),
                                 parse_count(opts, "--seed", 1));
            rc = 0;
        } else {
            rc = run_single(opts);
        }
    } catch (const usage_error & e) {
        if (e.what()[0] == '\0') {
            std::fputs(usage_text, stdout);
            rc = 0;
        } else {
            std::fprintf(stderr, "error: %s (see --help)\n", e.what());
        }
    } catch (const std::exception & e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    }
    llama_backend_free();
    return rc;
}
