#include "templates/go_template_value.h"

namespace specd::templates {

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = Kind::boolean;
    v.b_    = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = Kind::integer;
    v.i_    = i;
    return v;
}

Value Value::floating(double f) {
    Value v;
    v.kind_ = Kind::floating;
    v.f_    = f;
    return v;
}

Value Value::view(std::string_view s) {
    Value v;
    v.kind_ = Kind::string;
    v.s_    = s;
    return v;
}

Value Value::owned(std::string s) {
    Value v;
    v.kind_  = Kind::string;
    v.owner_ = std::make_shared<const std::string>(std::move(s));
    v.s_     = *v.owner_;
    return v;
}

Value Value::array(const json & arr, size_t begin, size_t end) {
    Value v;
    v.kind_  = Kind::array;
    v.node_  = &arr;
    v.begin_ = begin;
    v.end_   = end;
    return v;
}

Value Value::from_json(const json & node) {
    switch (node.type()) {
        case json::value_t::boolean:
            return boolean(node.get<bool>());
        case json::value_t::number_integer:
            return integer(node.get<int64_t>());
        case json::value_t::number_unsigned: {
            const auto u = node.get<uint64_t>();
            return u <= uint64_t(INT64_MAX) ? integer(static_cast<int64_t>(u)) : floating(static_cast<double>(u));
        }
        case json::value_t::number_float:
            return floating(node.get<double>());
        case json::value_t::string:
            return view(node.get_ref<const std::string &>());
        case json::value_t::array:
            return array(node, 0, node.size());
        case json::value_t::object: {
            Value v;
            v.kind_ = Kind::object;
            v.node_ = &node;
            return v;
        }
        default:
            return Value();
    }
}

Value Value::sub(size_t i, size_t j) const {
    Value v = *this;
    if (kind_ == Kind::string) {
        v.s_ = s_.substr(i, j - i);
    } else {
        v.begin_ = begin_ + i;
        v.end_   = begin_ + j;
    }
    return v;
}

size_t Value::length() const {
    switch (kind_) {
        case Kind::string: return s_.size();
        case Kind::array: return end_ - begin_;
        case Kind::object: return node_->size();
        default: return 0;
    }
}

bool Value::truth() const {
    switch (kind_) {
        case Kind::nil: return false;
        case Kind::boolean: return b_;
        case Kind::integer: return i_ != 0;
        case Kind::floating: return f_ != 0.0;
        default: return length() > 0;
    }
}

std::string_view Value::type_name() const {
    switch (kind_) {
        case Kind::nil: return "<nil>";
        case Kind::boolean: return "bool";
        case Kind::integer: return "int";
        case Kind::floating: return "float64";
        case Kind::string: return "string";
        case Kind::array: return "[]interface {}";
        case Kind::object: return "map[string]interface {}";
    }
    return "?";
}

} // namespace specd::templates
