#pragma once
// A test picture as a 24-bit BMP (uncompressed: no image library needed to write one, and
// every decoder reads it): a deterministic pattern of (width, height, seed).
#include <cstdint>
#include <string>

namespace testmodel {

void write_bmp(const std::string & path, uint32_t width, uint32_t height, uint32_t seed);

} // namespace testmodel
