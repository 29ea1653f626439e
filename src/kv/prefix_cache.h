// flint/kv/prefix_cache.h — reuse of computed KV across requests: a trie of KV blocks keyed by tokens.
//
// Each node is one block of the pool holding the KV of up to block_size tokens that follow its parent's
// tokens; a path from the root spells a token prefix whose KV is ready. Finished sequences hand their
// blocks to the trie (insert); a new request takes the longest matching path (acquire): full blocks are
// shared read-only (reference counted), and a partially matching block is copied so the new sequence can
// write after the shared part (copy-on-write). Entries that no sequence uses are evicted least recently
// used first, leaves before their parents, when the pool runs short.
// Engine-thread only: no locking.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/kv_cache.h"

namespace flint {

class PrefixCache {
public:
    explicit PrefixCache(KVCache& kv);
    ~PrefixCache();

    struct Match {
        std::vector<int32_t> blocks;  // references owned by the caller now (release each when done)
        int n_tokens = 0;             // positions [0, n_tokens) hold valid KV
    };
    // The longest cached prefix of tokens[0, max_len).
    Match acquire(std::span<const int32_t> tokens, int max_len);
    // Takes over a finished sequence's block references: tokens[0, n_valid) have valid KV in `blocks`
    // (block table order). Blocks past the valid tokens, and duplicates of cached blocks, are released.
    void insert(std::span<const int32_t> tokens, int n_valid, std::span<const int32_t> blocks);
    // Evicts unused entries until `n` blocks were freed or nothing more can go. Returns blocks freed.
    int64_t evict(int64_t n);
    // Allocates a block, evicting if the pool is empty; -1 when nothing can be freed.
    int32_t alloc_block();

    int64_t cached_blocks() const;  // blocks referenced only by the cache (evictable): a walk of the whole trie
    // Changes whenever acquire, insert, evict or clear may have changed what the trie holds or which of its
    // blocks a sequence shares, so a caller recounts cached_blocks() only then, not every step.
    uint64_t version() const { return version_; }
    int64_t nodes() const { return n_nodes_; }
    void clear();                   // drops every entry (blocks still used by sequences stay alive)

private:
    struct Node;
    void erase_leaf(Node* n);

    KVCache& kv_;
    std::unique_ptr<Node> root_;
    // Recency: acquire and insert stamp every node of the path they walk with one new clock value, so a
    // node is never older than its descendants (eviction takes leaves, oldest first).
    uint64_t clock_ = 0;
    uint64_t version_ = 0;
    int64_t n_nodes_ = 0;
};

}  // namespace flint
