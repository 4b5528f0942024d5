// Request images: the input as image bytes through probe_image and decode_image, under small
// limits (a header that declares more must be refused before stb_image allocates for it), and
// as text through the base64 decoder. Every rejection must be specd::Error(bad_request); any
// other exception (it escapes and aborts), a crash or undefined behaviour is a finding, and
// so is an image that breaks the limits, pixels that are not width * height * 3 bytes or
// another size than the header's, an identity that is not 64 hex digits, base64 whose
// decoded size was miscounted, or bytes that do not come back through base64.
// stb_image is the uninstrumented copy in libmtmd: coverage steers the fuzzer through our
// checks, and the seeds (one small file per format) carry it into each of stb's readers.
#include "core/base64.h"
#include "core/error.h"
#include "vision/image_decode.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

using namespace specd;
using namespace specd::vision;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

ImageLimits small_limits() {
    ImageLimits limits;
    limits.max_pixels = 1 << 20;
    limits.max_width  = 2048;
    limits.max_height = 2048;
    limits.max_bytes  = 1 << 20;
    return limits;
}

void decode(std::span<const uint8_t> bytes) {
    const ImageLimits limits = small_limits();
    try {
        const ImageHeader header = probe_image(bytes, 0);
        check(header.width > 0 && header.height > 0);
        const DecodedImage image = decode_image(bytes, limits, 0);
        check(uint32_t(image.width) == header.width && uint32_t(image.height) == header.height);
        check(uint64_t(image.width) * uint64_t(image.height) <= limits.max_pixels);
        check(uint32_t(image.width) <= limits.max_width && uint32_t(image.height) <= limits.max_height);
        check(image.rgb().size() == size_t(image.width) * size_t(image.height) * 3);
        check(image.identity.size() == 64 && image.identity.find_first_not_of("0123456789abcdef") == std::string::npos);
    } catch (const Error & e) {
        check(e.kind() == ErrorKind::bad_request);
    }
}

void base64(std::span<const uint8_t> bytes) {
    const std::string_view text(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    if (const auto decoded = decode_base64(text)) {
        check(decoded->size() == base64_decoded_size(text));
    }
    try {
        image_bytes_from_base64(text, small_limits(), 0);
    } catch (const Error & e) {
        check(e.kind() == ErrorKind::bad_request);
    }
    const auto round_trip = decode_base64(encode_base64(bytes));
    check(round_trip && std::equal(round_trip->begin(), round_trip->end(), bytes.begin(), bytes.end()));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::span<const uint8_t> bytes(data, size);
    decode(bytes);
    base64(bytes);
    return 0;
}
