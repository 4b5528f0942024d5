#include "models/parameters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

namespace specd::models {

namespace {

using Int32Field  = std::optional<int32_t> Parameters::*;
using Int64Field  = std::optional<int64_t> Parameters::*;
using DoubleField = std::optional<double> Parameters::*;
struct StopField {};

struct Field {
    std::string_view                                          name;
    std::variant<Int32Field, Int64Field, DoubleField, StopField> member;
    // Inclusive range of accepted values; catches typos like top_p 9 at create time instead
    // of at the first request.
    double min;
    double max;
};

constexpr double k_int32_max = double(std::numeric_limits<int32_t>::max());
constexpr double k_inf       = std::numeric_limits<double>::infinity();

const Field k_fields[] = {
    {"num_ctx",           &Parameters::num_ctx,           1,    k_int32_max},
    {"num_predict",       &Parameters::num_predict,       -2,   k_int32_max}, // -1 unbounded, -2 fill context
    {"num_keep",          &Parameters::num_keep,          -1,   k_int32_max}, // -1 keep the whole prompt
    {"num_batch",         &Parameters::num_batch,         1,    k_int32_max},
    {"num_thread",        &Parameters::num_thread,        0,    k_int32_max}, // 0 one per core
    {"num_gpu",           &Parameters::num_gpu,           -1,   100000},      // -1 as many as fit
    {"main_gpu",          &Parameters::main_gpu,          0,    1024},
    {"draft_num_predict", &Parameters::draft_num_predict, 0,    k_int32_max},
    {"draft_depth",       &Parameters::draft_depth,       0,    16}, // the engine's deepest round
    {"temperature",       &Parameters::temperature,       0,    k_inf},
    {"top_k",             &Parameters::top_k,             0,    k_int32_max},
    {"top_p",             &Parameters::top_p,             0,    1},
    {"min_p",             &Parameters::min_p,             0,    1},
    {"typical_p",         &Parameters::typical_p,         0,    1},
    {"repeat_penalty",    &Parameters::repeat_penalty,    0,    k_inf},
    {"repeat_last_n",     &Parameters::repeat_last_n,     -1,   k_int32_max}, // -1 the whole context
    {"presence_penalty",  &Parameters::presence_penalty,  -k_inf, k_inf},
    {"frequency_penalty", &Parameters::frequency_penalty, -k_inf, k_inf},
    {"seed",              &Parameters::seed,              -k_inf, k_inf},   // -1 random per request
    {"mirostat",          &Parameters::mirostat,          0,    2},     // 0 off, 1 or 2 the version
    {"mirostat_tau",      &Parameters::mirostat_tau,      0,    k_inf},
    {"mirostat_eta",      &Parameters::mirostat_eta,      0,    k_inf},
    {"stop",              StopField{},                    0,    0},
};

const Field * find_field(std::string_view name) {
    for (const auto & f : k_fields) {
        if (f.name == name) {
            return &f;
        }
    }
    return nullptr;
}

std::string range_error(const Field & f) {
    auto num = [](double v) {
        if (v == k_int32_max) {
            return std::string("2147483647");
        }
        nlohmann::json j = v;
        if (v == std::floor(v)) {
            j = int64_t(v);
        }
        return j.dump();
    };
    std::string msg = "invalid value for parameter " + std::string(f.name) + ": must be ";
    if (f.min == -k_inf) { // seed: only an integer beyond int64 gets here
        return msg + "a 64-bit integer";
    }
    if (f.max == k_inf) {
        return msg + ">= " + num(f.min);
    }
    return msg + "between " + num(f.min) + " and " + num(f.max);
}

template <typename T> bool parse_number(std::string_view text, T & out) {
    if (!text.empty() && text.front() == '+') {
        text.remove_prefix(1); // from_chars does not take a '+', people write one
    }
    const char * end = text.data() + text.size();
    auto [ptr, ec]   = std::from_chars(text.data(), end, out);
    return ec == std::errc() && ptr == end && !text.empty();
}

// Stores a number already checked to be an integer (or a finite double for double fields).
std::optional<std::string> store_number(Parameters & p, const Field & f, double as_double, int64_t as_int,
                                        bool is_integer) {
    if (as_double < f.min || as_double > f.max) {
        return range_error(f);
    }
    if (auto m = std::get_if<Int32Field>(&f.member)) {
        if (!is_integer) {
            return "invalid value for parameter " + std::string(f.name) + ": expected an integer";
        }
        p.*(*m) = int32_t(as_int);
    } else if (auto m = std::get_if<Int64Field>(&f.member)) {
        if (!is_integer) {
            return "invalid value for parameter " + std::string(f.name) + ": expected an integer";
        }
        p.*(*m) = as_int;
    } else if (auto m = std::get_if<DoubleField>(&f.member)) {
        p.*(*m) = as_double;
    }
    return std::nullopt;
}

} // namespace

bool is_known_parameter(std::string_view name) { return find_field(name) != nullptr; }

std::optional<std::string> Parameters::set(std::string_view name, std::string_view value) {
    const Field * f = find_field(name);
    if (f == nullptr) {
        return "unknown parameter: " + std::string(name);
    }
    if (std::holds_alternative<StopField>(f->member)) {
        if (value.empty()) {
            return std::string("invalid value for parameter stop: empty stop string");
        }
        stop.emplace_back(value);
        return std::nullopt;
    }
    const bool integral = !std::holds_alternative<DoubleField>(f->member);
    if (integral) {
        int64_t v = 0;
        if (!parse_number(value, v)) {
            return "invalid value for parameter " + std::string(f->name) + ": expected an integer, got '" +
                   std::string(value) + "'";
        }
        return store_number(*this, *f, double(v), v, true);
    }
    double v = 0;
    if (!parse_number(value, v) || !std::isfinite(v)) {
        return "invalid value for parameter " + std::string(f->name) + ": expected a number, got '" +
               std::string(value) + "'";
    }
    return store_number(*this, *f, v, 0, false);
}

std::optional<std::string> Parameters::set_json(std::string_view name, const nlohmann::json & value) {
    const Field * f = find_field(name);
    if (f == nullptr) {
        return "unknown parameter: " + std::string(name);
    }
    if (std::holds_alternative<StopField>(f->member)) {
        std::vector<std::string> list;
        if (value.is_string()) {
            list.push_back(value.get<std::string>());
        } else if (value.is_array()) {
            for (const auto & s : value) {
                if (!s.is_string()) {
                    return std::string("invalid value for parameter stop: expected strings");
                }
                list.push_back(s.get<std::string>());
            }
        } else {
            return std::string("invalid value for parameter stop: expected a string or a list of strings");
        }
        for (const auto & s : list) {
            if (s.empty()) {
                return std::string("invalid value for parameter stop: empty stop string");
            }
        }
        stop = std::move(list);
        return std::nullopt;
    }
    if (!value.is_number()) {
        return "invalid value for parameter " + std::string(f->name) + ": expected a number";
    }
    if (value.is_number_integer()) {
        if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
            return range_error(*f);
        }
        const int64_t v = value.get<int64_t>();
        return store_number(*this, *f, double(v), v, true);
    }
    const double v = value.get<double>();
    if (!std::isfinite(v)) {
        return "invalid value for parameter " + std::string(f->name) + ": expected a finite number";
    }
    // 4096.0 is an integer for an integer option (JSON clients often send floats); 0.5 is not.
    const bool integral = v == std::floor(v) && std::fabs(v) < 9.2e18;
    return store_number(*this, *f, v, integral ? int64_t(v) : 0, integral);
}

void Parameters::merge_from(const Parameters & over) {
    for (const auto & f : k_fields) {
        if (auto m = std::get_if<Int32Field>(&f.member); m && (over.*(*m)).has_value()) {
            this->*(*m) = over.*(*m);
        } else if (auto m = std::get_if<Int64Field>(&f.member); m && (over.*(*m)).has_value()) {
            this->*(*m) = over.*(*m);
        } else if (auto m = std::get_if<DoubleField>(&f.member); m && (over.*(*m)).has_value()) {
            this->*(*m) = over.*(*m);
        }
    }
    if (!over.stop.empty()) {
        stop = over.stop;
    }
}

bool Parameters::empty() const { return *this == Parameters{}; }

nlohmann::json to_json(const Parameters & p) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto & f : k_fields) {
        const std::string key(f.name);
        if (auto m = std::get_if<Int32Field>(&f.member); m && (p.*(*m)).has_value()) {
            j[key] = *(p.*(*m));
        } else if (auto m = std::get_if<Int64Field>(&f.member); m && (p.*(*m)).has_value()) {
            j[key] = *(p.*(*m));
        } else if (auto m = std::get_if<DoubleField>(&f.member); m && (p.*(*m)).has_value()) {
            j[key] = *(p.*(*m));
        }
    }
    if (!p.stop.empty()) {
        j["stop"] = p.stop;
    }
    return j;
}

Parameters parameters_from_json(const nlohmann::json & j) {
    if (!j.is_object()) {
        throw std::invalid_argument("parameters must be a JSON object");
    }
    Parameters p;
    for (const auto & [key, value] : j.items()) {
        if (auto err = p.set_json(key, value)) {
            throw std::invalid_argument(*err);
        }
    }
    return p;
}

std::string to_show_text(const Parameters & p) {
    std::string      out;
    const nlohmann::json j = to_json(p);
    auto line = [&](const std::string & key, const std::string & value) {
        std::string name = key;
        name.resize(std::max<size_t>(name.size(), 30), ' ');
        out += name + " " + value + "\n";
    };
    for (const auto & f : k_fields) {
        const std::string key(f.name);
        if (!j.contains(key)) {
            continue;
        }
        if (key == "stop") {
            for (const auto & s : p.stop) {
                line(key, nlohmann::json(s).dump());
            }
        } else {
            line(key, j[key].dump());
        }
    }
    return out;
}

} // namespace specd::models
