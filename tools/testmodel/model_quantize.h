#pragma once

#include <string>

// Quantizes the GGUF model at `path` in place to `type` ("q8_0", "q4_0", "q4_k" or "f16") with
// libllama's own quantizer, so that a pair's draft can be made cheap the way real drafts are
// (a quantized small model beside a larger target). Throws std::runtime_error on failure.
void model_quantize_in_place(const std::string & path, const std::string & type);
