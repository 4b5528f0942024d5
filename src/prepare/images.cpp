#include "prepare/images.h"

#include "vision/image_decode.h"

#include <memory>

namespace specd::prepare {

void check_image_count(size_t n_images, const ImageLimits & limits) { vision::check_image_count(n_images, limits); }

ImagePtr decode_base64_image(std::string_view base64, const ImageLimits & limits, size_t index) {
    const auto bytes = vision::image_bytes_from_base64(base64, limits, index);
    return std::make_shared<const DecodedImage>(vision::decode_image(bytes, limits, index));
}

} // namespace specd::prepare
