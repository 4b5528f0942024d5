#include "http/headers.h"

#include <algorithm>
#include <cctype>

namespace specd::http {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
               return std::tolower(x) == std::tolower(y);
           });
}

void Headers::add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }

void Headers::set(std::string_view name, std::string value) {
    std::erase_if(fields_, [&](const auto & f) { return iequals(f.first, name); });
    fields_.emplace_back(std::string(name), std::move(value));
}

std::string Headers::get(std::string_view name) const {
    for (const auto & [n, v] : fields_) {
        if (iequals(n, name)) return v;
    }
    return "";
}

bool Headers::has(std::string_view name) const { return count(name) > 0; }

size_t Headers::count(std::string_view name) const {
    return std::count_if(fields_.begin(), fields_.end(), [&](const auto & f) { return iequals(f.first, name); });
}

} // namespace specd::http
