#include "bmp_image.h"

#include <fstream>
#include <stdexcept>
#include <vector>

namespace testmodel {

namespace {

void put_u16(std::vector<uint8_t> & out, uint32_t v) {
    out.push_back(uint8_t(v));
    out.push_back(uint8_t(v >> 8));
}

void put_u32(std::vector<uint8_t> & out, uint32_t v) {
    put_u16(out, v & 0xffff);
    put_u16(out, v >> 16);
}

} // namespace

void write_bmp(const std::string & path, uint32_t width, uint32_t height, uint32_t seed) {
    if (width == 0 || height == 0 || width > 8192 || height > 8192) throw std::invalid_argument("image size out of range");
    const uint32_t row    = (width * 3 + 3) / 4 * 4; // rows are padded to 4 bytes
    const uint32_t pixels = row * height;
    std::vector<uint8_t> out;
    out.reserve(54 + pixels);
    // BITMAPFILEHEADER
    out.push_back('B');
    out.push_back('M');
    put_u32(out, 54 + pixels);
    put_u32(out, 0);
    put_u32(out, 54);
    // BITMAPINFOHEADER: bottom-up rows, 24 bits, no compression, 72 dpi
    put_u32(out, 40);
    put_u32(out, width);
    put_u32(out, height);
    put_u16(out, 1);
    put_u16(out, 24);
    put_u32(out, 0);
    put_u32(out, pixels);
    put_u32(out, 2835);
    put_u32(out, 2835);
    put_u32(out, 0);
    put_u32(out, 0);
    for (uint32_t y = 0; y < height; ++y) {
        for (uint32_t x = 0; x < width; ++x) { // B, G, R
            out.push_back(uint8_t(y * 11 + seed));
            out.push_back(uint8_t(x + seed * 5));
            out.push_back(uint8_t(x * 7 + y * 3 + seed * 13));
        }
        for (uint32_t pad = width * 3; pad < row; ++pad) out.push_back(0);
    }
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char *>(out.data()), std::streamsize(out.size()));
    if (!file) throw std::runtime_error("cannot write " + path);
}

} // namespace testmodel
