#pragma once
// The schema compiler's walker (schema_compiler.h), shared by its files and nobody else. One
// Compiler walks one schema; its member functions live in the file of the keywords they
// handle:
//   schema_compiler.cpp     traversal, keyword shapes, the shared rules (string, number, any)
//   schema_refs.cpp         $ref: resolution and the left-recursion check
//   schema_combinators.cpp  anyOf / oneOf / allOf
//   schema_enums.cpp        enum / const as one prefix tree
//   schema_objects.cpp      properties, required, additionalProperties
//   schema_arrays.cpp       items, prefixItems, minItems / maxItems
//   schema_strings.cpp      minLength / maxLength, pattern, format
//   schema_numbers.cpp      integer and number bounds, multipleOf
#include "grammar/gbnf.h"
#include "grammar/schema_compiler.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specd::grammar::schema {

using json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string & message);
// A JSON pointer as an error message shows it ("/" for the root).
std::string       where(const std::string & ptr);
// The pointer to a child of `ptr` (the token escaped as JSON pointers escape it).
std::string       child(const std::string & ptr, const std::string & token);
std::string       json_quote(const std::string & s);
// False for annotations (title, description, $defs...), which do not constrain the value.
bool              is_assertion(const std::string & key);
// Splits UTF-8 text into characters (each a string of 1-4 bytes).
std::vector<std::string> utf8_units(const std::string & s);

// A prefix tree over strings split into units (characters or JSON escapes).
struct Trie {
    struct Node {
        std::map<std::string, size_t> kids;
        bool                          end = false;
    };
    std::vector<Node> nodes{Node{}};

    void insert(const std::vector<std::string> & units);
};

class Compiler {
  public:
    Compiler(const json & root, const SchemaLimits & lim, std::vector<std::string> * unenforced) :
        root_(root), lim_(lim), g_(lim.max_grammar_bytes), unenforced_(unenforced) {}

    std::string run();

  private:
    // --- traversal (schema_compiler.cpp)
    void                     enter(const std::string & ptr, int depth);
    std::string              visit(const json & s, const std::string & ptr, int depth);
    static std::string       hint(const std::string & ptr);
    std::string              body(const json & s, const std::string & ptr, int depth);
    std::vector<std::string> type_set(const json & s) const;
    std::string              typed(const std::string & type, const json & s, const std::string & ptr, int depth);

    // `key` at `ptr` is accepted without being enforced (`why`), or refused when strict.
    void not_enforced(const std::string & key, const std::string & ptr, const std::string & why);

    // --- keyword shapes (schema_compiler.cpp)
    void            check_shapes(const json & s, const std::string & ptr) const;
    static uint64_t count(const json & s, const char * key, uint64_t fallback);

    // --- shared rules (schema_compiler.cpp)
    std::string prim(const std::string & name, const std::string & body);
    std::string string_rule();
    std::string int_digits();
    std::string integer_rule();
    std::string number_rule();
    std::string any_value();

    // --- $ref (schema_refs.cpp)
    static std::string ref_pointer(const std::string & ref, const std::string & ptr);
    const json &       resolve(const std::string & pointer, const std::string & ref, const std::string & ptr) const;
    std::string        ref(const std::string & ref, const std::string & ptr, int depth);
    void first_refs(const json & s, int depth, std::vector<std::pair<std::string, std::string>> & out) const;
    void check_progress(const std::string & pointer, const std::string & ref, const std::string & ptr);

    // --- combinators (schema_combinators.cpp)
    std::string combine(const json & s, const std::string & key, const std::string & ptr, int depth);

    // --- enum / const (schema_enums.cpp)
    static bool has_type(const json & v, const std::string & t);
    std::string enumeration(const json & s, const std::string & ptr);
    std::string trie_expr(const Trie & t, const std::string & name);

    // --- objects (schema_objects.cpp)
    struct Property {
        std::string key;
        std::string rule;
        bool        required;
    };
    std::string        object(const json & s, const std::string & ptr, int depth);
    static std::string strip_group(const std::string & alt);
    std::string        other_key(const std::vector<std::string> & keys, const std::string & name);
    std::string        other_key_node(const Trie & t, size_t n, const std::string & name, const std::string & ch,
                                      const std::vector<std::string> & rule);
    static uint32_t    first_codepoint(const std::string & u);

    // --- arrays (schema_arrays.cpp)
    std::string array(const json & s, const std::string & ptr, int depth);

    // --- strings (schema_strings.cpp)
    std::string string(const json & s, const std::string & ptr);
    std::string format_rule(const std::string & format, const std::string & ptr);

    // --- numbers (schema_numbers.cpp)
    static std::optional<int64_t> int_bound(const json & v, bool lower, bool exclusive, const std::string & key,
                                            const std::string & ptr);
    std::string                   integer(const json & s, const std::string & ptr);
    std::string                   number(const json & s, const std::string & ptr);
    // multipleOf where it can be written; "" where it cannot (not_enforced has been called).
    std::string                   multiple_of(const json & s, bool integral, std::optional<int64_t> lo,
                                              std::optional<int64_t> hi, bool bounded, const std::string & ptr);

    const json &                       root_;
    const SchemaLimits &               lim_;
    GbnfRules                          g_;
    std::map<std::string, std::string> refs_;     // canonical pointer -> rule
    std::map<std::string, int>         progress_; // pointer -> 1 on the DFS path, 2 checked
    std::map<std::string, std::string> prims_;
    size_t                             nodes_ = 0;
    std::vector<std::string> *         unenforced_; // null: strict
};

} // namespace specd::grammar::schema
