#pragma once
// Ollama's /api/generate and /api/chat bodies -> GenerateRequest, validated at the edge:
// wrong types, out-of-range options, unknown roles and fields specd does not implement yet
// are 400s that name the field, never silently ignored.
#include "core/json_input.h"
#include "core/request.h"
#include "prepare/decoded_request.h"

#include <optional>
#include <string>

namespace specd::api {

using prepare::DecodedRequest;

// Images (base64) are decoded here, within `limits`: every violation is a 400 naming it.
DecodedRequest decode_generate(const json & body, const ImageLimits & limits = {});
DecodedRequest decode_chat(const json & body, const ImageLimits & limits = {});

// keep_alive: a number of seconds or a Go-style duration ("5m", "1h30m", "0", "-1").
std::optional<KeepAlive> parse_keep_alive(const json & value);

inline constexpr size_t k_max_keep_alive_chars = 64;

} // namespace specd::api
