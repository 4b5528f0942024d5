#pragma once
// What a template computes with: Go's values as the template sees them, over JSON data. A
// string from the data or the template is a view (rendering copies no message text); arrays
// and objects are references into the data, and `slice` of an array is a view of it, so
// `len (slice $.Messages $i)` in a loop costs nothing. Owned strings are the results of
// functions (print, printf, json, ...).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace specd::templates {

using json = nlohmann::ordered_json;

class Value {
  public:
    // nil is Go's "no value": a missing key, JSON null, an unset variable.
    enum class Kind { nil, boolean, integer, floating, string, array, object };

    Value() = default;
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value floating(double f);
    static Value view(std::string_view s); // the bytes must outlive the render
    static Value owned(std::string s);
    static Value array(const json & arr, size_t begin, size_t end);
    static Value from_json(const json & node); // scalars by value, the rest by reference

    Kind kind() const { return kind_; }
    bool is_nil() const { return kind_ == Kind::nil; }
    bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating; }

    bool             as_bool() const { return b_; }
    int64_t          as_int() const { return i_; }
    double           as_float() const { return kind_ == Kind::integer ? static_cast<double>(i_) : f_; }
    std::string_view as_string() const { return s_; }
    bool             owns_string() const { return owner_ != nullptr; }

    // Arrays: the elements [begin, end) of node(); objects: node() itself.
    const json & node() const { return *node_; }
    size_t       begin() const { return begin_; }
    size_t       end() const { return end_; }
    size_t       capacity() const { return node_->size() - begin_; } // Go's cap() of the view
    Value        element(size_t i) const { return from_json((*node_)[begin_ + i]); }
    // [i, j) of a string or an array (j may reach an array's capacity), sharing its storage.
    Value        sub(size_t i, size_t j) const;

    // len(): bytes of a string, elements of an array, members of an object.
    size_t length() const;
    // Go's truth: false, 0, nil and empty strings, arrays and objects are false.
    bool truth() const;
    // The type Go would report for the value Ollama passes ("string", "int", "float64",
    // "bool", "[]interface {}", "map[string]interface {}").
    std::string_view type_name() const;

  private:
    Kind                               kind_ = Kind::nil;
    bool                               b_    = false;
    int64_t                            i_    = 0;
    double                             f_    = 0.0;
    std::string_view                   s_;
    std::shared_ptr<const std::string> owner_;
    const json *                       node_  = nullptr;
    size_t                             begin_ = 0;
    size_t                             end_   = 0;
};

} // namespace specd::templates
