#pragma once
// A decoded request image as plain data: what vision/ produces, what requests carry and
// what the engine hands to the projector.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace specd {

// The pixels give their buffer back through the decoder's own free function (stb_image's
// allocations go back through stbi_image_free), held as a plain function pointer so that
// holding an image needs no decoder.
using PixelBuffer = std::unique_ptr<uint8_t[], void (*)(uint8_t *)>;

struct DecodedImage {
    int         width  = 0;
    int         height = 0;
    PixelBuffer pixels{nullptr, nullptr}; // (height, width, 3) 8-bit RGB, rows top to bottom
    std::string identity;                 // vision::image_identity of the pixels

    std::span<const uint8_t> rgb() const { return {pixels.get(), size_t(width) * size_t(height) * 3}; }
};

// Shared, because the request and its prompt both refer to it.
using ImagePtr = std::shared_ptr<const DecodedImage>;

// What one request may ask the server to decode. Every limit is checked before any pixel is
// decoded: an image header can declare 60000x60000 in a few dozen bytes, and stb_image would
// try to allocate the 10 GiB that describes.
struct ImageLimits {
    uint64_t max_pixels = 50'000'000;  // width * height, per image (150 MB as 8-bit RGB)
    uint32_t max_width  = 16384;       // pixels
    uint32_t max_height = 16384;       // pixels
    size_t   max_images = 16;          // per request
    size_t   max_bytes  = 32u << 20;   // encoded (after base64), per image
    // Progressive JPEGs are written in about 10 scans; stb_image passes over the whole image
    // for each one, so a small file of empty scans costs minutes.
    size_t   max_jpeg_scans = 100;
};


} // namespace specd
