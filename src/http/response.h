#pragma once
// An answer: whole (status, headers, body), or streamed: stream() sends the head at once and
// every write() waits until its chunk is sent, so a handler in a blocking loop (waiting on a
// generation's events) learns at each write whether the client is still there.
#include "http/headers.h"

#include <functional>
#include <string>
#include <string_view>

namespace specd::http {

class ResponseStream {
  public:
    virtual ~ResponseStream() = default;
    // Sends `data` as one chunk of the body. False when the client is gone or stopped reading:
    // nothing more reaches it.
    virtual bool write(std::string_view data) = 0;
};

class Response {
  public:
    int     status = 200;
    Headers headers;
    std::string body; // a whole answer's body

    void set_content(std::string content, std::string_view content_type);

    // Starts a chunked answer with `status` and `headers` as they are now; the answer ends
    // when the handler returns. Only once per response.
    ResponseStream & stream(std::string_view content_type);
    bool             streamed() const { return stream_ != nullptr; }

    // The transport's side: what stream() calls to send the head.
    using StreamOpener = std::function<ResponseStream &(Response &)>;
    void set_stream_opener(StreamOpener opener) { open_ = std::move(opener); }

  private:
    StreamOpener     open_;
    ResponseStream * stream_ = nullptr;
};

} // namespace specd::http
