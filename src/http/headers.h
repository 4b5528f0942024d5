#pragma once
// Header fields of a request or an answer: names compared without case; order and repeats
// kept, because a repeated field can make a request malformed (two Host headers).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specd::http {

bool iequals(std::string_view a, std::string_view b);

class Headers {
  public:
    void add(std::string name, std::string value);
    // Replaces every field of that name with one.
    void set(std::string_view name, std::string value);

    // The first value of the field, "" when it is absent.
    std::string get(std::string_view name) const;
    bool        has(std::string_view name) const;
    size_t      count(std::string_view name) const;

    const std::vector<std::pair<std::string, std::string>> & fields() const { return fields_; }

  private:
    std::vector<std::pair<std::string, std::string>> fields_;
};

} // namespace specd::http
