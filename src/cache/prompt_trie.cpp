#include "cache/prompt_trie.h"

#include <utility>

namespace specd::cache {

struct PromptTrie::Node {
    std::vector<token_id>                     edge;     // tokens from the parent to here
    std::map<token_id, std::unique_ptr<Node>> children; // by the first token of each child's edge
    std::optional<entry_id>                   entry;
    size_t                                    depth = 0; // tokens from the root to the end of `edge`
};

namespace {

using Node = PromptTrie::Node;

// How many leading tokens of `tokens` (from `from`) equal `edge`'s.
size_t common_run(const std::vector<token_id> & edge, std::span<const token_id> tokens, size_t from) {
    size_t j = 0;
    while (j < edge.size() && from + j < tokens.size() && edge[j] == tokens[from + j]) ++j;
    return j;
}

// The entry with the shortest key in the subtree at `n` (every leaf holds one).
std::pair<std::optional<entry_id>, size_t> shortest_entry(const Node * n) {
    std::optional<entry_id> best;
    size_t                  best_depth = 0;
    std::vector<const Node *> stack{n};
    while (!stack.empty()) {
        const Node * cur = stack.back();
        stack.pop_back();
        if (cur->entry && (!best || cur->depth < best_depth)) {
            best       = cur->entry;
            best_depth = cur->depth;
            continue; // entries are leaves: nothing below
        }
        for (const auto & [t, child] : cur->children) stack.push_back(child.get());
    }
    return {best, best_depth};
}

// A node with no entry and a single child is folded into that child, so the trie stays
// radix-compressed (every inner node branches or ends a key).
void fold_single_child(Node & n) {
    if (n.entry || n.children.size() != 1) return;
    std::unique_ptr<Node> child = std::move(n.children.begin()->second);
    n.children.clear();
    n.edge.insert(n.edge.end(), child->edge.begin(), child->edge.end());
    n.children = std::move(child->children);
    n.entry    = child->entry;
    n.depth    = child->depth;
}

struct Walk {
    std::vector<Node *> path;   // root first; the last node is where the walk stopped
    size_t              length = 0; // tokens matched
    bool                inside_edge = false; // stopped part-way along the last node's edge
};

Walk walk(Node * root, std::span<const token_id> tokens) {
    Walk w;
    w.path.push_back(root);
    while (w.length < tokens.size()) {
        Node * n  = w.path.back();
        auto   it = n->children.find(tokens[w.length]);
        if (it == n->children.end()) break;
        Node *       c = it->second.get();
        const size_t j = common_run(c->edge, tokens, w.length);
        w.length += j;
        w.path.push_back(c);
        if (j < c->edge.size()) {
            w.inside_edge = true;
            break;
        }
    }
    return w;
}

} // namespace

PromptTrie::PromptTrie() : root_(std::make_unique<Node>()) {}
PromptTrie::~PromptTrie() = default;

PromptTrie::Match PromptTrie::longest_match(std::span<const token_id> tokens) const {
    const Walk w = walk(root_.get(), tokens);
    Match      m;
    if (w.length == 0) return m;
    m.length                        = w.length;
    std::tie(m.entry, m.entry_key_length) = shortest_entry(w.path.back());
    return m;
}

std::optional<entry_id> PromptTrie::covering(std::span<const token_id> tokens) const {
    const Walk w = walk(root_.get(), tokens);
    if (w.length < tokens.size() || tokens.empty()) return std::nullopt;
    return shortest_entry(w.path.back()).first;
}

PromptTrie::Insert PromptTrie::insert(std::span<const token_id> key, entry_id id) {
    Insert out;
    if (key.empty()) return out;
    if (auto c = covering(key)) {
        out.covered_by = c;
        return out;
    }
    Walk w = walk(root_.get(), key);
    // Entries on the path end before the key does: they are its prefixes. (Where the walk
    // stopped inside an edge, that last node's key is not a prefix.)
    const size_t n_prefix_nodes = w.path.size() - (w.inside_edge ? 1 : 0);
    for (size_t i = 0; i < n_prefix_nodes; ++i) {
        if (Node * n = w.path[i]; n->entry) {
            out.superseded.push_back(*n->entry);
            n->entry.reset();
        }
    }
    Node * at = w.path.back();
    if (w.inside_edge) {
        // Split `at`'s edge where the key leaves it: `at` keeps the shared part.
        const size_t shared = at->edge.size() - (at->depth - w.length);
        auto         tail   = std::make_unique<Node>();
        tail->edge.assign(at->edge.begin() + static_cast<std::ptrdiff_t>(shared), at->edge.end());
        tail->children = std::move(at->children);
        tail->entry    = at->entry;
        tail->depth    = at->depth;
        at->edge.resize(shared);
        at->children.clear();
        at->entry.reset();
        at->depth = w.length;
        at->children.emplace(tail->edge.front(), std::move(tail));
    }
    auto leaf   = std::make_unique<Node>();
    leaf->edge.assign(key.begin() + static_cast<std::ptrdiff_t>(w.length), key.end());
    leaf->entry = id;
    leaf->depth = key.size();
    at->children.emplace(leaf->edge.front(), std::move(leaf));
    size_ += 1;
    size_ -= out.superseded.size();
    // A superseded entry was a leaf where the walk ended; it now holds one child, nothing else.
    if (at != root_.get()) fold_single_child(*at);
    out.inserted = true;
    return out;
}

bool PromptTrie::erase(std::span<const token_id> key, entry_id id) {
    Walk w = walk(root_.get(), key);
    if (w.inside_edge || w.length != key.size() || key.empty()) return false;
    Node * n = w.path.back();
    if (n->entry != id) return false;
    n->entry.reset();
    size_ -= 1;
    // Remove nodes left with neither an entry nor children, then fold the first survivor.
    size_t i = w.path.size() - 1;
    while (i > 0 && !w.path[i]->entry && w.path[i]->children.empty()) {
        w.path[i - 1]->children.erase(w.path[i]->edge.front());
        --i;
    }
    if (i > 0) fold_single_child(*w.path[i]);
    return true;
}

} // namespace specd::cache
