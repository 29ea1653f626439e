// flint/kv/kv_cache.h — the KV memory: one pool of fixed-size blocks shared by every sequence of a model.
//
// A block holds the keys and values of `block_size` consecutive positions for every layer:
//   block b: [n_layers][K, V] elements of `type` (f32, f16 or q8_0); per layer
//   K: [kv_dim][block_size] (transposed: a key dimension's values for the block's positions are contiguous,
//      so attention scores the positions of a block with one vector FMA per dimension, no transpose)
//   V: [block_size][kv_dim] (a position's value row, for the weighted sum)
// Q8_0 (half the bytes of f16: long contexts stream the whole cache per token): each position's key and
// value rows are quantized in 32-element blocks along kv_dim, as Q8_0 weights are. K: the int8 levels
// [kv_dim][block_size] as above, then the f16 scales [kv_dim / 32][block_size]; V: per position its row
// of BlockQ8_0 (kv_dim / 32 of them). kv_dim must be a multiple of 32.
// A sequence names its blocks in a block table (position p lives in table[p / block_size], slot
// p % block_size), so a contiguous cache is the special case of a table 0, 1, 2, … and prefix sharing
// is two tables naming the same leading blocks. Blocks are reference-counted; the memory is reserved
// up front and backed lazily, on huge pages where the kernel grants them (util/huge_pages.h: attention
// over a long context streams the whole cache per token), so RSS grows in steps of at most 2 MiB.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/dtype.h"
#include "util/huge_pages.h"

namespace flint {

struct KVConfig {
    int n_layers = 0;
    int kv_dim = 0;          // n_kv_heads * head_dim
    int block_size = 16;     // positions per block
    DType type = DType::F32; // F32, F16 or Q8_0
    int64_t n_blocks = 0;
};

class KVCache {
public:
    explicit KVCache(const KVConfig& cfg);
    ~KVCache();
    KVCache(const KVCache&) = delete;
    KVCache& operator=(const KVCache&) = delete;

    const KVConfig& config() const { return cfg_; }
    int block_size() const { return cfg_.block_size; }
    int64_t n_blocks() const { return cfg_.n_blocks; }
    size_t block_bytes() const { return block_bytes_; }
    size_t row_bytes() const { return row_bytes_; }  // one position of one layer's K (or V)
    static size_t bytes_per_token(int n_layers, int kv_dim, DType type);

    // A block's keys for one layer, [kv_dim][block_size] (element (slot, c) at c * block_size + slot),
    // and its values, [block_size][kv_dim] (Q8_0: see above; k_scales gives the keys' scales).
    uint8_t* k(int32_t block, int layer) { return base_ + block * block_bytes_ + (2 * layer) * layer_half_bytes_; }
    uint8_t* v(int32_t block, int layer) { return base_ + block * block_bytes_ + (2 * layer + 1) * layer_half_bytes_; }
    const uint8_t* k(int32_t block, int layer) const { return const_cast<KVCache*>(this)->k(block, layer); }
    const uint8_t* v(int32_t block, int layer) const { return const_cast<KVCache*>(this)->v(block, layer); }
    // Q8_0: the f16 scales of a block's keys, [kv_dim / 32][block_size].
    uint16_t* k_scales(int32_t block, int layer) {
        return reinterpret_cast<uint16_t*>(k(block, layer) + static_cast<size_t>(cfg_.kv_dim) * cfg_.block_size);
    }
    const uint16_t* k_scales(int32_t block, int layer) const { return const_cast<KVCache*>(this)->k_scales(block, layer); }

    // Block allocation. alloc() returns -1 when the pool is exhausted.
    int32_t alloc();
    void retain(int32_t block);
    void release(int32_t block);  // back to the free list when the count reaches 0
    int32_t ref_count(int32_t block) const { return refs_[block]; }
    int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
    int64_t used_blocks() const { return cfg_.n_blocks - free_blocks(); }
    // Copies every layer's K and V of `n_slots` leading positions from one block to another (copy-on-write;
    // the transposed keys are copied whole: slots past n_slots are never read before they are written).
    void copy_block(int32_t from, int32_t to, int n_slots);

private:
    KVConfig cfg_;
    size_t row_bytes_ = 0;
    size_t layer_half_bytes_ = 0;
    size_t block_bytes_ = 0;
    size_t total_bytes_ = 0;
    HugeBuffer mem_;
    uint8_t* base_ = nullptr;
    std::vector<int32_t> refs_;
    std::vector<int32_t> free_;  // a stack: recently freed blocks are reused first (warm pages)
};

}  // namespace flint
