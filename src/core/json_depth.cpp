#include "core/json_depth.h"

#include <algorithm>

namespace specd {

int json_nesting_depth(std::string_view text) {
    int  depth = 0, max_depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') max_depth = std::max(max_depth, ++depth);
        else if (c == '}' || c == ']') --depth;
    }
    return max_depth;
}

} // namespace specd
