#pragma once
// One Store::create, as its steps (private to the store's files). Checks first, so that a bad
// Modelfile writes nothing: the Modelfile's own lines, then every source (FROM, a vision
// projector on a second FROM line, DRAFT, ADAPTER) found and checked. Then the writes, in
// manifest order: the model layer (a new GGUF, quantized through a temp file, or a stored
// model's), the projector, adapters, draft (quantized the same way), parameters and texts,
// then the config blob and the manifest, last.
#include "models/store.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::models {

class StoreCreate {
  public:
    // Everything is borrowed for the duration of run().
    StoreCreate(Store & store, const Modelfile & mf, const std::filesystem::path & modelfile_dir,
                const CreateOptions & options);
    StoreCreate(const StoreCreate &)             = delete;
    StoreCreate & operator=(const StoreCreate &) = delete;

    // Every step, under a WriteGuard from the first source lookup to the manifest; returns
    // the manifest written for `name`.
    Manifest run(const ModelName & name);

  private:
    // What a FROM/DRAFT/ADAPTER line names: a GGUF file or a stored model.
    struct Source {
        std::optional<std::filesystem::path> file;
        std::optional<Manifest>              model;
    };

    // --- checks: nothing is written yet
    void   check_modelfile() const;
    Source find_source(const std::string & value, const char * what) const;
    void   find_model_and_projector();
    void   find_draft();
    void   find_adapters();

    // --- writes, in manifest order
    void                 store_model_layer();
    void                 rewrite_model(); // the API's quantize
    std::optional<Layer> projector_layer();
    void                 add_adapter_layers(std::vector<Layer> & layers);
    std::optional<Layer> draft_layer();
    Layer                rewrite_draft(const std::filesystem::path & draft_gguf); // the API's draft_quantize
    Parameters           parameters() const;
    void                 add_text_layers(std::vector<Layer> & layers);
    void                 add_foreign_layers(std::vector<Layer> & layers) const;
    Manifest             write_manifest(const ModelName & name, std::vector<Layer> layers);

    // --- helpers
    void                  progress(const std::string & status) const;
    bool                  is_projector(const Source & src) const;
    void                  check_gguf(const std::filesystem::path & file) const;
    Layer                 model_layer_of(const Manifest & m, const std::string & what) const;
    // The GGUF a source names: its file, or a stored model's model blob.
    std::filesystem::path gguf_of(const Source & src, const std::string & what) const;
    std::string           from_label() const;
    std::string           draft_label() const;
    // The base model's layer of this kind, if any (the first).
    std::optional<Layer>  inherited(std::string_view type) const;
    // Stores a blob (skipped when it exists) and reports it in Ollama's create vocabulary.
    Layer                 add_file_layer(const std::filesystem::path & file, std::string_view type);
    Layer                 add_bytes_layer(std::string_view bytes, std::string_view type);

    Store &                       store_;
    const Modelfile &             mf_;
    const std::filesystem::path & modelfile_dir_;
    const CreateOptions &         options_;

    // Found by the checks.
    Source                               from_;
    size_t                               model_line_ = 0; // which FROM line names the model
    std::optional<std::filesystem::path> projector_file_;
    Source                               draft_;
    // The GGUF the model layer comes from: what adapters are checked against and what a
    // rewrite (quantize) reads.
    std::filesystem::path                model_gguf_;
    std::vector<std::filesystem::path>   adapter_files_;

    // Set by store_model_layer.
    std::vector<Layer> base_; // the FROM model's layers; empty for a new GGUF
    ModelConfig        config_;
    Layer              model_layer_;
};

} // namespace specd::models
