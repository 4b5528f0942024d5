#include "vision/image_decode.h"

#include "core/base64.h"
#include "core/error.h"
#include "core/sha256.h"
#include "engine/stb_image.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

namespace specd::vision {

namespace {

std::string image_name(size_t index) { return "image " + std::to_string(index); }

// "3.6 Gpx", "50 Mpx", "32 MiB": one decimal, ".0" dropped. units[0] is the plain unit.
std::string short_quantity(uint64_t value, double base, const char * const (&units)[4]) {
    int    unit   = 0;
    double scaled = double(value);
    while (unit < 3 && scaled >= base) {
        scaled /= base;
        ++unit;
    }
    if (unit == 0) {
        return std::to_string(value) + " " + units[0];
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", scaled);
    std::string out = text;
    if (out.ends_with(".0")) {
        out.resize(out.size() - 2);
    }
    return out + " " + units[unit];
}

// A quantity and its limit in short form, unless rounding makes the two read the same: then
// both exactly.
std::pair<std::string, std::string> quantity_and_limit(uint64_t have, uint64_t limit, double base,
                                                       const char * const (&units)[4]) {
    std::string have_text  = short_quantity(have, base, units);
    std::string limit_text = short_quantity(limit, base, units);
    if (have_text == limit_text) {
        have_text  = std::to_string(have) + " " + units[0];
        limit_text = std::to_string(limit) + " " + units[0];
    }
    return {have_text, limit_text};
}

constexpr const char * k_pixel_units[4] = {"px", "kpx", "Mpx", "Gpx"};
constexpr const char * k_byte_units[4]  = {"bytes", "KiB", "MiB", "GiB"};

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic) {
    return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

// The format by its magic bytes. Each test is at least as loose as stb_image's own test for
// that format, and no two magics start alike, so when stb reads a header this names the
// format it read; stb's only format without magic bytes is TGA. That matters: for a file
// with magic bytes whose header stb cannot read, stbi_info goes on to try TGA, and TGA needs
// a second byte of 0 or 1, which none of these magics has. So the size stbi_info reports
// always comes from the header stbi_load allocates by.
std::optional<ImageFormat> sniff_format(std::span<const uint8_t> bytes) {
    if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::png;
    if (starts_with(bytes, "\xff")) return ImageFormat::jpeg; // SOI may follow 0xff fill bytes
    if (starts_with(bytes, "GIF8")) return ImageFormat::gif;
    if (starts_with(bytes, "BM")) return ImageFormat::bmp;
    if (starts_with(bytes, "8BPS")) return ImageFormat::psd;
    if (starts_with(bytes, "#?")) return ImageFormat::hdr; // "#?RADIANCE\n", "#?RGBE\n"
    if (starts_with(bytes, "P5") || starts_with(bytes, "P6")) return ImageFormat::pnm;
    if (starts_with(bytes, "\x53\x80\xf6\x34")) return ImageFormat::pic;
    return std::nullopt;
}

uint32_t be16(std::span<const uint8_t> b, size_t at) { return (uint32_t(b[at]) << 8) | b[at + 1]; }
uint32_t le16(std::span<const uint8_t> b, size_t at) { return b[at] | (uint32_t(b[at + 1]) << 8); }
uint32_t be32(std::span<const uint8_t> b, size_t at) { return (be16(b, at) << 16) | be16(b, at + 2); }
uint32_t le32(std::span<const uint8_t> b, size_t at) { return le16(b, at) | (le16(b, at + 2) << 16); }

// A JPEG's segments as stb_image walks them: the size in the first start-of-frame, and the
// scans before the end of the image.
struct JpegLayout {
    std::optional<std::pair<uint32_t, uint32_t>> size;
    size_t                                       scans = 0;
};

JpegLayout jpeg_layout(std::span<const uint8_t> b) {
    JpegLayout out;
    size_t at    = 0;
    bool   first = true;
    while (at < b.size() && b[at] == 0xff) {
        while (at < b.size() && b[at] == 0xff) { // a marker, after any fill bytes
            ++at;
        }
        if (at == b.size()) {
            break;
        }
        const uint8_t marker = b[at++];
        if (first != (marker == 0xd8) || marker == 0xd9) { // SOI first and only first; EOI ends
            break;
        }
        first = false;
        if (marker == 0xd8 || marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { // no length
            continue;
        }
        if (at + 2 > b.size() || be16(b, at) < 2) {
            break;
        }
        const bool sof = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
        if (sof && !out.size && at + 7 <= b.size()) { // length, precision, height, width
            out.size = std::pair{be16(b, at + 5), be16(b, at + 3)};
        }
        at += be16(b, at);
        if (marker == 0xda) {
            // A scan. Its coded data runs to the next 0xff that is not a stuffed 0x00, a
            // restart marker or a fill byte.
            ++out.scans;
            for (;; ++at) {
                const auto * ff = static_cast<const uint8_t *>(
                    at < b.size() ? std::memchr(b.data() + at, 0xff, b.size() - at) : nullptr);
                if (!ff || ff + 1 == b.data() + b.size()) {
                    return out;
                }
                at = size_t(ff - b.data());
                const uint8_t next = b[at + 1];
                if (next != 0x00 && next != 0xff && !(next >= 0xd0 && next <= 0xd7)) {
                    break;
                }
            }
        }
    }
    return out;
}

// The width and height where the format keeps them, read by hand. Only for headers stb_image
// refuses: it refuses the huge ones too (a PNG above 2^30 bytes, any image above 2^31), and
// their refusal should name the limit they are over, not call the header unreadable.
std::optional<std::pair<uint32_t, uint32_t>> declared_size(ImageFormat format, std::span<const uint8_t> b) {
    std::optional<std::pair<uint32_t, uint32_t>> size;
    switch (format) {
        case ImageFormat::png:
            if (b.size() >= 24 && std::memcmp(b.data() + 12, "IHDR", 4) == 0) size = {be32(b, 16), be32(b, 20)};
            break;
        case ImageFormat::gif:
            if (b.size() >= 10) size = {le16(b, 6), le16(b, 8)};
            break;
        case ImageFormat::bmp:
            if (b.size() >= 22 && le32(b, 14) == 12) {
                size = {le16(b, 18), le16(b, 20)};
            } else if (b.size() >= 26) { // signed; the height is negative for rows stored top-down
                const int64_t width  = int32_t(le32(b, 18));
                const int64_t height = int32_t(le32(b, 22));
                size = {uint32_t(std::max<int64_t>(width, 0)), uint32_t(height < 0 ? -height : height)};
            }
            break;
        case ImageFormat::psd:
            if (b.size() >= 22) size = {be32(b, 18), be32(b, 14)};
            break;
        case ImageFormat::jpeg:
            size = jpeg_layout(b).size;
            break;
        default:
            break;
    }
    if (size && (size->first == 0 || size->second == 0)) {
        return std::nullopt;
    }
    return size;
}

// The bytes a PNG's zlib stream must inflate to: a filter byte and the packed samples for
// each row, of each Adam7 pass when interlaced. 0 when the header is not one stb reads.
uint64_t png_inflated_size(uint32_t width, uint32_t height, int depth, int color, int interlace) {
    const int channels[7] = {1, 0, 3, 1, 2, 0, 4}; // by colour type
    if (color < 0 || color > 6 || channels[color] == 0) {
        return 0;
    }
    const uint64_t bits = uint64_t(channels[color]) * uint64_t(depth); // per pixel
    auto pass = [&](uint32_t x0, uint32_t y0, uint32_t dx, uint32_t dy) -> uint64_t {
        const uint64_t w = width > x0 ? (width - x0 + dx - 1) / dx : 0;
        const uint64_t h = height > y0 ? (height - y0 + dy - 1) / dy : 0;
        return w == 0 ? 0 : ((w * bits + 7) / 8 + 1) * h;
    };
    if (interlace == 0) {
        return pass(0, 0, 1, 1);
    }
    return pass(0, 0, 8, 8) + pass(4, 0, 8, 8) + pass(0, 4, 4, 8) + pass(2, 0, 4, 4) + pass(0, 2, 2, 4) +
           pass(1, 0, 2, 2) + pass(0, 1, 1, 2);
}

// A PNG's size limits say nothing about its zlib stream: a 2 MB file that declares 1x1 can
// inflate to 2 GiB, and stb_image grows its buffer until the stream ends (then takes the
// first pixels and succeeds). So inflate it once into a buffer the header's size allows,
// with stb's own inflater, and refuse the file when it does not fit. Anything else wrong is
// left for stbi_load to find and name.
void check_png_inflated_size(std::span<const uint8_t> b, const ImageHeader & header, size_t index) {
    std::vector<uint8_t> idat; // every IDAT's data, in order: one zlib stream
    uint64_t expected = 0;
    bool     iphone   = false; // Apple's CgBI PNGs: raw deflate, no zlib header
    for (size_t at = 8; at + 12 <= b.size();) {
        const uint32_t length = be32(b, at);
        if (length > b.size() - at - 12) {
            break;
        }
        const std::string_view type(reinterpret_cast<const char *>(b.data() + at + 4), 4);
        const size_t data = at + 8;
        if (type == "CgBI") {
            iphone = true;
        } else if (type == "IHDR" && length == 13) {
            expected = png_inflated_size(be32(b, data), be32(b, data + 4), b[data + 8], b[data + 9], b[data + 12]);
        } else if (type == "IDAT") {
            idat.insert(idat.end(), b.begin() + data, b.begin() + data + length);
        } else if (type == "IEND") {
            break;
        }
        at = data + length + 4;
    }
    // A little room past the exact size: encoders that leave a few spare bytes in the stream
    // decode in stb, and should here.
    const uint64_t room = expected + expected / 16 + 1024;
    if (expected == 0 || idat.empty() || room > uint64_t(INT_MAX) || idat.size() > size_t(INT_MAX)) {
        return;
    }
    const auto out = std::make_unique_for_overwrite<char[]>(room);
    const auto * in = reinterpret_cast<const char *>(idat.data());
    const int    n      = engine::stb::inflate({out.get(), size_t(room)}, {in, idat.size()}, !iphone);
    const char * reason = engine::stb::failure_reason();
    if (n < 0 && reason && std::string_view(reason) == "output buffer limit") {
        throw bad_request(image_name(index) + "'s compressed pixel data inflates to more than its " +
                          std::to_string(header.width) + "x" + std::to_string(header.height) + " pixels take");
    }
}

// Each scan of a progressive JPEG costs stb_image a pass over every block of the image, coded
// data or not: 1000 empty scans, 10 KB, keep it busy for 14 s on a 16 Mpx image.
void check_jpeg_scans(std::span<const uint8_t> b, const ImageLimits & limits, size_t index) {
    const size_t scans = jpeg_layout(b).scans;
    if (scans > limits.max_jpeg_scans) {
        throw bad_request(image_name(index) + " is a JPEG of " + std::to_string(scans) +
                          " scans, above the limit of " + std::to_string(limits.max_jpeg_scans) + " (max_jpeg_scans)");
    }
}

} // namespace

const char * image_format_name(ImageFormat format) {
    switch (format) {
        case ImageFormat::png:  return "PNG";
        case ImageFormat::jpeg: return "JPEG";
        case ImageFormat::gif:  return "GIF";
        case ImageFormat::bmp:  return "BMP";
        case ImageFormat::psd:  return "PSD";
        case ImageFormat::tga:  return "TGA";
        case ImageFormat::hdr:  return "HDR";
        case ImageFormat::pnm:  return "PNM";
        case ImageFormat::pic:  return "PIC";
    }
    return "?";
}


ImageHeader probe_image(std::span<const uint8_t> bytes, size_t index) {
    if (bytes.empty()) {
        throw bad_request(image_name(index) + " is empty");
    }
    if (bytes.size() > size_t(INT_MAX)) { // stb_image counts bytes in an int
        throw bad_request(image_name(index) + " is " + short_quantity(bytes.size(), 1024, k_byte_units) +
                          ", more than an image can be");
    }
    const std::optional<ImageFormat> sniffed = sniff_format(bytes);
    int width = 0, height = 0, channels = 0;
    if (engine::stb::info(bytes, width, height, channels)) {
        if (width <= 0 || height <= 0) { // PSD sizes are 32-bit unsigned; stb reads an int
            throw bad_request(image_name(index) + " declares a size of " + std::to_string(width) + "x" +
                              std::to_string(height) + ", which no image has");
        }
        return {sniffed.value_or(ImageFormat::tga), uint32_t(width), uint32_t(height), channels};
    }
    if (!sniffed) {
        throw bad_request(image_name(index) + " is not a recognised image format "
                          "(PNG, JPEG, GIF, BMP, PSD, TGA, HDR, PNM or PIC)");
    }
    if (const auto size = declared_size(*sniffed, bytes)) {
        return {*sniffed, size->first, size->second, 0};
    }
    throw bad_request(image_name(index) + " looks like a " + image_format_name(*sniffed) +
                      " but its header could not be read");
}

void check_image_count(size_t n_images, const ImageLimits & limits) {
    if (n_images > limits.max_images) {
        throw bad_request("the request has " + std::to_string(n_images) + " images, above the limit of " +
                          std::to_string(limits.max_images) + " per request (max_images)");
    }
}

void check_encoded_size(size_t n_bytes, const ImageLimits & limits, size_t index) {
    if (n_bytes > limits.max_bytes) {
        const auto [have, limit] = quantity_and_limit(n_bytes, limits.max_bytes, 1024, k_byte_units);
        throw bad_request(image_name(index) + " is " + have + ", above the limit of " + limit +
                          " per image (max_bytes)");
    }
}

void check_image_header(const ImageHeader & header, const ImageLimits & limits, size_t index) {
    const std::string size = std::to_string(header.width) + "x" + std::to_string(header.height);
    // Pixels first: a header declaring 60000x60000 is above every limit, and the area is the
    // one that costs memory. In 64 bits: a header declares up to 2^32 - 1 each way.
    const uint64_t pixels = uint64_t(header.width) * uint64_t(header.height);
    if (pixels > limits.max_pixels) {
        const auto [have, limit] = quantity_and_limit(pixels, limits.max_pixels, 1000, k_pixel_units);
        throw bad_request(image_name(index) + " declares " + size + " (" + have + "), above the limit of " + limit +
                          " per image (max_pixels)");
    }
    if (header.width > limits.max_width) {
        throw bad_request(image_name(index) + " declares " + size + ", " + std::to_string(header.width) +
                          " pixels wide, above the limit of " + std::to_string(limits.max_width) + " (max_width)");
    }
    if (header.height > limits.max_height) {
        throw bad_request(image_name(index) + " declares " + size + ", " + std::to_string(header.height) +
                          " pixels tall, above the limit of " + std::to_string(limits.max_height) + " (max_height)");
    }
}

DecodedImage decode_image(std::span<const uint8_t> bytes, const ImageLimits & limits, size_t index) {
    check_encoded_size(bytes.size(), limits, index);
    const ImageHeader header = probe_image(bytes, index);
    check_image_header(header, limits, index);
    if (header.format == ImageFormat::png) {
        check_png_inflated_size(bytes, header, index);
    }
    if (header.format == ImageFormat::jpeg) {
        check_jpeg_scans(bytes, limits, index);
    }

    DecodedImage image;
    image.pixels = engine::stb::load_rgb(bytes, image.width, image.height);
    if (!image.pixels) {
        const char * reason = engine::stb::failure_reason();
        throw bad_request(image_name(index) + " could not be decoded: " + (reason ? reason : "unknown error"));
    }
    if (uint32_t(image.width) != header.width || uint32_t(image.height) != header.height) {
        throw bad_request(image_name(index) + " decoded to " + std::to_string(image.width) + "x" +
                          std::to_string(image.height) + ", not the " + std::to_string(header.width) + "x" +
                          std::to_string(header.height) + " its header declares");
    }
    image.identity = image_identity(image.width, image.height, image.rgb());
    return image;
}

std::vector<uint8_t> image_bytes_from_base64(std::string_view text, const ImageLimits & limits, size_t index) {
    check_encoded_size(base64_decoded_size(text), limits, index);
    std::optional<std::vector<uint8_t>> bytes = decode_base64(text);
    if (!bytes) {
        throw bad_request(image_name(index) + " is not valid base64");
    }
    return std::move(*bytes);
}

std::string image_identity(int width, int height, std::span<const uint8_t> rgb) {
    uint8_t size[8];
    for (int i = 0; i < 4; ++i) {
        size[i]     = uint8_t(uint32_t(width) >> (8 * i));
        size[4 + i] = uint8_t(uint32_t(height) >> (8 * i));
    }
    Sha256 sha;
    sha.update(size, sizeof size);
    sha.update(rgb.data(), rgb.size());
    const auto hash = sha.finish();
    return to_hex(hash.data(), hash.size());
}

} // namespace specd::vision
