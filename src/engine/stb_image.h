#pragma once
// llama.cpp's copy of stb_image (compiled into its libmtmd), behind the engine's link like the
// rest of llama.cpp: vision/ reads request images with it, so that their pixels are exactly
// the ones mtmd's own helpers would produce. Thin wrappers; the checks around them are
// vision/'s. stb counts bytes in an int: callers keep every size within INT_MAX.
#include "core/image.h"

#include <cstdint>
#include <span>

namespace specd::engine::stb {

// Size and channels from the header; false when stb reads no header there.
bool info(std::span<const uint8_t> bytes, int & width, int & height, int & channels);

// 8-bit RGB pixels; null on failure (failure_reason() says why).
PixelBuffer load_rgb(std::span<const uint8_t> bytes, int & width, int & height);

// zlib inflate of PNG data into `out` (`with_header` false: a raw deflate stream, as Apple's
// PNGs carry it); the bytes written, or negative on failure (failure_reason() says why).
int inflate(std::span<char> out, std::span<const char> in, bool with_header);

// stb's reason for its last failure on this thread, or null.
const char * failure_reason();

} // namespace specd::engine::stb
