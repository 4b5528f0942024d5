#include "templates/go_template_exec.h"

#include "core/error.h"
#include "templates/go_template_format.h"
#include "templates/go_template_funcs.h"
#include "templates/go_template_lexer.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

namespace specd::templates {

namespace {

using ast::Arg;
using ast::ArgKind;
using ast::List;
using ast::Node;
using ast::NodeKind;

enum class Flow { normal, break_, continue_ };

class Exec {
  public:
    Exec(std::string_view source, const GoTemplateLimits & limits, std::string & out) :
        src_(source), limits_(limits), out_(out) {}

    void run(const List & root, const json & data) {
        const Value dot = Value::from_json(data);
        vars_.emplace_back("$", dot);
        walk_list(dot, root);
    }

  private:
    [[noreturn]] void fail(size_t pos, const std::string & what) const {
        throw bad_request("cannot render template: " + describe_position(src_, pos) + ": " + what);
    }

    void step(size_t pos) {
        if (++steps_ > limits_.max_steps) {
            fail(pos, "more than max_steps (" + std::to_string(limits_.max_steps) + ") evaluation steps");
        }
    }

    void write(std::string_view s, size_t pos) {
        if (s.size() > limits_.max_output_bytes - std::min(out_.size() - out_start_, limits_.max_output_bytes)) {
            fail(pos, "output exceeds max_output_bytes (" + std::to_string(limits_.max_output_bytes) + " bytes)");
        }
        out_ += s;
    }

    // An action's value as text/template prints it: a missing value is "<no value>".
    void print(const Value & v, size_t pos) {
        switch (v.kind()) {
            case Value::Kind::nil: write("<no value>", pos); return;
            case Value::Kind::string: write(v.as_string(), pos); return;
            default: {
                std::string s;
                append_value(s, v);
                write(s, pos);
            }
        }
    }

    Flow walk_list(const Value & dot, const List & list) {
        for (const auto & n : list) {
            const Flow f = walk(dot, *n);
            if (f != Flow::normal) return f;
        }
        return Flow::normal;
    }

    Flow walk(const Value & dot, const Node & n) {
        step(n.pos);
        switch (n.kind) {
            case NodeKind::text: write(n.text, n.pos); return Flow::normal;
            case NodeKind::action: {
                const Value v = eval_pipeline(dot, *n.pipe);
                if (n.pipe->decl.empty()) print(v, n.pos);
                return Flow::normal;
            }
            case NodeKind::if_:
            case NodeKind::with: return walk_if_with(dot, n);
            case NodeKind::range: return walk_range(dot, n);
            case NodeKind::break_: return Flow::break_;
            case NodeKind::continue_: return Flow::continue_;
        }
        return Flow::normal;
    }

    // Variables declared in the conditions live to the {{end}}.
    Flow walk_if_with(const Value & dot, const Node & n) {
        const size_t mark = vars_.size();
        Flow         flow = Flow::normal;
        bool         done = false;
        for (const auto & b : n.branches) {
            const Value v = eval_pipeline(dot, *b.pipe);
            if (v.truth()) {
                flow = walk_list(n.kind == NodeKind::with ? v : dot, b.list);
                done = true;
                break;
            }
        }
        if (!done) flow = walk_list(dot, n.else_list);
        vars_.resize(mark);
        return flow;
    }

    Flow walk_range(const Value & dot, const Node & n) {
        const auto & b    = n.branches.front();
        const auto & decl = b.pipe->decl;
        const size_t mark = vars_.size();
        const Value  val  = eval_pipeline(dot, *b.pipe);
        const size_t body = vars_.size();
        size_t       ran  = 0;

        // One iteration, as Go's walkRange: := sets the pushed variables (the element last,
        // the index before it), = assigns existing ones.
        auto one = [&](const Value & index, const Value & elem) {
            if (++iterations_ > limits_.max_range_iterations) {
                fail(n.pos, "more than max_range_iterations (" + std::to_string(limits_.max_range_iterations) +
                                ") range iterations");
            }
            ++ran;
            if (b.pipe->is_assign) {
                if (decl.size() == 2) {
                    set_var(decl[0], index, n.pos);
                    set_var(decl[1], elem, n.pos);
                } else if (decl.size() == 1) {
                    set_var(decl[0], elem, n.pos);
                }
            } else {
                if (!decl.empty()) vars_[body - 1].second = elem;
                if (decl.size() == 2) vars_[body - 2].second = index;
            }
            const Flow f = walk_list(elem, b.list);
            vars_.resize(body);
            return f;
        };

        switch (val.kind()) {
            case Value::Kind::array:
                for (size_t i = 0; i < val.length(); ++i) {
                    if (one(Value::integer(static_cast<int64_t>(i)), val.element(i)) == Flow::break_) break;
                }
                break;
            case Value::Kind::object: {
                // Go ranges over a map in key order.
                std::vector<std::pair<std::string_view, const json *>> members;
                for (const auto & [k, v] : val.node().items()) members.emplace_back(k, &v);
                std::sort(members.begin(), members.end());
                for (const auto & [k, v] : members) {
                    if (one(Value::view(k), Value::from_json(*v)) == Flow::break_) break;
                }
                break;
            }
            case Value::Kind::integer:
                if (decl.size() > 1) {
                    fail(n.pos, "can't use " + std::to_string(val.as_int()) + " to iterate over more than one variable");
                }
                for (int64_t i = 0; i < val.as_int(); ++i) {
                    if (one(Value::integer(i), Value::integer(i)) == Flow::break_) break;
                }
                break;
            case Value::Kind::nil:
                break;
            default: {
                std::string s;
                append_value(s, val);
                fail(n.pos, "range can't iterate over " + s);
            }
        }
        // A break or continue in the else list belongs to an enclosing range.
        const Flow flow = ran == 0 ? walk_list(dot, n.else_list) : Flow::normal;
        vars_.resize(mark);
        return flow;
    }

    Value eval_pipeline(const Value & dot, const ast::Pipeline & p) {
        Value v;
        for (size_t i = 0; i < p.cmds.size(); ++i) {
            Value final = std::move(v);
            v           = eval_command(dot, p.cmds[i], i == 0 ? nullptr : &final);
        }
        for (const auto & name : p.decl) {
            if (p.is_assign) {
                set_var(name, v, p.pos);
            } else {
                vars_.emplace_back(name, v);
            }
        }
        return v;
    }

    Value eval_command(const Value & dot, const ast::Command & cmd, const Value * final) {
        step(cmd.pos);
        const Arg &          first    = cmd.args.front();
        const std::span<const Arg> rest = std::span<const Arg>(cmd.args).subspan(1);
        const bool           has_args = !rest.empty() || final != nullptr;
        switch (first.kind) {
            case ArgKind::field: return eval_fields(dot, first, has_args);
            case ArgKind::chain: return eval_fields(eval_arg(dot, *first.base), first, has_args);
            case ArgKind::variable: return eval_fields(lookup(first.name, first.pos), first, has_args);
            case ArgKind::function: return eval_function(dot, first, rest, final);
            default: break;
        }
        if (has_args) fail(first.pos, "can't give argument to non-function");
        if (first.kind == ArgKind::pipeline) return eval_pipeline(dot, *first.pipe);
        if (first.kind == ArgKind::nil) fail(first.pos, "nil is not a command");
        return eval_arg(dot, first);
    }

    Value eval_arg(const Value & dot, const Arg & a) {
        switch (a.kind) {
            case ArgKind::dot: return dot;
            case ArgKind::nil: return Value();
            case ArgKind::field: return eval_fields(dot, a, false);
            case ArgKind::variable: return eval_fields(lookup(a.name, a.pos), a, false);
            case ArgKind::chain: return eval_fields(eval_arg(dot, *a.base), a, false);
            case ArgKind::pipeline: return eval_pipeline(dot, *a.pipe);
            case ArgKind::function: return eval_function(dot, a, {}, nullptr);
            case ArgKind::boolean: return Value::boolean(a.bool_val);
            case ArgKind::number: return a.is_int ? Value::integer(a.int_val) : Value::floating(a.float_val);
            case ArgKind::string: return Value::view(a.str);
        }
        return Value();
    }

    // receiver.F1.F2...: keys of objects. `.Name` falls back to the key "name": Ollama's tool
    // types are Go structs whose fields (Function, Name, Parameters) marshal under lower-case
    // JSON names, and the data holds them under those names so that they print as Ollama
    // prints them. A field of a missing value is missing (Go fails on some of these; a
    // missing key is the common case and prints "<no value>").
    Value eval_fields(Value v, const Arg & a, bool has_args) {
        if (has_args) {
            if (a.fields.empty()) fail(a.pos, "can't give argument to non-function " + a.name);
            fail(a.pos, a.fields.back() + " is not a method but has arguments");
        }
        for (const auto & name : a.fields) {
            switch (v.kind()) {
                case Value::Kind::object: {
                    const auto & obj = v.node();
                    auto         it  = obj.find(name);
                    if (it == obj.end() && name[0] >= 'A' && name[0] <= 'Z') {
                        std::string json_name = name;
                        json_name[0]          = static_cast<char>(name[0] - 'A' + 'a');
                        it                    = obj.find(json_name);
                    }
                    v = it == obj.end() ? Value() : Value::from_json(*it);
                    break;
                }
                case Value::Kind::nil:
                    break;
                default:
                    fail(a.pos, "can't evaluate field " + name + " in type " + std::string(v.type_name()));
            }
        }
        return v;
    }

    Value eval_function(const Value & dot, const Arg & fn, std::span<const Arg> args, const Value * final) {
        const std::string_view name = builtin_name(fn.func);
        if (fn.func == Builtin::and_ || fn.func == Builtin::or_) {
            if (args.empty() && final == nullptr) {
                fail(fn.pos, "wrong number of args for " + std::string(name) + ": want at least 1 got 0");
            }
            const bool is_or = fn.func == Builtin::or_;
            Value      v;
            for (const auto & a : args) {
                v = eval_arg(dot, a);
                if (v.truth() == is_or) return v;
            }
            return final ? *final : v;
        }
        std::vector<Value> vals;
        vals.reserve(args.size() + 1);
        for (const auto & a : args) vals.push_back(eval_arg(dot, a));
        if (final) vals.push_back(*final);
        // A comparison reads as many bytes as the shorter string (eq of different lengths
        // reads none, but that is not worth telling apart).
        if (fn.func == Builtin::eq || fn.func == Builtin::ne || fn.func == Builtin::lt || fn.func == Builtin::le ||
            fn.func == Builtin::gt || fn.func == Builtin::ge) {
            for (size_t k = 1; k < vals.size(); ++k) {
                if (vals[0].kind() == Value::Kind::string && vals[k].kind() == Value::Kind::string) {
                    charge(std::min(vals[0].length(), vals[k].length()), fn.pos);
                }
            }
        }
        Value r;
        try {
            r = call_builtin(fn.func, vals);
        } catch (const FuncError & e) {
            fail(fn.pos, "error calling " + std::string(name) + ": " + e.what());
        }
        if (r.owns_string()) charge(r.length(), fn.pos);
        return r;
    }

    void charge(size_t bytes, size_t pos) {
        function_bytes_ += bytes;
        if (function_bytes_ > limits_.max_function_bytes) {
            fail(pos, "functions made or compared more than max_function_bytes (" +
                          std::to_string(limits_.max_function_bytes) + " bytes)");
        }
    }

    Value lookup(const std::string & name, size_t pos) const {
        for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
            if (it->first == name) return it->second;
        }
        fail(pos, "undefined variable: " + name);
    }

    void set_var(const std::string & name, const Value & v, size_t pos) {
        for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
            if (it->first == name) {
                it->second = v;
                return;
            }
        }
        fail(pos, "undefined variable: " + name);
    }

    std::string_view                         src_;
    const GoTemplateLimits &                 limits_;
    std::string &                            out_;
    size_t                                   out_start_ = out_.size();
    std::vector<std::pair<std::string, Value>> vars_;
    uint64_t                                 steps_      = 0;
    uint64_t                                 iterations_ = 0;
    size_t                                   function_bytes_ = 0;
};

} // namespace

void execute(const ast::List & root, std::string_view source, const json & data, const GoTemplateLimits & limits,
             std::string & out) {
    Exec(source, limits, out).run(root, data);
}

} // namespace specd::templates
