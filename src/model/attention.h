// flint/model/attention.h — query heads attending over a sequence's cached keys and values.
//
//   out = softmax(q · K[0..n) / sqrt(d)) · V[0..n)
// K and V are read block by block through the sequence's block table (see kv/kv_cache.h), with a
// scalar reference and an AVX2 version (dispatched with the matmul kernels' ISA). Small models spend most
// of their decode time here (stories260K: head dim 8), so the inner loops avoid per-position calls and
// exp() runs vectorised over the whole score row.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "tensor/isa.h"

namespace flint {

class KVCache;
struct BlockQ8_0;

struct HeadAttention {
    const KVCache* kv = nullptr;
    int layer = 0;
    std::span<const int32_t> blocks;  // the sequence's block table
    int n_pos = 0;                    // attend to positions [0, n_pos)
    int kv_head = 0;
    int head_dim = 0;
};

// Several queries reading the same K/V (the heads of one KV group, for a few consecutive tokens of one
// sequence), each with its own causal length. K and V are walked once for the whole group in blocks of
// block_size positions, with an online softmax per query (flash-attention style), so a prefill chunk or a
// draft block does not re-read the cache once per query. Each query's arithmetic does not depend on the
// other queries in the group: a token gets bit-identical output alone or in a batch.
struct QueryGroup {
    int n = 0;                 // queries (at most kMaxGroupQueries)
    const float* q[64] = {};   // (head_dim) each
    int n_pos[64] = {};        // query i attends to positions [0, n_pos[i])
    float* out[64] = {};       // (head_dim) each
};
constexpr int kMaxGroupQueries = 64;
// scratch: at least attend_group_scratch(a) floats.
void attend_group(const HeadAttention& a, const QueryGroup& g, float* scratch);
size_t attend_group_scratch(const HeadAttention& a);
// The kernel attend_group() runs for heads head_dim wide in blocks of block_size under the active ISA
// (Scalar: the reference, when no compiled variant fits).
Isa attention_isa(int head_dim, int block_size);
// Empty, or a warning for the log when attention_isa() falls back to the scalar reference although the CPU
// runs vector kernels (a head width no kernel is compiled for: slow at long contexts).
std::string attention_fallback_warning(int head_dim, int block_size);

namespace detail {
// Positions the AVX-512 kernel scores per online-softmax step (its scratch holds that many keys and values).
constexpr int kAttendSpan = 64;
// The largest divisor of n that is at most cap: how many of a head's value registers a kernel's pass takes,
// so the passes cover the head exactly (head dim 48 on AVX-512 is three registers: passes of one or three).
constexpr int pass_divisor(int n, int cap) {
    for (int d = n < cap ? n : cap; d > 1; --d)
        if (n % d == 0) return d;
    return 1;
}
// Where a span of kSpan positions of a Q8_0 cache lies, for a kernel reading it in place (one KV head, off
// its first dimension): per register of kSpan / kRegs positions, the keys' levels of dimension off + d at
// kt[r] + d * kt_stride and their scales, one per 32 dimensions, kt_stride apart from ks[r] on (each kernel
// says which 32-dimension block ks[r] is); per position its whole value row of blocks. The AVX2 and AVX-512
// kernels add their own loads.
template <int kRegs, int kSpan>
struct Q8SpanPointers {
    const int8_t* kt[kRegs];
    const uint16_t* ks[kRegs];
    int kt_stride;  // the block size (keys are [dim][block_size] per block)
    const BlockQ8_0* vt[kSpan];
    int64_t off;
    int p0, n;  // the span's first position, valid positions
};
// The scalar reference for one query (q, out: head_dim; scores: n_pos of scratch).
void attend_head_scalar(const HeadAttention& a, const float* q, float* scores, float* out);
// False when no compiled variant fits (block size 8/16/32, head dim 8/16/24/32/48/64/80/96/128).
bool attend_group_avx2(const HeadAttention& a, const QueryGroup& g, float* scratch);          // attention_avx2.cpp
bool avx2_attention_fits(int head_dim, int block_size);
// False when no compiled variant fits (block size 16/32, head dim 16/32/48/64/80/96/128).
bool attend_group_avx512(const HeadAttention& a, const QueryGroup& g, float* scratch);        // attention_avx512.cpp
bool avx512_attention_fits(int head_dim, int block_size);
}  // namespace detail

}  // namespace flint
