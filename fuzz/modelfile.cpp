// The Modelfile parser (models::parse_modelfile). A rejection must be a ModelfileError. What
// it accepts must survive the way /api/show gives it back: format_modelfile() writes it
// without throwing, and that text parses to the same Modelfile.
#include "models/modelfile.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

using namespace specd::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    Modelfile              mf;
    try {
        mf = parse_modelfile(text);
    } catch (const ModelfileError &) {
        return 0;
    }
    const std::string written = format_modelfile(mf); // std::invalid_argument escapes: a finding
    Modelfile         again;
    try {
        again = parse_modelfile(written);
    } catch (const ModelfileError & e) {
        std::fprintf(stderr, "fuzz-modelfile: the written Modelfile does not parse (%s):\n%s\n", e.what(),
                     written.c_str());
        __builtin_trap();
    }
    if (!(again == mf)) {
        std::fprintf(stderr, "fuzz-modelfile: the written Modelfile reads back differently:\n%s\n", written.c_str());
        __builtin_trap();
    }
    return 0;
}
