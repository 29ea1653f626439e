#include "kv/prefix_cache.h"

#include <algorithm>

namespace flint {

struct PrefixCache::Node {
    int32_t block = -1;
    std::vector<int32_t> tokens;  // size <= block_size; a partial node (size < block_size) has no children
    Node* parent = nullptr;
    std::vector<std::unique_ptr<Node>> children;
    uint64_t last_used = 0;
};

PrefixCache::PrefixCache(KVCache& kv) : kv_(kv), root_(std::make_unique<Node>()) {}

PrefixCache::~PrefixCache() { clear(); }

namespace {
size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
    size_t n = std::min(a.size(), b.size()), k = 0;
    while (k < n && a[k] == b[k]) ++k;
    return k;
}
}  // namespace

PrefixCache::Match PrefixCache::acquire(std::span<const int32_t> tokens, int max_len) {
    Match m;
    const int bs = kv_.block_size();
    max_len = std::min<int>(max_len, static_cast<int>(tokens.size()));
    const uint64_t now = ++clock_;  // one stamp for the whole path: a walk stays linear in its length
    ++version_;
    Node* node = root_.get();
    int pos = 0;
    while (pos < max_len) {
        auto want = tokens.subspan(pos, std::min(bs, max_len - pos));
        Node* best = nullptr;
        size_t best_len = 0;
        for (auto& c : node->children) {
            size_t k = common_prefix(c->tokens, want);
            if (k > best_len) {
                best = c.get();
                best_len = k;
            }
        }
        if (!best) break;
        best->last_used = now;
        if (best_len == static_cast<size_t>(bs)) {
            kv_.retain(best->block);
            m.blocks.push_back(best->block);
            pos += bs;
            node = best;
            continue;
        }
        // Partial match: copy the shared slots into a block of our own (hold the source while evicting).
        kv_.retain(best->block);
        int32_t fresh = alloc_block();
        if (fresh >= 0) {
            kv_.copy_block(best->block, fresh, static_cast<int>(best_len));
            m.blocks.push_back(fresh);
            pos += static_cast<int>(best_len);
        }
        kv_.release(best->block);
        break;
    }
    m.n_tokens = pos;
    return m;
}

void PrefixCache::insert(std::span<const int32_t> tokens, int n_valid, std::span<const int32_t> blocks) {
    const int bs = kv_.block_size();
    n_valid = std::min<int>(n_valid, static_cast<int>(tokens.size()));
    const uint64_t now = ++clock_;
    ++version_;
    Node* node = root_.get();
    size_t i = 0;
    for (int pos = 0; pos < n_valid && i < blocks.size(); pos += bs, ++i) {
        auto seg = tokens.subspan(pos, std::min(bs, n_valid - pos));
        Node* same = nullptr;
        for (auto& c : node->children)
            if (c->tokens.size() == seg.size() && std::equal(seg.begin(), seg.end(), c->tokens.begin())) {
                same = c.get();
                break;
            }
        if (same) {
            kv_.release(blocks[i]);  // the cache already holds these tokens (maybe this very block)
        } else {
            auto n = std::make_unique<Node>();
            n->block = blocks[i];  // the sequence's reference becomes the cache's
            n->tokens.assign(seg.begin(), seg.end());
            n->parent = node;
            same = n.get();
            node->children.push_back(std::move(n));
            ++n_nodes_;
        }
        same->last_used = now;
        if (static_cast<int>(seg.size()) < bs) {
            ++i;
            break;
        }
        node = same;
    }
    for (; i < blocks.size(); ++i) kv_.release(blocks[i]);
}

void PrefixCache::erase_leaf(Node* n) {
    ++version_;
    Node* p = n->parent;
    kv_.release(n->block);
    auto it = std::find_if(p->children.begin(), p->children.end(), [n](const auto& c) { return c.get() == n; });
    p->children.erase(it);
    --n_nodes_;
}

int64_t PrefixCache::evict(int64_t want) {
    int64_t freed = 0;
    while (freed < want) {
        // Collect evictable leaves (no children, referenced only by the cache), oldest first.
        std::vector<Node*> leaves;
        std::vector<Node*> stack{root_.get()};
        while (!stack.empty()) {
            Node* n = stack.back();
            stack.pop_back();
            for (auto& c : n->children) stack.push_back(c.get());
            if (n != root_.get() && n->children.empty() && kv_.ref_count(n->block) == 1) leaves.push_back(n);
        }
        if (leaves.empty()) break;
        std::sort(leaves.begin(), leaves.end(), [](Node* a, Node* b) { return a->last_used < b->last_used; });
        // Erasing a leaf can turn its parent into one; rescan after this batch.
        for (Node* n : leaves) {
            if (freed >= want) break;
            erase_leaf(n);
            ++freed;
        }
    }
    return freed;
}

int32_t PrefixCache::alloc_block() {
    int32_t b = kv_.alloc();
    if (b >= 0) return b;
    if (evict(std::max<int64_t>(1, kv_.n_blocks() / 64)) == 0) return -1;
    return kv_.alloc();
}

int64_t PrefixCache::cached_blocks() const {
    int64_t n = 0;
    std::vector<const Node*> stack{root_.get()};
    while (!stack.empty()) {
        const Node* x = stack.back();
        stack.pop_back();
        for (auto& c : x->children) stack.push_back(c.get());
        if (x != root_.get() && kv_.ref_count(x->block) == 1) ++n;
    }
    return n;
}

void PrefixCache::clear() {
    // Every node after all of its ancestors (pre-order), then undone from the end: each node's block is
    // released and its children (already emptied) destroyed, so no destructor recurses down a path as deep as
    // the conversation (a 1M-token one is 65,536 nodes deep).
    std::vector<Node*> stack{root_.get()}, order;
    while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        order.push_back(n);
        for (auto& c : n->children) stack.push_back(c.get());
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        if (*it != root_.get()) kv_.release((*it)->block);
        (*it)->children.clear();
    }
    n_nodes_ = 0;
    ++version_;
}

}  // namespace flint
