#pragma once
// Request images -> 8-bit RGB pixels, with the limits checked before anything is decoded.
// The reading is stb_image's, the copy compiled into the pinned llama.cpp's libmtmd, so the
// pixels are exactly the ones mtmd's own helpers would produce (docs/vision.md).
//
// `index` in every call is what the error messages call the image ("image 2 ..."): the
// caller's numbering of the images in its request. Every rejection is a
// specd::Error(bad_request) whose message names the problem and, for a limit, its name.
#include "core/image.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specd::vision {

// The formats stb_image reads. GIF gives its first frame; WebP is not among them.
enum class ImageFormat { png, jpeg, gif, bmp, psd, tga, hdr, pnm, pic };

const char * image_format_name(ImageFormat format); // "PNG", "JPEG", ...

// What a header declares. The size is stb_image's reading of it; for a header stb refuses
// (it refuses the huge ones itself), the size where the format keeps it when that can be read,
// with channels 0: decode_image then says which limit the image is over, or why stb refused.
struct ImageHeader {
    ImageFormat format   = ImageFormat::png;
    uint32_t    width    = 0; // pixels, > 0
    uint32_t    height   = 0; // pixels, > 0
    int         channels = 0; // in the file: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA; 0 unknown
};

// Format, size and channels from the header alone; nothing is decoded or allocated. Throws
// for an empty file, one in no format stb_image reads, or a header with no size to read.
ImageHeader probe_image(std::span<const uint8_t> bytes, size_t index);

// The request-level and header-level limits, each on its own so that the api layer can apply
// them as early as it knows the numbers.
void check_image_count(size_t n_images, const ImageLimits & limits);
void check_encoded_size(size_t n_bytes, const ImageLimits & limits, size_t index);
void check_image_header(const ImageHeader & header, const ImageLimits & limits, size_t index);

// check_encoded_size, probe_image and check_image_header, then the decode. The decoded size
// must be the one the header declared.
DecodedImage decode_image(std::span<const uint8_t> bytes, const ImageLimits & limits, size_t index);

// An image as Ollama's `images` field carries it: base64 (see core/base64.h), its decoded
// size checked against max_bytes before the decode allocates anything.
std::vector<uint8_t> image_bytes_from_base64(std::string_view text, const ImageLimits & limits, size_t index);

// What an image is, for prompt-cache keys: the SHA-256 (64 lowercase hex digits) of its width
// and height (4 bytes each, little-endian) and its RGB pixels. It depends on the pixels only,
// not on how they were encoded: the same picture as PNG or as BMP is the same image.
std::string image_identity(int width, int height, std::span<const uint8_t> rgb);

} // namespace specd::vision
