#pragma once
// Request images into decoded pixels, for every API's decoder: the count first, then each
// image's encoded size and header, and only then its pixels (vision/image_decode.h). `index`
// is what the error messages call the image ("image 2 ..."), numbered from 1 in request
// order. Every refusal is a specd::Error(bad_request) naming the problem or the limit.
#include "core/image.h"

#include <cstddef>
#include <string_view>

namespace specd::prepare {

void check_image_count(size_t n_images, const ImageLimits & limits);

// An image as Ollama's `images` field and OpenAI's data URLs carry it: base64.
ImagePtr decode_base64_image(std::string_view base64, const ImageLimits & limits, size_t index);

} // namespace specd::prepare
