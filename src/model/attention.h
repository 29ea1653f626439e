// flint/model/attention.h — one query head attending over a sequence's cached keys and values.
//
//   out = softmax(q · K[0..n) / sqrt(d)) · V[0..n)
// K and V are read block by block through the sequence's block table (see kv/kv_cache.h), with a
// scalar reference and an AVX2 version (dispatched with the matmul kernels' ISA). Small models spend most
// of their decode time here (stories260K: head dim 8), so the inner loops avoid per-position calls and
// exp() runs vectorised over the whole score row.
#pragma once
#include <cstdint>
#include <span>

namespace flint {

class KVCache;

struct HeadAttention {
    const KVCache* kv = nullptr;
    int layer = 0;
    std::span<const int32_t> blocks;  // the sequence's block table
    int n_pos = 0;                    // attend to positions [0, n_pos)
    int kv_head = 0;
    int head_dim = 0;
};

// q: (head_dim), scores: scratch (n_pos), out: (head_dim).
void attend_head(const HeadAttention& a, const float* q, float* scores, float* out);

namespace detail {
void attend_head_scalar(const HeadAttention& a, const float* q, float* scores, float* out);
void attend_head_avx2(const HeadAttention& a, const float* q, float* scores, float* out);  // attention_avx2.cpp
}  // namespace detail

}  // namespace flint
