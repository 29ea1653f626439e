// AVX2 + FMA + F16C grouped attention (model/attention.h); head_dim a multiple of 8.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kv/kv_cache.h"
#include "model/attention.h"
#include "tensor/exp_simd.h"
#include "tensor/hsum_avx2.h"
#include "tensor/prefetch.h"
#include "tensor/quant.h"

namespace flint::detail {
namespace {

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

template <typename T>
void to_f32(const T* src, float* dst, int n) {
    if constexpr (std::is_same_v<T, float>) {
        std::memcpy(dst, src, sizeof(float) * n);
    } else {
        int i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(src + i));
        for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
    }
}

// One block of a Q8_0 cache, one KV head (dimensions off .. off + hd): keys as f32 (hd, bs), the first n
// positions' values as f32 rows of hd; scale times level, as the scalar reference dequantizes them.
inline __m256 q8x8(const int8_t* q) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)))); }
template <int bs, int hd>
void dequantize_q8_block(const KVCache& kv, int32_t b, int layer, int64_t off, int n, float* kf, float* vf) {
    const auto* kq = reinterpret_cast<const int8_t*>(kv.k(b, layer));
    const uint16_t* ks = kv.k_scales(b, layer);
    for (int d = 0; d < hd; ++d) {
        const int64_t c = off + d;
        for (int p = 0; p < bs; p += 8)
            _mm256_storeu_ps(kf + d * bs + p, _mm256_mul_ps(load8(ks + (c / QK) * bs + p), q8x8(kq + c * bs + p)));
    }
    for (int j = 0; j < n; ++j) {
        const auto* row = reinterpret_cast<const BlockQ8_0*>(kv.v(b, layer) + static_cast<size_t>(j) * kv.row_bytes());
        for (int v = 0; v < hd; v += 8) {
            const int64_t e = off + v;
            _mm256_storeu_ps(vf + j * hd + v, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(row[e / QK].d)), q8x8(row[e / QK].qs + e % QK)));
        }
    }
}

// Software prefetch of a block's keys and value rows for one KV head (dimensions off .. off + hd). A span's
// blocks lie a whole block of every layer apart (kv/kv_cache.h) and a head's value rows are part of each
// row, so the hardware prefetcher does not run ahead of a long context's reads (at 16,000 positions the
// requests took 6-15% off this kernel's time, 14-27% off the AVX-512 one's: BENCHMARKS.md). They go to
// L2 (tensor/prefetch.h says why).
template <typename T, int bs, int hd>
void prefetch_block(const KVCache& kv, int32_t b, int layer, int64_t off) {
    if constexpr (std::is_same_v<T, int8_t>) {
        const int groups = static_cast<int>((off + hd - 1) / QK - off / QK + 1);  // 32-element blocks the head spans
        prefetch_lines(kv.k(b, layer) + off * bs, hd * bs);
        prefetch_lines(kv.k_scales(b, layer) + (off / QK) * bs, groups * bs * static_cast<int>(sizeof(uint16_t)));
        for (int j = 0; j < bs; ++j)
            prefetch_lines(kv.v(b, layer) + static_cast<size_t>(j) * kv.row_bytes() + (off / QK) * sizeof(BlockQ8_0),
                           groups * static_cast<int>(sizeof(BlockQ8_0)));
    } else {
        prefetch_lines(reinterpret_cast<const T*>(kv.k(b, layer)) + off * bs, hd * bs * static_cast<int>(sizeof(T)));
        for (int j = 0; j < bs; ++j)
            prefetch_lines(reinterpret_cast<const T*>(kv.v(b, layer)) + off + int64_t(j) * kv.config().kv_dim, hd * static_cast<int>(sizeof(T)));
    }
}

constexpr int kPair = 2;
// Positions per online-softmax step: four 8-lane registers. Two queries' scores for them (8 accumulators),
// the four key registers and a broadcast fit the 16 ymm registers.
constexpr int kSpan = 32, kRegs = kSpan / 8;

// Lanes of register r (positions 8r .. 8r+7 of the span) that a query seeing n of the span's positions sees.
inline __m256 lanes_below(int n, int r) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * r), iota));
}
inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// A span of kSpan positions, elements f32 (an f32 cache in place, or any cache converted) or f16 (in
// place): per 8 positions, key dimension d at kt[r] + d * kt_stride (always readable; lanes past the span's
// positions hold stale or repeated keys); per position its value row. key() and value() load 8 lanes as f32.
template <typename E>
struct Span {
    const E* kt[kRegs];
    int kt_stride;
    const E* vt[kSpan];
    int p0, n;

    __m256 key(int r, int d) const { return load8(kt[r] + d * kt_stride); }
    __m256 value(int j, int vr) const { return load8(vt[j] + 8 * vr); }  // value register vr of position j
    void pad(int from) {  // registers past the sequence's last block read the span's first one again
        for (int r = from; r < kRegs; ++r) kt[r] = kt[0];
    }
};

// A span of a Q8_0 cache read in place (model/attention.h: Q8SpanPointers, 8 positions a register; ks[r]
// is the row's first 32-dimension block, dimension off + d's scale at ks[r] + ((off + d) / QK) * kt_stride).
// Each key or value is scale times level, the f32 product dequantize_q8_block() writes, so in place and
// converted give the same bits.
struct SpanQ8 : Q8SpanPointers<kRegs, kSpan> {
    __m256 key(int r, int d) const {
        return _mm256_mul_ps(load8(ks[r] + ((off + d) / QK) * kt_stride), q8x8(kt[r] + d * kt_stride));
    }
    __m256 value(int j, int vr) const {
        const int64_t e = off + 8 * vr;
        const BlockQ8_0& b = vt[j][e / QK];
        return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.d)), q8x8(b.qs + e % QK));
    }
    void pad(int from) {
        for (int r = from; r < kRegs; ++r) kt[r] = kt[0], ks[r] = ks[0];
    }
};

// NQ (1 or 2) queries from i0 over one span, NV = head_dim / 8. Each key register is loaded once for the
// pair and each value register once for the pair; every query's own arithmetic (its scores in dimension
// order, its max, exps and sums, its weighted sum in position order) is the same whatever its partner is,
// so a token gets bit-identical output alone or in a batch.
template <int NV, int NQ, typename S>
void pair_span(const QueryGroup& g, int i0, const S& sv, __m256 scale, float* m, float* l, float* sc) {
    constexpr int hd = 8 * NV;
    constexpr int kVPass = pass_divisor(NV, 4);  // value registers per query per pass (2 x 4 accumulators)
    int ni[NQ];
    int lo = kSpan, hi = 0;
    for (int u = 0; u < NQ; ++u) {
        ni[u] = std::clamp(g.n_pos[i0 + u] - sv.p0, 0, sv.n);
        lo = std::min(lo, ni[u]);
        hi = std::max(hi, ni[u]);
    }
    if (hi == 0) return;
    __m256 acc[NQ][kRegs];
    for (int u = 0; u < NQ; ++u)
        for (int r = 0; r < kRegs; ++r) acc[u][r] = _mm256_setzero_ps();
    for (int d = 0; d < hd; ++d) {
        __m256 kd[kRegs];
        for (int r = 0; r < kRegs; ++r) kd[r] = sv.key(r, d);
        for (int u = 0; u < NQ; ++u) {
            const __m256 qd = _mm256_broadcast_ss(g.q[i0 + u] + d);
            for (int r = 0; r < kRegs; ++r) acc[u][r] = _mm256_fmadd_ps(qd, kd[r], acc[u][r]);
        }
    }
    // The scaled scores to memory (indexing the accumulators by query below would keep them on the stack
    // through the FMA loop), then the online softmax per query: rescale what was accumulated under the old max.
    for (int u = 0; u < NQ; ++u)
        for (int r = 0; r < kRegs; ++r) _mm256_storeu_ps(sc + (i0 + u) * kSpan + 8 * r, _mm256_mul_ps(acc[u][r], scale));
    float rescale[NQ];
    for (int u = 0; u < NQ; ++u) {
        const int i = i0 + u;
        rescale[u] = 1.0f;
        if (ni[u] == 0) continue;
        float* s = sc + i * kSpan;
        // A query that sees the whole span (every span but a prompt's last) needs no lane masks: the same
        // values without the blends and ands.
        const bool whole = ni[u] == kSpan;
        __m256 mx = _mm256_set1_ps(-INFINITY);
        for (int r = 0; r < kRegs; ++r) {
            const __m256 x = _mm256_max_ps(mx, _mm256_loadu_ps(s + 8 * r));
            mx = whole ? x : _mm256_blendv_ps(mx, x, lanes_below(ni[u], r));
        }
        const float m_new = std::max(m[i], hmax(mx));
        rescale[u] = m[i] == -INFINITY ? 0.0f : std::exp(m[i] - m_new);
        __m256 sum = _mm256_setzero_ps();
        for (int r = 0; r < kRegs; ++r) {
            __m256 e = exp_simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(s + 8 * r), _mm256_set1_ps(m_new)));
            if (!whole) e = _mm256_and_ps(lanes_below(ni[u], r), e);
            _mm256_storeu_ps(s + 8 * r, e);
            sum = _mm256_add_ps(sum, e);
        }
        l[i] = l[i] * rescale[u] + hsum(sum);
        m[i] = m_new;
    }
    // Weighted sum of values, kVPass registers of each query's output at a time. Past a query's own
    // positions (the last span only) its FMAs are skipped, so its sums stay exactly as they were.
    for (int v0 = 0; v0 < NV; v0 += kVPass) {
        __m256 o[NQ][kVPass];
        for (int u = 0; u < NQ; ++u) {
            const __m256 r = _mm256_set1_ps(rescale[u]);
            for (int v = 0; v < kVPass; ++v) o[u][v] = _mm256_mul_ps(_mm256_loadu_ps(g.out[i0 + u] + 8 * (v0 + v)), r);
        }
        // Positions below lo are every query's (all of them but in a prompt's last span): no checks there.
        for (int j = 0; j < lo; ++j) {
            __m256 vv[kVPass];
            for (int v = 0; v < kVPass; ++v) vv[v] = sv.value(j, v0 + v);
            for (int u = 0; u < NQ; ++u) {
                const __m256 w = _mm256_broadcast_ss(sc + (i0 + u) * kSpan + j);
                for (int v = 0; v < kVPass; ++v) o[u][v] = _mm256_fmadd_ps(w, vv[v], o[u][v]);
            }
        }
        for (int j = lo; j < hi; ++j) {
            __m256 vv[kVPass];
            for (int v = 0; v < kVPass; ++v) vv[v] = sv.value(j, v0 + v);
            for (int u = 0; u < NQ; ++u) {
                if (j >= ni[u]) continue;
                const __m256 w = _mm256_broadcast_ss(sc + (i0 + u) * kSpan + j);
                for (int v = 0; v < kVPass; ++v) o[u][v] = _mm256_fmadd_ps(w, vv[v], o[u][v]);
            }
        }
        for (int u = 0; u < NQ; ++u)
            for (int v = 0; v < kVPass; ++v) _mm256_storeu_ps(g.out[i0 + u] + 8 * (v0 + v), o[u][v]);
    }
}

// The queries of a group walk the cache once, kSpan positions at a time, two queries at a time: per
// dimension four key loads feed eight FMAs (the one-query kernel this replaced loaded a key register per
// FMA and was bound by loads, at ~28% of the FMA rate on a 0.5B draft block). NC = block_size / 8 and
// NV = head_dim / 8 are compile-time so the accumulators live in registers. An f32 cache is read in place,
// f16 and Q8_0 ones too by small groups; otherwise they are converted once per span for all the queries
// (the same f32 values either way).
template <typename T, int NC, int NV>
void attend_group_t(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    const KVCache& kv = *a.kv;
    constexpr int bs = 8 * NC, hd = 8 * NV;
    static_assert(kSpan % bs == 0);
    const int kv_dim = kv.config().kv_dim;
    const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(hd)));
    const int64_t off = static_cast<int64_t>(a.kv_head) * hd;  // V: column offset; K: row offset * bs
    float* kb = scratch;                    // (kSpan / bs) x (hd, bs) keys as f32
    float* vb = kb + kSpan * hd;            // (kSpan, hd) values as f32
    float* m = vb + kSpan * hd;             // (n) running max
    float* l = m + kMaxGroupQueries;        // (n) running sum of weights
    float* sc = l + kMaxGroupQueries;       // (n, kSpan) this span's weights
    int n_max = 0;
    for (int i = 0; i < g.n; ++i) {
        m[i] = -INFINITY;
        l[i] = 0;
        std::fill(g.out[i], g.out[i] + hd, 0.0f);
        n_max = std::max(n_max, g.n_pos[i]);
    }
    // Small groups read an f16 or Q8_0 cache in place, converting each element as they load it; larger ones
    // share a span converted once into scratch. The f32 values are the same either way, so are the results.
    // Scratch A/B, new / old median time: f16 in place up to 16 queries (decode's groups, a few draft
    // tokens'): a decode pair 0.85 at head dim 8 (15k positions), 0.59 at 64; 7-8 queries 0.84-0.90; at 64
    // queries converting is as fast. Q8_0 in place only for one pass (1-2 queries: 0.78-0.81 at head dims 8,
    // 64 and 128); its conversion costs more per load, so at 3 queries (two passes) converting once is
    // already 15% faster, at 7 35%.
    constexpr bool kF16 = std::is_same_v<T, uint16_t>, kQ8 = std::is_same_v<T, int8_t>;
    const bool in_place = (kF16 && g.n <= 16) || (kQ8 && g.n <= kPair);
    Span<float> sv;     // an f32 cache in place, or the span converted
    Span<uint16_t> hv;  // an f16 cache in place
    SpanQ8 qv;          // a Q8_0 cache in place
    sv.kt_stride = hv.kt_stride = qv.kt_stride = bs;
    qv.off = off;
    const int seq_blocks = (n_max + bs - 1) / bs;
    // Points a view's block bi at its keys (8 positions a register) and its first nj value rows, `stride`
    // elements apart (kv_dim in the cache, hd in the converted scratch).
    auto point = [&](auto& view, int bi, const auto* kr, const auto* vr, int64_t stride, int nj) {
        for (int j = 0; j < nj; ++j) view.vt[bi * bs + j] = vr + j * stride;
        for (int c = 0; c < NC; ++c) view.kt[bi * NC + c] = kr + 8 * c;
    };
    // Registers past the sequence's last block read the span's first one again: scored, never read (every
    // query's max and weights are masked to its own positions). Then the passes, two queries each.
    auto run = [&](auto& view, int n_blocks) {
        view.pad(n_blocks * NC);
        int i0 = 0;
        for (; i0 + kPair <= g.n; i0 += kPair) pair_span<NV, kPair>(g, i0, view, scale, m, l, sc);
        if (i0 < g.n) pair_span<NV, 1>(g, i0, view, scale, m, l, sc);
    };
    for (int p0 = 0; p0 < n_max; p0 += kSpan) {
        sv.p0 = hv.p0 = qv.p0 = p0;
        sv.n = hv.n = qv.n = std::min(kSpan, n_max - p0);
        const int n_blocks = (sv.n + bs - 1) / bs;
        for (int bi = 0; bi < n_blocks; ++bi) {
            // The next span's block bi, requested as this one's is set up (see prefetch_block).
            if (const int nb = (p0 + kSpan) / bs + bi; nb < seq_blocks) prefetch_block<T, bs, hd>(kv, a.blocks[nb], a.layer, off);
            const int32_t b = a.blocks[p0 / bs + bi];
            const int nj = std::min(bs, sv.n - bi * bs);  // K slots past nj hold stale values: scored, never read
            const T* kr = reinterpret_cast<const T*>(kv.k(b, a.layer)) + off * bs;
            const T* vr = reinterpret_cast<const T*>(kv.v(b, a.layer)) + off;
            if constexpr (std::is_same_v<T, float>) {
                point(sv, bi, kr, vr, kv_dim, nj);
            } else if (in_place) {
                if constexpr (kF16) point(hv, bi, kr, vr, kv_dim, nj);
                if constexpr (kQ8) {
                    const auto* rows = reinterpret_cast<const BlockQ8_0*>(kv.v(b, a.layer));
                    point(qv, bi, kr, rows, static_cast<int64_t>(kv.row_bytes() / sizeof(BlockQ8_0)), nj);
                    for (int c = 0; c < NC; ++c) qv.ks[bi * NC + c] = kv.k_scales(b, a.layer) + 8 * c;
                }
            } else {
                float* kf = kb + bi * hd * bs;
                float* vf = vb + bi * bs * hd;
                if constexpr (kQ8) dequantize_q8_block<bs, hd>(kv, b, a.layer, off, nj, kf, vf);
                else {
                    to_f32(kr, kf, hd * bs);
                    for (int j = 0; j < nj; ++j) to_f32(vr + int64_t(j) * kv_dim, vf + j * hd, hd);
                }
                point(sv, bi, kf, vf, hd, nj);
            }
        }
        if (in_place) {
            if constexpr (kF16) run(hv, n_blocks);
            if constexpr (kQ8) run(qv, n_blocks);
        } else {
            run(sv, n_blocks);
        }
    }
    for (int i = 0; i < g.n; ++i) {
        const __m256 inv = _mm256_set1_ps(1.0f / l[i]);
        for (int v = 0; v < NV; ++v) _mm256_storeu_ps(g.out[i] + 8 * v, _mm256_mul_ps(_mm256_loadu_ps(g.out[i] + 8 * v), inv));
    }
}

}  // namespace

namespace {
template <int NC, int NV>
void attend_group_nv(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    if (a.kv->config().type == DType::F16) attend_group_t<uint16_t, NC, NV>(a, g, scratch);
    else if (a.kv->config().type == DType::Q8_0) attend_group_t<int8_t, NC, NV>(a, g, scratch);
    else attend_group_t<float, NC, NV>(a, g, scratch);
}
template <int NC>
bool attend_group_nc(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    switch (a.head_dim) {
        case 8: attend_group_nv<NC, 1>(a, g, scratch); return true;
        case 16: attend_group_nv<NC, 2>(a, g, scratch); return true;
        case 24: attend_group_nv<NC, 3>(a, g, scratch); return true;
        case 32: attend_group_nv<NC, 4>(a, g, scratch); return true;
        case 48: attend_group_nv<NC, 6>(a, g, scratch); return true;  // TinyStories 15M
        case 64: attend_group_nv<NC, 8>(a, g, scratch); return true;
        case 80: attend_group_nv<NC, 10>(a, g, scratch); return true;
        case 96: attend_group_nv<NC, 12>(a, g, scratch); return true;
        case 128: attend_group_nv<NC, 16>(a, g, scratch); return true;
        default: return false;
    }
}
}  // namespace

// The cases of attend_group_nc() and attend_group_avx2() (tests/model/attention_test.cpp checks they agree).
bool avx2_attention_fits(int head_dim, int block_size) {
    const bool hd = head_dim % 8 == 0 && ((head_dim <= 32) || head_dim == 48 || head_dim == 64 || head_dim == 80 ||
                                           head_dim == 96 || head_dim == 128);
    return hd && head_dim > 0 && (block_size == 8 || block_size == 16 || block_size == 32);
}

bool attend_group_avx2(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    switch (a.kv->block_size()) {
        case 8: return attend_group_nc<1>(a, g, scratch);
        case 16: return attend_group_nc<2>(a, g, scratch);
        case 32: return attend_group_nc<4>(a, g, scratch);
        default: return false;
    }
}

}  // namespace flint::detail
