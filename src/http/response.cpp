#include "http/response.h"

#include <stdexcept>

namespace specd::http {

void Response::set_content(std::string content, std::string_view content_type) {
    body = std::move(content);
    headers.set("Content-Type", std::string(content_type));
}

ResponseStream & Response::stream(std::string_view content_type) {
    if (stream_) throw std::logic_error("a response is streamed only once");
    if (!open_) throw std::logic_error("this response cannot be streamed");
    headers.set("Content-Type", std::string(content_type));
    stream_ = &open_(*this);
    return *stream_;
}

} // namespace specd::http
