#pragma once
// The parse tree of a Go template, shaped like text/template/parse: a list of nodes (text,
// actions, if / range / with), pipelines of commands, commands of arguments. `else if` and
// `else with` chains are flat lists of branches, so a long chain nests nothing.
#include "templates/go_template_funcs.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace specd::templates::ast {

struct Pipeline;

enum class ArgKind {
    dot,        // .
    field,      // .A.B           (fields)
    variable,   // $x.A.B         (name, fields)
    chain,      // (pipe).A.B or func.A (base, fields)
    function,   // len            (func)
    pipeline,   // ( ... )        (pipe)
    string,     // "..."          (str)
    number,     // 1, 1.5, 'a'    (is_int, int_val, float_val)
    boolean,    // true, false    (bool_val)
    nil,        // nil
};

struct Arg {
    ArgKind                   kind = ArgKind::nil;
    size_t                    pos  = 0;
    std::vector<std::string>  fields;
    std::string               name;
    std::string               str;
    bool                      is_int    = false;
    int64_t                   int_val   = 0;
    double                    float_val = 0.0;
    bool                      bool_val  = false;
    Builtin                   func      = Builtin::print;
    std::unique_ptr<Pipeline> pipe;
    std::unique_ptr<Arg>      base;
};

struct Command {
    size_t           pos = 0;
    std::vector<Arg> args; // never empty
};

struct Pipeline {
    size_t                   pos = 0;
    std::vector<std::string> decl;       // $x := / $i, $e := (range) / $x =
    bool                     is_assign = false;
    std::vector<Command>     cmds;       // never empty
};

enum class NodeKind { text, action, if_, with, range, break_, continue_ };

struct Node;
using List = std::vector<std::unique_ptr<Node>>;

struct Branch {
    std::unique_ptr<Pipeline> pipe;
    List                      list;
};

struct Node {
    NodeKind                  kind = NodeKind::text;
    size_t                    pos  = 0;
    std::string               text;      // text
    std::unique_ptr<Pipeline> pipe;      // action
    std::vector<Branch>       branches;  // if / with: the chain in order; range: one
    List                      else_list; // the final {{else}}, if any
};

} // namespace specd::templates::ast
