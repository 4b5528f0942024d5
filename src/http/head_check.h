#pragma once
// The checks a parsed request head must pass before routing, beyond what the HTTP parser
// itself refuses (bad syntax, a bad or conflicting Content-Length, Content-Length beside
// chunked): the size of the target and of each field line, the number of fields, one Host.
#include "http/request.h"

#include <optional>
#include <string>

namespace specd::http {

struct Refusal {
    int         status = 400;
    std::string message;
};

std::optional<Refusal> check_head(const Request & head);

// The target's path, percent-decoded ("%3A" -> ":"); a malformed escape stays as it is.
std::string decode_path(std::string_view path);

} // namespace specd::http
