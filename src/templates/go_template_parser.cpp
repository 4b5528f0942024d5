#include "templates/go_template_parser.h"

#include "core/error.h"
#include "templates/go_template_lexer.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <set>

namespace specd::templates {

namespace {

using ast::Arg;
using ast::ArgKind;
using ast::List;
using ast::Node;
using ast::NodeKind;

// How an item list ended.
enum class Closer { end, else_, else_if, else_with };

struct ListEnd {
    Closer closer;
    size_t pos;
};

std::string describe(const Token & t) {
    switch (t.kind) {
        case TokenKind::eof: return "EOF";
        case TokenKind::kw_nil: case TokenKind::kw_if: case TokenKind::kw_else: case TokenKind::kw_end:
        case TokenKind::kw_range: case TokenKind::kw_with: case TokenKind::kw_break:
        case TokenKind::kw_continue: case TokenKind::kw_define: case TokenKind::kw_template:
        case TokenKind::kw_block:
            return "<" + std::string(t.text) + ">";
        default: {
            std::string s(t.text.substr(0, 20));
            if (t.text.size() > 20) s += "...";
            return "\"" + s + "\"";
        }
    }
}

class Parser {
  public:
    Parser(std::string_view source, const GoTemplateLimits & limits) :
        src_(source), lexer_(source), max_depth_(limits.max_nesting_depth), max_vars_(limits.max_variables) {
        vars_.push_back("$");
    }

    List parse_root() {
        List root;
        while (peek().kind != TokenKind::eof) {
            ListEnd end{};
            auto    node = text_or_action(end);
            if (!node) fail(end.pos, end.closer == Closer::end ? "unexpected {{end}}" : "unexpected {{else}}");
            root.push_back(std::move(node));
        }
        return root;
    }

  private:
    [[noreturn]] void fail(size_t pos, const std::string & what) const {
        throw bad_request("invalid template: " + describe_position(src_, pos) + ": " + what);
    }

    const Token & peek(size_t k = 0) {
        while (buf_.size() <= k) buf_.push_back(lexer_.next());
        return buf_[k];
    }

    Token next() {
        peek();
        Token t = std::move(buf_.front());
        buf_.pop_front();
        return t;
    }

    void expect_right_delim(const char * context) {
        const Token t = next();
        if (t.kind != TokenKind::right_delim) fail(t.pos, "unexpected " + describe(t) + " in " + context);
    }

    void enter(size_t pos) {
        if (++depth_ > max_depth_) {
            fail(pos, "nesting deeper than the " + std::to_string(max_depth_) +
                          " levels allowed (max_nesting_depth)");
        }
    }

    // A node, or null when the item closes a list ({{end}}, {{else}}): then `end` says which.
    std::unique_ptr<Node> text_or_action(ListEnd & end) {
        const Token t = next();
        if (t.kind == TokenKind::text) {
            auto n  = std::make_unique<Node>();
            n->kind = NodeKind::text;
            n->pos  = t.pos;
            n->text = std::string(t.text);
            return n;
        }
        if (t.kind != TokenKind::left_delim) fail(t.pos, "unexpected " + describe(t) + " in input");
        return action(end);
    }

    std::unique_ptr<Node> action(ListEnd & end) {
        const Token & t = peek();
        switch (t.kind) {
            case TokenKind::kw_define:
            case TokenKind::kw_template:
            case TokenKind::kw_block:
                fail(t.pos, "{{" + std::string(t.text) + "}} is not supported");
            case TokenKind::kw_break:
            case TokenKind::kw_continue: {
                const Token kw       = next();
                const bool  is_break = kw.kind == TokenKind::kw_break;
                const std::string name = is_break ? "{{break}}" : "{{continue}}";
                expect_right_delim(name.c_str());
                if (range_depth_ == 0) fail(kw.pos, name + " outside {{range}}");
                auto n  = std::make_unique<Node>();
                n->kind = is_break ? NodeKind::break_ : NodeKind::continue_;
                n->pos  = kw.pos;
                return n;
            }
            case TokenKind::kw_end: {
                end = ListEnd{Closer::end, next().pos};
                expect_right_delim("end");
                return nullptr;
            }
            case TokenKind::kw_else: {
                end = ListEnd{Closer::else_, next().pos};
                if (peek().kind == TokenKind::kw_if) {
                    next();
                    end.closer = Closer::else_if;
                } else if (peek().kind == TokenKind::kw_with) {
                    next();
                    end.closer = Closer::else_with;
                } else {
                    expect_right_delim("else");
                }
                return nullptr;
            }
            case TokenKind::kw_if: return control(NodeKind::if_, "if");
            case TokenKind::kw_range: return control(NodeKind::range, "range");
            case TokenKind::kw_with: return control(NodeKind::with, "with");
            default: {
                auto n  = std::make_unique<Node>();
                n->kind = NodeKind::action;
                n->pos  = t.pos;
                n->pipe = pipeline("command", TokenKind::right_delim);
                return n;
            }
        }
    }

    // {{if}} / {{with}} with their {{else if}} / {{else with}} chains, or {{range}}.
    std::unique_ptr<Node> control(NodeKind kind, const char * context) {
        const Token  kw   = next();
        const size_t mark = vars_.size();
        enter(kw.pos);
        auto n  = std::make_unique<Node>();
        n->kind = kind;
        n->pos  = kw.pos;
        const std::string opened = std::string("{{") + context + "}} at " + describe_position(src_, kw.pos);
        for (;;) {
            ast::Branch b;
            b.pipe = pipeline(context, TokenKind::right_delim);
            if (kind == NodeKind::range) ++range_depth_;
            ListEnd end{};
            b.list = item_list(end, opened);
            if (kind == NodeKind::range) --range_depth_;
            n->branches.push_back(std::move(b));
            if (end.closer == Closer::end) break;
            const bool chain = (kind == NodeKind::if_ && end.closer == Closer::else_if) ||
                               (kind == NodeKind::with && end.closer == Closer::else_with);
            if (chain) continue;
            if (end.closer != Closer::else_) {
                fail(end.pos, std::string(end.closer == Closer::else_if ? "{{else if}}" : "{{else with}}") +
                                  " cannot continue " + opened);
            }
            ListEnd last{};
            n->else_list = item_list(last, opened);
            if (last.closer != Closer::end) fail(last.pos, "expected {{end}} for " + opened + ", found {{else}}");
            break;
        }
        vars_.resize(mark);
        --depth_;
        return n;
    }

    List item_list(ListEnd & end, const std::string & opened) {
        List list;
        for (;;) {
            if (peek().kind == TokenKind::eof) fail(peek().pos, "unexpected EOF: " + opened + " has no {{end}}");
            auto node = text_or_action(end);
            if (!node) return list;
            list.push_back(std::move(node));
        }
    }

    bool defined(std::string_view name) const {
        return std::find(vars_.begin(), vars_.end(), name) != vars_.end();
    }

    std::unique_ptr<ast::Pipeline> pipeline(const std::string & context, TokenKind end) {
        auto pipe = std::make_unique<ast::Pipeline>();
        pipe->pos = peek().pos;
        std::vector<Token> decl;
        // Declarations: $x := / $x = / (range only) $i, $e := .
        while (peek().kind == TokenKind::variable) {
            const Token & after = peek(1);
            if (after.kind == TokenKind::declare || after.kind == TokenKind::assign) {
                decl.push_back(next());
                pipe->is_assign = next().kind == TokenKind::assign;
                break;
            }
            if (after.kind != TokenKind::comma) {
                if (!decl.empty()) fail(after.pos, "expected := or = after the " + context + " variables");
                break;
            }
            decl.push_back(next());
            const Token comma = next();
            if (context != "range" || decl.size() >= 2) fail(comma.pos, "too many declarations in " + context);
            if (peek().kind != TokenKind::variable) fail(peek().pos, "range can only initialize variables");
        }
        for (const auto & v : decl) {
            if (pipe->is_assign && !defined(v.text)) fail(v.pos, "undefined variable \"" + std::string(v.text) + "\"");
            pipe->decl.emplace_back(v.text);
        }

        for (;;) {
            const Token & t = peek();
            if (t.kind == end) {
                next();
                break;
            }
            switch (t.kind) {
                case TokenKind::boolean: case TokenKind::number: case TokenKind::dot: case TokenKind::field:
                case TokenKind::identifier: case TokenKind::kw_nil: case TokenKind::string:
                case TokenKind::variable: case TokenKind::left_paren:
                    pipe->cmds.push_back(command());
                    break;
                default:
                    fail(t.pos, "unexpected " + describe(t) + " in " + context);
            }
        }
        if (pipe->cmds.empty()) fail(pipe->pos, "missing value for " + context);
        for (size_t i = 1; i < pipe->cmds.size(); ++i) {
            switch (pipe->cmds[i].args[0].kind) {
                case ArgKind::boolean: case ArgKind::dot: case ArgKind::nil: case ArgKind::number:
                case ArgKind::string:
                    fail(pipe->cmds[i].pos, "non executable command in pipeline stage " + std::to_string(i + 1));
                default:
                    break;
            }
        }
        if (!pipe->is_assign) {
            for (const auto & v : pipe->decl) vars_.push_back(v);
            if (vars_.size() - 1 > max_vars_) { // "$" is always there
                fail(decl.front().pos, "more than max_variables (" + std::to_string(max_vars_) + ") variables in scope");
            }
        }
        return pipe;
    }

    ast::Command command() {
        ast::Command cmd;
        cmd.pos = peek().pos;
        for (;;) {
            auto operand_ = operand();
            const bool got = operand_.has_value();
            if (got) cmd.args.push_back(std::move(*operand_));
            const Token & t = peek();
            if (t.kind == TokenKind::right_delim || t.kind == TokenKind::right_paren) break;
            if (t.kind == TokenKind::pipe) {
                next();
                break;
            }
            if (!got || !t.space_before) fail(t.pos, "unexpected " + describe(t) + " in operand");
        }
        if (cmd.args.empty()) fail(cmd.pos, "empty command");
        return cmd;
    }

    std::optional<Arg> operand() {
        auto node = term();
        if (!node) return std::nullopt;
        if (peek().kind == TokenKind::field && !peek().space_before) {
            std::vector<std::string> fields;
            while (peek().kind == TokenKind::field && !peek().space_before) fields.emplace_back(next().text.substr(1));
            switch (node->kind) {
                case ArgKind::field:
                case ArgKind::variable:
                    node->fields.insert(node->fields.end(), fields.begin(), fields.end());
                    break;
                case ArgKind::boolean: case ArgKind::string: case ArgKind::number: case ArgKind::nil:
                case ArgKind::dot:
                    fail(node->pos, "unexpected . after term");
                default: {
                    Arg chain;
                    chain.kind   = ArgKind::chain;
                    chain.pos    = node->pos;
                    chain.fields = std::move(fields);
                    chain.base   = std::make_unique<Arg>(std::move(*node));
                    return chain;
                }
            }
        }
        return node;
    }

    std::optional<Arg> term() {
        const Token & t = peek();
        Arg           a;
        a.pos = t.pos;
        switch (t.kind) {
            case TokenKind::identifier: {
                const auto f = find_builtin(t.text);
                if (!f) fail(t.pos, "function \"" + std::string(t.text) + "\" not defined");
                a.kind = ArgKind::function;
                a.func = *f;
                a.name = std::string(t.text);
                break;
            }
            case TokenKind::dot: a.kind = ArgKind::dot; break;
            case TokenKind::kw_nil: a.kind = ArgKind::nil; break;
            case TokenKind::variable:
                if (!defined(t.text)) fail(t.pos, "undefined variable \"" + std::string(t.text) + "\"");
                a.kind = ArgKind::variable;
                a.name = std::string(t.text);
                break;
            case TokenKind::field:
                a.kind = ArgKind::field;
                a.fields.emplace_back(t.text.substr(1));
                break;
            case TokenKind::boolean:
                a.kind     = ArgKind::boolean;
                a.bool_val = t.text == "true";
                break;
            case TokenKind::number:
                a.kind      = ArgKind::number;
                a.is_int    = t.is_int;
                a.int_val   = t.int_val;
                a.float_val = t.float_val;
                break;
            case TokenKind::string:
                a.kind = ArgKind::string;
                a.str  = t.str;
                break;
            case TokenKind::left_paren: {
                const size_t pos = next().pos;
                enter(pos);
                a.kind = ArgKind::pipeline;
                a.pipe = pipeline("parenthesized pipeline", TokenKind::right_paren);
                --depth_;
                return a;
            }
            default:
                return std::nullopt;
        }
        next();
        return a;
    }

    std::string_view         src_;
    Lexer                    lexer_;
    std::deque<Token>        buf_;
    std::vector<std::string> vars_;
    int                      max_depth_   = 0;
    size_t                   max_vars_    = 0;
    int                      depth_       = 0;
    int                      range_depth_ = 0;
};

void collect_vars(const Arg & a, std::set<std::string> & out);

void collect_vars(const ast::Pipeline & p, std::set<std::string> & out) {
    for (const auto & c : p.cmds) {
        for (const auto & a : c.args) collect_vars(a, out);
    }
}

std::string lower(std::string s) {
    for (auto & c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// As Ollama's Identifiers(): fields and variables (with their fields), parenthesized
// pipelines; chains and function names contribute nothing.
void collect_vars(const Arg & a, std::set<std::string> & out) {
    switch (a.kind) {
        case ArgKind::field:
            for (const auto & f : a.fields) out.insert(lower(f));
            break;
        case ArgKind::variable:
            out.insert(lower(a.name));
            for (const auto & f : a.fields) out.insert(lower(f));
            break;
        case ArgKind::pipeline:
            collect_vars(*a.pipe, out);
            break;
        default:
            break;
    }
}

void collect_vars(const List & list, std::set<std::string> & out) {
    for (const auto & n : list) {
        if (n->pipe) collect_vars(*n->pipe, out);
        for (const auto & b : n->branches) {
            collect_vars(*b.pipe, out);
            collect_vars(b.list, out);
        }
        collect_vars(n->else_list, out);
    }
}

} // namespace

ast::List parse_template(std::string_view source, const GoTemplateLimits & limits) {
    return Parser(source, limits).parse_root();
}

std::vector<std::string> template_vars(const ast::List & root) {
    std::set<std::string> out;
    collect_vars(root, out);
    return {out.begin(), out.end()};
}

} // namespace specd::templates
