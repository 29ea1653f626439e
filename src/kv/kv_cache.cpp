#include "kv/kv_cache.h"

#include <cstring>

#include "util/error.h"

namespace flint {

size_t KVCache::bytes_per_token(int n_layers, int kv_dim, DType type) {
    return static_cast<size_t>(n_layers) * 2 * flint::row_bytes(type, static_cast<size_t>(kv_dim));
}

KVCache::KVCache(const KVConfig& cfg) : cfg_(cfg) {
    if (cfg.type != DType::F32 && cfg.type != DType::F16 && cfg.type != DType::Q8_0)
        fail("KV cache type ", dtype_name(cfg.type), " is not supported (f32, f16 or q8_0)");
    if (cfg.n_layers <= 0 || cfg.kv_dim <= 0 || cfg.block_size <= 0 || cfg.n_blocks <= 0)
        fail("KV cache: invalid configuration (layers ", cfg.n_layers, ", kv_dim ", cfg.kv_dim, ", block size ",
             cfg.block_size, ", blocks ", cfg.n_blocks, ")");
    if (cfg.type == DType::Q8_0 && cfg.kv_dim % 32 != 0)
        fail("KV cache type q8_0 needs kv_dim (", cfg.kv_dim, ") to be a multiple of 32: use f16");
    row_bytes_ = flint::row_bytes(cfg.type, static_cast<size_t>(cfg.kv_dim));
    layer_half_bytes_ = row_bytes_ * cfg.block_size;
    block_bytes_ = layer_half_bytes_ * 2 * cfg.n_layers;
    total_bytes_ = block_bytes_ * cfg.n_blocks;
    try {
        mem_ = HugeBuffer(total_bytes_);
    } catch (const Error& e) {
        fail("KV cache: cannot reserve ", total_bytes_ >> 20, " MiB for ", cfg.n_blocks, " blocks: ", e.what());
    }
    base_ = mem_.data();
    refs_.assign(cfg.n_blocks, 0);
    free_.reserve(cfg.n_blocks);
    for (int64_t b = cfg.n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

KVCache::~KVCache() = default;

int32_t KVCache::alloc() {
    if (free_.empty()) return -1;
    int32_t b = free_.back();
    free_.pop_back();
    refs_[b] = 1;
    return b;
}

void KVCache::retain(int32_t block) { ++refs_[block]; }

void KVCache::release(int32_t block) {
    if (refs_[block] <= 0) fail("KV cache: block ", block, " released more often than retained");
    if (--refs_[block] == 0) free_.push_back(block);
}

void KVCache::copy_block(int32_t from, int32_t to, int n_slots) {
    for (int l = 0; l < cfg_.n_layers; ++l) {
        std::memcpy(k(to, l), k(from, l), layer_half_bytes_);
        std::memcpy(v(to, l), v(from, l), row_bytes_ * n_slots);
    }
}

}  // namespace flint
