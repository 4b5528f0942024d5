#include "engine/stb_image.h"

#include <stb/stb_image.h>

namespace specd::engine::stb {

namespace {

// stb_image's allocations go back through stbi_image_free.
void stbi_free(uint8_t * pixels) { stbi_image_free(pixels); }

} // namespace

bool info(std::span<const uint8_t> bytes, int & width, int & height, int & channels) {
    return stbi_info_from_memory(bytes.data(), int(bytes.size()), &width, &height, &channels) != 0;
}

PixelBuffer load_rgb(std::span<const uint8_t> bytes, int & width, int & height) {
    int channels_in_file = 0;
    return PixelBuffer(stbi_load_from_memory(bytes.data(), int(bytes.size()), &width, &height, &channels_in_file, 3),
                       stbi_free);
}

int inflate(std::span<char> out, std::span<const char> in, bool with_header) {
    return with_header ? stbi_zlib_decode_buffer(out.data(), int(out.size()), in.data(), int(in.size()))
                       : stbi_zlib_decode_noheader_buffer(out.data(), int(out.size()), in.data(), int(in.size()));
}

const char * failure_reason() { return stbi_failure_reason(); }

} // namespace specd::engine::stb
