#include "vision/image_decode.h"

#include "core/base64.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

using namespace specd;
using namespace specd::vision;

namespace {

using Bytes = std::vector<uint8_t>;

// Test images written by hand, so every byte of them is known.

void put_be32(Bytes & out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}
void put_le16(Bytes & out, uint32_t v) {
    out.push_back(uint8_t(v));
    out.push_back(uint8_t(v >> 8));
}
void put_le32(Bytes & out, uint32_t v) {
    put_le16(out, v);
    put_le16(out, v >> 16);
}

uint32_t crc32(const uint8_t * p, size_t n) {
    uint32_t c = 0xffffffff;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320 & (0 - (c & 1)));
    }
    return ~c;
}

void put_chunk(Bytes & png, const char * type, const Bytes & data) {
    put_be32(png, uint32_t(data.size()));
    const size_t start = png.size();
    png.insert(png.end(), type, type + 4);
    png.insert(png.end(), data.begin(), data.end());
    put_be32(png, crc32(png.data() + start, png.size() - start));
}

Bytes png_ihdr(uint32_t width, uint32_t height, uint8_t interlace = 0) {
    Bytes ihdr;
    put_be32(ihdr, width);
    put_be32(ihdr, height);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, interlace}); // 8-bit RGB, deflate, filter 0
    return ihdr;
}

const Bytes k_png_signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

// A zlib stream of stored (uncompressed) blocks.
Bytes zlib_stored(const Bytes & raw) {
    Bytes z = {0x78, 0x01};
    size_t at = 0;
    do {
        const size_t n = std::min<size_t>(raw.size() - at, 65535);
        z.push_back(at + n == raw.size() ? 1 : 0);
        put_le16(z, uint32_t(n));
        put_le16(z, uint32_t(~n & 0xffff));
        z.insert(z.end(), raw.begin() + at, raw.begin() + at + n);
        at += n;
    } while (at < raw.size());
    uint32_t a = 1, b = 0;
    for (uint8_t c : raw) {
        a = (a + c) % 65521;
        b = (b + a) % 65521;
    }
    put_be32(z, (b << 16) | a);
    return z;
}

// The rows of an 8-bit RGB image as a PNG stores them, filter byte 0 before each; with
// `interlace`, the seven Adam7 passes one after another.
Bytes png_rows(int width, int height, const Bytes & rgb, bool interlace) {
    struct Pass { int x0, y0, dx, dy; };
    const Pass whole[] = {{0, 0, 1, 1}};
    const Pass adam7[] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
    Bytes raw;
    for (const Pass & p : interlace ? std::span<const Pass>(adam7) : std::span<const Pass>(whole)) {
        if (p.x0 >= width) continue;
        for (int y = p.y0; y < height; y += p.dy) {
            raw.push_back(0);
            for (int x = p.x0; x < width; x += p.dx) {
                const auto px = rgb.begin() + (size_t(y) * width + x) * 3;
                raw.insert(raw.end(), px, px + 3);
            }
        }
    }
    return raw;
}

Bytes png_from_rows(int width, int height, const Bytes & rows, bool interlace = false) {
    Bytes out = k_png_signature;
    put_chunk(out, "IHDR", png_ihdr(uint32_t(width), uint32_t(height), interlace ? 1 : 0));
    put_chunk(out, "IDAT", zlib_stored(rows));
    put_chunk(out, "IEND", {});
    return out;
}

// An 8-bit RGB PNG.
Bytes png(int width, int height, const Bytes & rgb, bool interlace = false) {
    return png_from_rows(width, height, png_rows(width, height, rgb, interlace), interlace);
}

// A 24-bit BMP: rows bottom-up, BGR, each padded to 4 bytes.
Bytes bmp(int width, int height, const Bytes & rgb) {
    const uint32_t row  = (uint32_t(width) * 3 + 3) & ~3u;
    const uint32_t size = 54 + row * uint32_t(height);
    Bytes out = {'B', 'M'};
    put_le32(out, size);
    put_le32(out, 0);
    put_le32(out, 54);
    put_le32(out, 40); // BITMAPINFOHEADER
    put_le32(out, uint32_t(width));
    put_le32(out, uint32_t(height));
    put_le16(out, 1);
    put_le16(out, 24);
    for (int i = 0; i < 6; ++i) put_le32(out, 0); // BI_RGB, sizes, resolutions, palette
    for (int y = height - 1; y >= 0; --y) {
        for (int x = 0; x < width; ++x) {
            const uint8_t * p = &rgb[(size_t(y) * width + x) * 3];
            out.insert(out.end(), {p[2], p[1], p[0]});
        }
        out.resize(out.size() + (row - uint32_t(width) * 3), 0);
    }
    return out;
}

// An uncompressed true-colour TGA, rows top-down, BGR.
Bytes tga(int width, int height, const Bytes & rgb) {
    Bytes out = {0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    put_le16(out, uint32_t(width));
    put_le16(out, uint32_t(height));
    out.insert(out.end(), {24, 0x20});
    for (size_t i = 0; i < rgb.size(); i += 3) out.insert(out.end(), {rgb[i + 2], rgb[i + 1], rgb[i]});
    return out;
}

Bytes ppm(int width, int height, const Bytes & rgb) {
    const std::string head = "P6\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
    Bytes out(head.begin(), head.end());
    out.insert(out.end(), rgb.begin(), rgb.end());
    return out;
}

// A baseline greyscale JPEG, 8x8, all 128: one block whose DC difference and AC run are both
// coded by the one-bit Huffman code "0".
Bytes jpeg_grey() {
    Bytes out = {0xff, 0xd8};
    out.insert(out.end(), {0xff, 0xdb, 0x00, 0x43, 0x00}); // DQT: table 0, all ones
    out.resize(out.size() + 64, 1);
    out.insert(out.end(), {0xff, 0xc0, 0x00, 0x0b, 8, 0, 8, 0, 8, 1, 1, 0x11, 0}); // SOF0 8x8, 1 component
    for (uint8_t table : {0x00, 0x10}) { // DHT: DC 0, AC 0; one code of length 1 -> symbol 0
        out.insert(out.end(), {0xff, 0xc4, 0x00, 0x14, table, 1});
        out.resize(out.size() + 15, 0);
        out.push_back(0);
    }
    out.insert(out.end(), {0xff, 0xda, 0x00, 0x08, 1, 1, 0x00, 0, 63, 0}); // SOS
    out.push_back(0x3f); // "0" DC, "0" end of block, padded with ones
    out.insert(out.end(), {0xff, 0xd9});
    return out;
}

// A progressive greyscale JPEG, 8x8, all 128, in `scans` DC scans (the first sets the DC
// to 0, the rest refine nothing). Each scan's data holds a stuffed 0xff 0x00.
Bytes jpeg_progressive(int scans) {
    Bytes out = {0xff, 0xd8};
    out.insert(out.end(), {0xff, 0xdb, 0x00, 0x43, 0x00});
    out.resize(out.size() + 64, 1);
    out.insert(out.end(), {0xff, 0xc2, 0x00, 0x0b, 8, 0, 8, 0, 8, 1, 1, 0x11, 0}); // SOF2
    out.insert(out.end(), {0xff, 0xc4, 0x00, 0x14, 0x00, 1});
    out.resize(out.size() + 15, 0);
    out.push_back(0);
    for (int i = 0; i < scans; ++i) {
        out.insert(out.end(), {0xff, 0xda, 0x00, 0x08, 1, 1, 0x00, 0, 0, uint8_t(i == 0 ? 0x00 : 0x10)});
        out.insert(out.end(), {0x3f, 0xff, 0x00});
    }
    out.insert(out.end(), {0xff, 0xd9});
    return out;
}

// The classic 1x1 GIF: a two-colour palette (white, black), pixel 0.
const Bytes k_gif_white = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0xff, 0xff, 0xff, 0, 0, 0,
                           0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3b};

// (height, width, 3) with a different value in every byte.
Bytes gradient(int width, int height) {
    Bytes rgb(size_t(width) * height * 3);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 37 + 11);
    return rgb;
}

Bytes span_bytes(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }

// The message of the bad_request `f` throws; a failure if it throws anything else or nothing.
template <class F> std::string rejection(F && f) {
    try {
        f();
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

} // namespace

TEST(ImageDecode, DecodesEachFormatToExactPixels) {
    const Bytes rgb = gradient(3, 2);
    struct Case { const char * name; Bytes bytes; ImageFormat format; int width, height; Bytes rgb; };
    const Case cases[] = {
        {"png", png(3, 2, rgb), ImageFormat::png, 3, 2, rgb},
        {"bmp", bmp(3, 2, rgb), ImageFormat::bmp, 3, 2, rgb},
        {"tga", tga(3, 2, rgb), ImageFormat::tga, 3, 2, rgb},
        {"ppm", ppm(3, 2, rgb), ImageFormat::pnm, 3, 2, rgb},
        {"jpeg", jpeg_grey(), ImageFormat::jpeg, 8, 8, Bytes(8 * 8 * 3, 128)},
        {"jpeg progressive", jpeg_progressive(3), ImageFormat::jpeg, 8, 8, Bytes(8 * 8 * 3, 128)},
        {"gif", k_gif_white, ImageFormat::gif, 1, 1, Bytes(3, 255)},
        {"png 1x1", png(1, 1, {1, 2, 3}), ImageFormat::png, 1, 1, {1, 2, 3}},
        {"png 300x300", png(300, 300, gradient(300, 300)), ImageFormat::png, 300, 300, gradient(300, 300)},
        {"png interlaced", png(13, 11, gradient(13, 11), true), ImageFormat::png, 13, 11, gradient(13, 11)},
        {"png interlaced 3x2", png(3, 2, rgb, true), ImageFormat::png, 3, 2, rgb},
        {"png interlaced 1x1", png(1, 1, {4, 5, 6}, true), ImageFormat::png, 1, 1, {4, 5, 6}},
    };
    for (const auto & c : cases) {
        const ImageHeader header = probe_image(c.bytes, 0);
        EXPECT_EQ(header.format, c.format) << c.name;
        EXPECT_EQ(header.width, uint32_t(c.width)) << c.name;
        EXPECT_EQ(header.height, uint32_t(c.height)) << c.name;
        const DecodedImage image = decode_image(c.bytes, ImageLimits{}, 0);
        EXPECT_EQ(image.width, c.width) << c.name;
        EXPECT_EQ(image.height, c.height) << c.name;
        EXPECT_EQ(span_bytes(image.rgb()), c.rgb) << c.name;
        EXPECT_EQ(image.identity, image_identity(c.width, c.height, c.rgb)) << c.name;
    }
}

TEST(ImageDecode, IdentityDependsOnThePixelsOnly) {
    const Bytes rgb = gradient(3, 2);
    const std::string from_png = decode_image(png(3, 2, rgb), ImageLimits{}, 0).identity;
    EXPECT_EQ(from_png.size(), 64u);
    EXPECT_EQ(from_png.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_EQ(decode_image(bmp(3, 2, rgb), ImageLimits{}, 0).identity, from_png);
    EXPECT_EQ(decode_image(tga(3, 2, rgb), ImageLimits{}, 0).identity, from_png);

    Bytes other = rgb;
    other[5] ^= 1;
    EXPECT_NE(decode_image(png(3, 2, other), ImageLimits{}, 0).identity, from_png);
    // The same bytes in another shape are another image.
    EXPECT_NE(decode_image(png(2, 3, rgb), ImageLimits{}, 0).identity, from_png);
}

TEST(ImageDecode, LimitsApplyBeforeDecoding) {
    // Headers with no image data behind them: decoding any of them would fail with one of
    // stb's reasons, so a limit in the message shows the decode never started. (stb_image
    // refuses the 60000x60000 header itself, as above 2^30 bytes; its size is read by hand.)
    auto header_only = [](uint32_t width, uint32_t height) {
        Bytes out = k_png_signature;
        put_chunk(out, "IHDR", png_ihdr(width, height));
        put_chunk(out, "IDAT", {0, 0, 0, 0});
        put_chunk(out, "IEND", {});
        return out;
    };
    ImageLimits small;
    small.max_pixels = 1000;
    small.max_width  = 100;
    small.max_height = 50;
    struct Case { const char * name; Bytes bytes; ImageLimits limits; std::string message; };
    const Case cases[] = {
        {"60000x60000", header_only(60000, 60000), ImageLimits{},
         "image 4 declares 60000x60000 (3.6 Gpx), above the limit of 50 Mpx per image (max_pixels)"},
        {"one pixel over", header_only(1000, 50001), ImageLimits{},
         "image 4 declares 1000x50001 (50001000 px), above the limit of 50000000 px per image (max_pixels)"},
        {"wide", header_only(20000, 1), ImageLimits{},
         "image 4 declares 20000x1, 20000 pixels wide, above the limit of 16384 (max_width)"},
        {"tall", header_only(1, 16385), ImageLimits{},
         "image 4 declares 1x16385, 16385 pixels tall, above the limit of 16384 (max_height)"},
        {"small pixels", header_only(40, 40), small,
         "image 4 declares 40x40 (1.6 kpx), above the limit of 1 kpx per image (max_pixels)"},
        {"small width", header_only(101, 1), small, "(max_width)"},
        {"small height", header_only(1, 51), small, "(max_height)"},
    };
    for (const auto & c : cases) {
        const std::string message = rejection([&] { decode_image(c.bytes, c.limits, 4); });
        EXPECT_NE(message.find(c.message), std::string::npos) << c.name << ": " << message;
    }
    // Within the limits the same kind of file gets as far as the decode, and fails there.
    EXPECT_NE(rejection([&] { decode_image(header_only(10, 10), small, 4); }).find("could not be decoded"),
              std::string::npos);
}

TEST(ImageDecode, RefusesPngDataThatInflatesPastItsSize) {
    // Declared 2x2, with far more rows behind it: as a zlib bomb would be (these are stored,
    // not compressed, but the inflated size is what counts). stb_image alone would take it.
    const Bytes rgb = gradient(2, 2);
    Bytes rows = png_rows(2, 2, rgb, false);
    rows.resize(rows.size() + 100000, 0);
    EXPECT_EQ(rejection([&] { decode_image(png_from_rows(2, 2, rows), ImageLimits{}, 5); }),
              "image 5's compressed pixel data inflates to more than its 2x2 pixels take");

    // A few spare bytes are let through, as stb_image lets them: up to 1/16 of the size and
    // 1024 bytes more, which pins the size computed for each layout, Adam7 passes included.
    struct Case { int width, height; bool interlace; };
    for (const Case c : {Case{2, 2, false}, Case{300, 7, false}, Case{1, 1, true}, Case{3, 2, true},
                         Case{5, 1, true}, Case{13, 11, true}, Case{300, 7, true}}) {
        const Bytes pixels = gradient(c.width, c.height);
        Bytes spare = png_rows(c.width, c.height, pixels, c.interlace);
        spare.resize(spare.size() + spare.size() / 16 + 1024, 0);
        const DecodedImage image = decode_image(png_from_rows(c.width, c.height, spare, c.interlace), ImageLimits{}, 5);
        EXPECT_EQ(span_bytes(image.rgb()), pixels) << c.width << "x" << c.height;
        spare.push_back(0);
        EXPECT_NE(rejection([&] { decode_image(png_from_rows(c.width, c.height, spare, c.interlace), ImageLimits{}, 5); })
                      .find("inflates to more"),
                  std::string::npos)
            << c.width << "x" << c.height;
    }
}

TEST(ImageDecode, RefusesJpegsOfTooManyScans) {
    EXPECT_EQ(decode_image(jpeg_progressive(100), ImageLimits{}, 2).width, 8);
    EXPECT_EQ(rejection([&] { decode_image(jpeg_progressive(101), ImageLimits{}, 2); }),
              "image 2 is a JPEG of 101 scans, above the limit of 100 (max_jpeg_scans)");
}

TEST(ImageDecode, RejectsWhatIsNotAnImage) {
    const Bytes valid_png  = png(4, 4, gradient(4, 4));
    const Bytes valid_jpeg = jpeg_grey();
    Bytes random(512);
    uint32_t state = 12345;
    for (auto & b : random) {
        state = state * 1103515245 + 12345;
        b     = uint8_t(state >> 16);
    }
    random[0] = 'x'; // not a magic byte, and no TGA (second byte > 1)
    random[1] = 'y';
    Bytes bad_ihdr = k_png_signature;
    put_chunk(bad_ihdr, "IHDR", {0, 0, 0, 0, 0, 0, 0, 1, 8, 2, 0, 0, 0}); // width 0
    ImageLimits tiny;
    tiny.max_bytes = 100;

    struct Case { const char * name; Bytes bytes; ImageLimits limits; std::string message; };
    const Case cases[] = {
        {"empty", {}, ImageLimits{}, "image 7 is empty"},
        {"random", random, ImageLimits{}, "image 7 is not a recognised image format"},
        {"text", {'h', 'e', 'l', 'l', 'o'}, ImageLimits{}, "image 7 is not a recognised image format"},
        {"png signature only", k_png_signature, ImageLimits{}, "image 7 looks like a PNG but its header could not be read"},
        {"png width 0", bad_ihdr, ImageLimits{}, "image 7 looks like a PNG but its header could not be read"},
        {"png cut in IDAT", Bytes(valid_png.begin(), valid_png.begin() + 60), ImageLimits{}, "image 7 could not be decoded: "},
        {"png without IEND", Bytes(valid_png.begin(), valid_png.end() - 12), ImageLimits{}, "image 7 could not be decoded: "},
        {"jpeg cut in SOF", Bytes(valid_jpeg.begin(), valid_jpeg.begin() + 80), ImageLimits{}, "image 7 could not be decoded: "},
        {"jpeg cut in DQT", Bytes(valid_jpeg.begin(), valid_jpeg.begin() + 40), ImageLimits{}, "image 7 looks like a JPEG but its header could not be read"},
        {"jpeg magic only", {0xff, 0xd8}, ImageLimits{}, "image 7 looks like a JPEG but its header could not be read"},
        {"gif cut before its image", Bytes(k_gif_white.begin(), k_gif_white.begin() + 19), ImageLimits{}, "image 7 could not be decoded: "},
        {"over max_bytes", valid_png, tiny, "image 7 is " + std::to_string(valid_png.size()) +
                                                " bytes, above the limit of 100 bytes per image (max_bytes)"},
    };
    for (const auto & c : cases) {
        const std::string message = rejection([&] { decode_image(c.bytes, c.limits, 7); });
        EXPECT_EQ(message.find(c.message), 0u) << c.name << ": " << message;
    }
}

TEST(ImageDecode, ChecksTheCountAndEncodedSize) {
    ImageLimits limits;
    EXPECT_NO_THROW(check_image_count(16, limits));
    EXPECT_EQ(rejection([&] { check_image_count(17, limits); }),
              "the request has 17 images, above the limit of 16 per request (max_images)");
    EXPECT_NO_THROW(check_encoded_size(32u << 20, limits, 0));
    EXPECT_EQ(rejection([&] { check_encoded_size(40u << 20, limits, 1); }),
              "image 1 is 40 MiB, above the limit of 32 MiB per image (max_bytes)");
    EXPECT_EQ(rejection([&] { check_encoded_size((32u << 20) + 1, limits, 1); }),
              "image 1 is 33554433 bytes, above the limit of 33554432 bytes per image (max_bytes)");
}

TEST(ImageDecode, ReadsBase64Images) {
    const Bytes image = png(2, 2, gradient(2, 2));
    const std::string text = encode_base64(image);
    EXPECT_EQ(image_bytes_from_base64(text, ImageLimits{}, 0), image);
    EXPECT_EQ(rejection([&] { image_bytes_from_base64("data:image/png;base64," + text, ImageLimits{}, 3); }),
              "image 3 is not valid base64");
    ImageLimits tiny;
    tiny.max_bytes = image.size() - 1;
    EXPECT_NE(rejection([&] { image_bytes_from_base64(text, tiny, 3); }).find("(max_bytes)"), std::string::npos);
}
