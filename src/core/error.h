#pragma once
// Errors that end the current request. Lower layers say what kind of failure it was; the
// api layer alone maps kinds to HTTP statuses.
#include <stdexcept>
#include <string>
#include <utility>

namespace specd {

enum class ErrorKind {
    bad_request,   // the request cannot be honoured as asked (400)
    not_found,     // unknown model (404)
    busy,          // queue full (503)
    cancelled,     // the client went away; nobody reads the answer
    upstream,      // another server we depend on (a registry) failed or is unreachable (502)
    internal,      // a real fault of ours (500)
};

class Error : public std::runtime_error {
  public:
    Error(ErrorKind kind, const std::string & message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

  private:
    ErrorKind kind_;
};

inline Error bad_request(const std::string & message) { return Error(ErrorKind::bad_request, message); }

// A bad_request about one field of the request.
class ParamError : public Error {
  public:
    ParamError(std::string param, const std::string & message) :
        Error(ErrorKind::bad_request, message), param_(std::move(param)) {}
    const std::string & param() const { return param_; }

  private:
    std::string param_;
};

} // namespace specd
