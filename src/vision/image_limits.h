#pragma once
// What one request may ask the server to decode. Every limit is checked before any pixel is
// decoded: an image header can declare 60000x60000 in a few dozen bytes, and stb_image would
// try to allocate the 10 GiB that describes.
#include <cstddef>
#include <cstdint>

namespace specd::vision {

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

} // namespace specd::vision
