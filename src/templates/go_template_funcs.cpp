#include "templates/go_template_funcs.h"

#include "templates/go_template_format.h"

#include <ctime>
#include <string>
#include <vector>

namespace specd::templates {

namespace {

struct Entry {
    std::string_view name;
    Builtin          f;
};

constexpr Entry k_builtins[] = {
    {"and", Builtin::and_},
    {"or", Builtin::or_},
    {"not", Builtin::not_},
    {"len", Builtin::len},
    {"index", Builtin::index},
    {"slice", Builtin::slice},
    {"eq", Builtin::eq},
    {"ne", Builtin::ne},
    {"lt", Builtin::lt},
    {"le", Builtin::le},
    {"gt", Builtin::gt},
    {"ge", Builtin::ge},
    {"print", Builtin::print},
    {"printf", Builtin::printf},
    {"println", Builtin::println},
    {"html", Builtin::html},
    {"js", Builtin::js},
    {"urlquery", Builtin::urlquery},
    {"call", Builtin::call},
    {"json", Builtin::json},
    {"currentDate", Builtin::current_date},
    {"yesterdayDate", Builtin::yesterday_date},
    {"toTypeScriptType", Builtin::to_typescript_type},
};

[[noreturn]] void fail(const std::string & what) { throw FuncError(what); }

void want_exactly(Builtin f, std::span<const Value> args, size_t n) {
    if (args.size() != n) {
        fail("wrong number of args for " + std::string(builtin_name(f)) + ": want " + std::to_string(n) + " got " +
             std::to_string(args.size()));
    }
}

void want_at_least(Builtin f, std::span<const Value> args, size_t n) {
    if (args.size() < n) {
        fail("wrong number of args for " + std::string(builtin_name(f)) + ": want at least " + std::to_string(n) +
             " got " + std::to_string(args.size()));
    }
}

// Go's indexArg: an integer in [0, cap].
size_t index_arg(const Value & index, size_t cap) {
    if (index.is_nil()) fail("cannot index slice/array with nil");
    if (index.kind() != Value::Kind::integer) {
        fail("cannot index slice/array with type " + std::string(index.type_name()));
    }
    const int64_t x = index.as_int();
    if (x < 0 || static_cast<uint64_t>(x) > cap) fail("index out of range: " + std::to_string(x));
    return static_cast<size_t>(x);
}

Value index(std::span<const Value> args) {
    Value item = args[0];
    if (item.is_nil()) fail("index of untyped nil");
    for (size_t k = 1; k < args.size(); ++k) {
        const Value & idx = args[k];
        switch (item.kind()) {
            case Value::Kind::nil:
                fail("index of nil pointer");
            case Value::Kind::array:
            case Value::Kind::string: {
                const size_t x = index_arg(idx, item.length());
                if (x == item.length()) fail("index out of range: " + std::to_string(x));
                item = item.kind() == Value::Kind::array
                           ? item.element(x)
                           : Value::integer(static_cast<unsigned char>(item.as_string()[x]));
                break;
            }
            case Value::Kind::object: {
                if (idx.kind() != Value::Kind::string) {
                    fail("value has type " + std::string(idx.type_name()) + "; should be string");
                }
                const auto & obj = item.node();
                const auto   it  = obj.find(std::string(idx.as_string()));
                item             = it == obj.end() ? Value() : Value::from_json(*it);
                break;
            }
            default:
                fail("can't index item of type " + std::string(item.type_name()));
        }
    }
    return item;
}

Value slice(std::span<const Value> args) {
    const Value & item = args[0];
    if (item.is_nil()) fail("slice of untyped nil");
    const size_t n = args.size() - 1;
    if (n > 3) fail("too many slice indexes: " + std::to_string(n));
    size_t cap = 0;
    if (item.kind() == Value::Kind::string) {
        if (n == 3) fail("cannot 3-index slice a string");
        cap = item.length();
    } else if (item.kind() == Value::Kind::array) {
        cap = item.capacity();
    } else {
        fail("can't slice item of type " + std::string(item.type_name()));
    }
    size_t idx[3] = {0, item.length(), 0};
    for (size_t k = 0; k < n; ++k) idx[k] = index_arg(args[k + 1], cap);
    if (idx[0] > idx[1]) fail("invalid slice index: " + std::to_string(idx[0]) + " > " + std::to_string(idx[1]));
    // item[i:j:k] only limits the capacity of the result, which nothing here can observe
    // beyond a later slice of it; the view keeps the full capacity.
    if (n == 3 && idx[1] > idx[2]) {
        fail("invalid slice index: " + std::to_string(idx[1]) + " > " + std::to_string(idx[2]));
    }
    return item.sub(idx[0], idx[1]);
}

enum class Basic { nil, boolean, number, string, other };

Basic basic(const Value & v) {
    switch (v.kind()) {
        case Value::Kind::nil: return Basic::nil;
        case Value::Kind::boolean: return Basic::boolean;
        case Value::Kind::integer:
        case Value::Kind::floating: return Basic::number;
        case Value::Kind::string: return Basic::string;
        default: return Basic::other;
    }
}

// Go compares ints with ints and floats with floats; JSON numbers are float64 in Ollama and
// literals are ints, so numbers here compare by value whatever their kind.
int compare_numbers(const Value & a, const Value & b) {
    if (a.kind() == Value::Kind::integer && b.kind() == Value::Kind::integer) {
        return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    const double x = a.as_float(), y = b.as_float();
    return x < y ? -1 : x > y ? 1 : 0;
}

bool equal(const Value & a, const Value & b) {
    const Basic ka = basic(a), kb = basic(b);
    if (ka == Basic::nil || kb == Basic::nil) return ka == kb;
    if (ka != kb) fail("incompatible types for comparison");
    switch (ka) {
        case Basic::boolean: return a.as_bool() == b.as_bool();
        case Basic::number: return compare_numbers(a, b) == 0;
        case Basic::string: return a.as_string() == b.as_string();
        default: fail("non-comparable type " + std::string(a.type_name()));
    }
}

bool less(const Value & a, const Value & b) {
    const Basic ka = basic(a), kb = basic(b);
    if (ka == Basic::nil || ka == Basic::boolean || ka == Basic::other || kb == Basic::nil ||
        kb == Basic::boolean || kb == Basic::other) {
        fail("invalid type for comparison");
    }
    if (ka != kb) fail("incompatible types for comparison");
    if (ka == Basic::number) return compare_numbers(a, b) < 0;
    return a.as_string() < b.as_string();
}

// text/template's evalArgs: a lone string as is, otherwise fmt.Sprint with nil printed as
// "<no value>".
std::string eval_args(std::span<const Value> args) {
    if (args.size() == 1 && args[0].kind() == Value::Kind::string) return std::string(args[0].as_string());
    std::vector<Value> printable(args.begin(), args.end());
    for (auto & v : printable) {
        if (v.is_nil()) v = Value::view("<no value>");
    }
    return sprint(printable);
}

std::string date(int days_back, std::span<const Value> args) {
    for (const auto & a : args) {
        if (a.kind() != Value::Kind::string) {
            fail("wrong type for value; expected string; got " + std::string(a.type_name()));
        }
    }
    const std::time_t now = std::time(nullptr) - static_cast<std::time_t>(days_back) * 86400;
    std::tm           tm{};
    localtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

std::string_view typescript_type(std::string_view json_type) {
    if (json_type == "string") return "string";
    if (json_type == "number" || json_type == "integer") return "number";
    if (json_type == "boolean") return "boolean";
    if (json_type == "array") return "any[]";
    if (json_type == "object") return "Record<string, any>";
    if (json_type == "null") return "null";
    return "any";
}

// Ollama's ToolProperty.ToTypeScriptType on the property's JSON.
std::string to_typescript_type(const json & prop, int depth) {
    if (!prop.is_object() || depth > 64) return "any";
    const auto any_of = prop.find("anyOf");
    if (any_of != prop.end() && any_of->is_array() && !any_of->empty()) {
        std::string out;
        for (const auto & alt : *any_of) {
            if (!out.empty()) out += " | ";
            out += to_typescript_type(alt, depth + 1);
        }
        return out;
    }
    const auto type = prop.find("type");
    if (type == prop.end()) return "any";
    if (type->is_string()) return std::string(typescript_type(type->get_ref<const std::string &>()));
    if (!type->is_array() || type->empty()) return "any";
    std::string out;
    for (const auto & t : *type) {
        if (!out.empty()) out += " | ";
        out += t.is_string() ? typescript_type(t.get_ref<const std::string &>()) : "any";
    }
    return out;
}

} // namespace

std::optional<Builtin> find_builtin(std::string_view name) {
    for (const auto & e : k_builtins) {
        if (e.name == name) return e.f;
    }
    return std::nullopt;
}

std::string_view builtin_name(Builtin f) {
    for (const auto & e : k_builtins) {
        if (e.f == f) return e.name;
    }
    return "?";
}

Value call_builtin(Builtin f, std::span<const Value> args) {
    switch (f) {
        case Builtin::and_:
        case Builtin::or_:
            fail("and/or are evaluated by the renderer"); // not reached
        case Builtin::not_:
            want_exactly(f, args, 1);
            return Value::boolean(!args[0].truth());
        case Builtin::len:
            want_exactly(f, args, 1);
            switch (args[0].kind()) {
                case Value::Kind::nil: fail("len of nil pointer");
                case Value::Kind::string:
                case Value::Kind::array:
                case Value::Kind::object: return Value::integer(static_cast<int64_t>(args[0].length()));
                default: fail("len of type " + std::string(args[0].type_name()));
            }
        case Builtin::index:
            want_at_least(f, args, 1);
            return index(args);
        case Builtin::slice:
            want_at_least(f, args, 1);
            return slice(args);
        case Builtin::eq:
            want_at_least(f, args, 1);
            if (args.size() == 1) fail("missing argument for comparison");
            for (size_t k = 1; k < args.size(); ++k) {
                if (equal(args[0], args[k])) return Value::boolean(true);
            }
            return Value::boolean(false);
        case Builtin::ne:
            want_exactly(f, args, 2);
            return Value::boolean(!equal(args[0], args[1]));
        case Builtin::lt:
            want_exactly(f, args, 2);
            return Value::boolean(less(args[0], args[1]));
        case Builtin::le:
            want_exactly(f, args, 2);
            return Value::boolean(less(args[0], args[1]) || equal(args[0], args[1]));
        case Builtin::gt:
            want_exactly(f, args, 2);
            return Value::boolean(!(less(args[0], args[1]) || equal(args[0], args[1])));
        case Builtin::ge:
            want_exactly(f, args, 2);
            return Value::boolean(!less(args[0], args[1]));
        case Builtin::print:
            return Value::owned(sprint(args));
        case Builtin::println:
            return Value::owned(sprintln(args));
        case Builtin::printf:
            want_at_least(f, args, 1);
            if (args[0].kind() != Value::Kind::string) {
                fail("wrong type for value; expected string; got " + std::string(args[0].type_name()));
            }
            return Value::owned(sprintf(args[0].as_string(), args.subspan(1)));
        case Builtin::html:
            return Value::owned(html_escape(eval_args(args)));
        case Builtin::js:
            return Value::owned(js_escape(eval_args(args)));
        case Builtin::urlquery:
            return Value::owned(query_escape(eval_args(args)));
        case Builtin::call:
            want_at_least(f, args, 1);
            fail("can't call " + std::string(args[0].type_name()) + ": template data holds no functions");
        case Builtin::json: {
            want_exactly(f, args, 1);
            std::string out;
            if (!append_json(out, args[0])) out.clear(); // Ollama's json ignores Marshal's error
            return Value::owned(std::move(out));
        }
        case Builtin::current_date:
            return Value::owned(date(0, args));
        case Builtin::yesterday_date:
            return Value::owned(date(1, args));
        case Builtin::to_typescript_type:
            want_exactly(f, args, 1);
            return Value::owned(args[0].kind() == Value::Kind::object ? to_typescript_type(args[0].node(), 0) : "any");
    }
    fail("unknown function");
}

} // namespace specd::templates
