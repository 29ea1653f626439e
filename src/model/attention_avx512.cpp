// AVX-512 grouped attention: the queries of a group (a KV head's query heads, for a few consecutive tokens)
// walk the cache once, 64 positions at a time: a group of up to eight queries (decode: a KV head's seven
// query heads) in one pass, a larger one four queries at a time. Keys are stored transposed (kv/kv_cache.h),
// so one register holds a key dimension for 16 positions: a block's scores are one FMA per (query,
// dimension, 16 positions), each key register loaded (and converted from f16 or Q8_0) once for the pass;
// the weighted sum of values loads each value row once for the pass as well. Per query and position that is
// 2 * head_dim / 16 FMAs and a quarter of the loads of the one-query-at-a-time AVX2 kernel (a draft block of
// 17 tokens x 7 heads has 119 queries per KV head). Each query's arithmetic is the same whatever the other
// queries of its pass are: scores, softmax and sums per query, masked where a query sees fewer positions, so
// a token gets bit-identical output alone or in a batch.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kv/kv_cache.h"
#include "model/attention.h"
#include "tensor/exp_simd.h"
#include "tensor/lanes_avx512.h"
#include "tensor/prefetch.h"
#include "tensor/quant.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace flint::detail {
namespace {

inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

constexpr int kQuad = 4;
// Positions per online-softmax step: four 16-lane registers. Scoring, the max, the rescale (one scalar exp
// per query) and the sums are done once per 64 positions rather than per 16-position block: at a long
// context the per-block softmax bookkeeping of seven decode queries cost about as much as the FMAs.
constexpr int kSpan = kAttendSpan, kRegs = kSpan / 16;

// kSpan consecutive positions (kSpan / bs blocks of the sequence's table), elements of T (the cache's f32 or
// f16, or f16 converted to f32 once for many queries).
template <typename T>
struct SpanView {
    const T* kt[kRegs];  // per 16 positions: dimension d at kt[r] + d * kt_stride
    int kt_stride;       // the block size (keys are [dim][block_size] per block)
    const T* vt[kSpan];  // per position: its value row
    int p0, n;           // the span's first position, valid positions (<= kSpan)
};
// A Q8_0 cache read in place (T = int8_t; model/attention.h: Q8SpanPointers, 16 positions a register;
// ks[r] is the head's first 32-dimension block, block k of the head at ks[r] + k * kt_stride). Each key or value is scale times level, the same f32 product the span dequantizer (dequantize_q8_span)
// writes, so reading in place gives the same bits.
template <>
struct SpanView<int8_t> : Q8SpanPointers<kRegs, kSpan> {};

inline __m512 levels16(const int8_t* q) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
}
// Elements e .. e + 15 of a position's value row (e a multiple of 16).
inline __m512 value16(const BlockQ8_0* row, int64_t e) {
    const BlockQ8_0& b = row[e / QK];
    return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b.d)), levels16(b.qs + e % QK));
}

// Software prefetch of the next span while this one is scored (decode at a long context: 24 layers x 16,000
// positions took 14-27% less time with an f16, Q8_0 or f32 cache in two runs, BENCHMARKS.md). A span's four
// blocks lie a whole block of every layer apart (kv/kv_cache.h: 192 KB for the 0.5B's f16 cache), and a
// head's value rows are half of each row, so the hardware prefetcher does not run ahead of the loads; the
// first pass of queries requests the next span's lines a few at a time, as its own loads go: a key
// register's line for every line of keys it loads, a value row's lines with each value row.
// The requests are tensor/prefetch.h's prefetch_line (an asm statement, into L2: see there).
// Dimension d's keys in registers [r0, r1) (16 positions each), when d starts a cache line of them.
template <typename T>
inline void prefetch_keys(const SpanView<T>* next, int d, int r0 = 0, int r1 = kRegs) {
    constexpr int kDimsPerLine = 64 / (16 * static_cast<int>(sizeof(T)));  // 16 positions of a dimension: 16 x T
    if (!next || d % kDimsPerLine != 0) return;
    for (int r = r0; r < r1; ++r) prefetch_line(next->kt[r] + d * next->kt_stride);
    if constexpr (std::is_same_v<T, int8_t>) {
        if (d == 0 || (next->off + d) % QK == 0)  // the keys' scales of the cache's 32 dimensions from here
            for (int r = r0; r < r1; ++r)
                prefetch_line(next->ks[r] + ((next->off + d) / QK - next->off / QK) * next->kt_stride);
    }
}
template <typename T, int hd>
inline void prefetch_values(const SpanView<T>* next, int j) {
    if (!next) return;
    const char* p;
    int bytes;
    if constexpr (std::is_same_v<T, int8_t>) {
        p = reinterpret_cast<const char*>(next->vt[j] + next->off / QK);
        bytes = (hd + QK - 1) / QK * static_cast<int>(sizeof(BlockQ8_0));
    } else {
        p = reinterpret_cast<const char*>(next->vt[j]);
        bytes = hd * static_cast<int>(sizeof(T));
    }
    prefetch_lines(p, bytes);
}

// Block bi of the next span, all its keys and value rows (a converting pass requests a block's lines with
// each block it converts).
template <typename T, int BS, int hd>
void prefetch_block(const SpanView<T>* next, int bi) {
    for (int d = 0; d < hd; ++d) prefetch_keys(next, d, bi * (BS / 16), (bi + 1) * (BS / 16));
    for (int j = bi * BS; j < (bi + 1) * BS; ++j) prefetch_values<T, hd>(next, j);
}

// kPrefetch: request `next`, the following span, as this one is read (a template parameter: with the requests
// compiled in and skipped at run time, the other quads of a 512-token prefill at 16,000 positions ran 20-35%
// slower).
template <int NV, int NQ, bool kPrefetch, typename T>
void pass_span(const QueryGroup& g, int i0, const SpanView<T>& sv, __m512 scale, float* m, float* l, float* sc,
               const SpanView<T>* next) {
    constexpr int hd = 16 * NV;
    // Value registers per query per pass: 4 queries x 4 = 16 accumulators, or up to 8 queries x 2.
    constexpr int kVPass = pass_divisor(NV, NQ > 4 ? 2 : 4);
    int ni[NQ];
    int lo = kSpan, hi = 0;  // fewest / most positions of this span a query of the pass sees
    for (int u = 0; u < NQ; ++u) {
        ni[u] = std::clamp(g.n_pos[i0 + u] - sv.p0, 0, sv.n);
        lo = std::min(lo, ni[u]);
        hi = std::max(hi, ni[u]);
    }
    if (hi == 0) return;
    const int nr = (hi + 15) / 16;  // registers with a position some query sees
    // Scores: acc[u][r] = q_u . K[:, 16r .. 16r+16), each key register loaded once for the group. Up to four
    // queries take all four key registers a pass over the dimensions; more (a decode group of seven) take two
    // registers a pass, so 2 x NQ accumulators and the keys fit the 32 registers, and still load (and convert)
    // each key register once. Each accumulator sums its dimensions in ascending order either way.
    __m512 acc[NQ][kRegs];
    for (int u = 0; u < NQ; ++u)
        for (int r = 0; r < kRegs; ++r) acc[u][r] = _mm512_setzero_ps();
    constexpr int kKPass = NQ > 4 ? 2 : kRegs;
#pragma GCC unroll 4
    for (int r0 = 0; r0 < kRegs; r0 += kKPass) {
        if (r0 >= nr) break;  // no query sees these positions: their scores stay 0 and are masked below
        // This pass's accumulators, local so they stay in registers (indexed by r0, acc[][] would not).
        __m512 pa[NQ][kKPass];
        for (int u = 0; u < NQ; ++u)
            for (int r = 0; r < kKPass; ++r) pa[u][r] = _mm512_setzero_ps();
        if constexpr (std::is_same_v<T, int8_t>) {
            // Per 32-dimension block of the cache (or the part of one a narrow head has), its scales once. A
            // head 16 wide, or a multiple of 32, never straddles a block; one 48 or 80 wide starts mid-block
            // every other head, and its runs end at the cache's block edges.
            constexpr int kChunk = hd < QK ? hd : QK;
            constexpr bool kWhole = hd % QK == 0 || QK % hd == 0;
            for (int d0 = 0, d1; d0 < hd; d0 = d1) {
                d1 = kWhole ? d0 + kChunk : std::min<int>(hd, static_cast<int>(((sv.off + d0) / QK + 1) * QK - sv.off));
                const int64_t blk = (sv.off + d0) / QK - sv.off / QK;
                __m512 ks[kKPass];
                for (int r = 0; r < kKPass; ++r)
                    ks[r] = r0 + r < nr ? load16(sv.ks[r0 + r] + blk * sv.kt_stride) : _mm512_setzero_ps();
                for (int d = d0; d < d1; ++d) {
                    if constexpr (kPrefetch) {
                        if (r0 == 0) prefetch_keys(next, d);
                    }
                    __m512 kd[kKPass];
                    for (int r = 0; r < kKPass; ++r)
                        kd[r] = r0 + r < nr ? _mm512_mul_ps(ks[r], levels16(sv.kt[r0 + r] + d * sv.kt_stride)) : _mm512_setzero_ps();
                    for (int u = 0; u < NQ; ++u) {
                        const __m512 qd = _mm512_set1_ps(g.q[i0 + u][d]);
                        for (int r = 0; r < kKPass; ++r) pa[u][r] = _mm512_fmadd_ps(qd, kd[r], pa[u][r]);
                    }
                }
            }
        } else {
            for (int d = 0; d < hd; ++d) {
                if constexpr (kPrefetch) {
                    if (r0 == 0) prefetch_keys(next, d);
                }
                __m512 kd[kKPass];
                for (int r = 0; r < kKPass; ++r)
                    kd[r] = r0 + r < nr ? load16(sv.kt[r0 + r] + d * sv.kt_stride) : _mm512_setzero_ps();
                for (int u = 0; u < NQ; ++u) {
                    const __m512 qd = _mm512_set1_ps(g.q[i0 + u][d]);
                    for (int r = 0; r < kKPass; ++r) pa[u][r] = _mm512_fmadd_ps(qd, kd[r], pa[u][r]);
                }
            }
        }
        for (int u = 0; u < NQ; ++u)
            for (int r = 0; r < kKPass; ++r) acc[u][r0 + r] = pa[u][r];
    }
    // Online softmax per query: rescale what was accumulated under the old max.
    float rescale[NQ];
    for (int u = 0; u < NQ; ++u) {
        const int i = i0 + u;
        rescale[u] = 1.0f;
        if (ni[u] == 0) continue;
        __m512 mx = _mm512_set1_ps(-INFINITY);
        for (int r = 0; r < kRegs; ++r) {
            acc[u][r] = _mm512_mul_ps(acc[u][r], scale);
            mx = _mm512_mask_max_ps(mx, first_lanes(ni[u] - 16 * r), mx, acc[u][r]);
        }
        const float m_new = std::max(m[i], _mm512_reduce_max_ps(mx));
        rescale[u] = m[i] == -INFINITY ? 0.0f : std::exp(m[i] - m_new);
        __m512 sum = _mm512_setzero_ps();
        for (int r = 0; r < kRegs; ++r) {
            const __m512 e = _mm512_maskz_mov_ps(first_lanes(ni[u] - 16 * r), exp_simd::exp16(_mm512_sub_ps(acc[u][r], _mm512_set1_ps(m_new))));
            _mm512_storeu_ps(sc + i * kSpan + 16 * r, e);
            sum = _mm512_add_ps(sum, e);
        }
        l[i] = l[i] * rescale[u] + _mm512_reduce_add_ps(sum);
        m[i] = m_new;
    }
    // Weighted sum of values, kVPass registers of each query's output at a time; each value row loaded
    // once for the pass. Past a query's own positions its FMAs are masked off (its sums stay as they were).
    for (int v0 = 0; v0 < NV; v0 += kVPass) {
        __m512 o[NQ][kVPass];
        for (int u = 0; u < NQ; ++u) {
            const __m512 r = _mm512_set1_ps(rescale[u]);
            for (int v = 0; v < kVPass; ++v) o[u][v] = _mm512_mul_ps(_mm512_loadu_ps(g.out[i0 + u] + 16 * (v0 + v)), r);
        }
        for (int j = 0; j < hi; ++j) {
            if constexpr (kPrefetch) {
                if (v0 == 0) prefetch_values<T, hd>(next, j);
            }
            __m512 vv[kVPass];
            for (int v = 0; v < kVPass; ++v) {
                if constexpr (std::is_same_v<T, int8_t>) vv[v] = value16(sv.vt[j], sv.off + 16 * (v0 + v));
                else vv[v] = load16(sv.vt[j] + 16 * (v0 + v));
            }
            for (int u = 0; u < NQ; ++u) {
                const __m512 w = _mm512_set1_ps(sc[(i0 + u) * kSpan + j]);
                if (j < lo) {
                    for (int v = 0; v < kVPass; ++v) o[u][v] = _mm512_fmadd_ps(w, vv[v], o[u][v]);
                } else {
                    const __mmask16 k = j < ni[u] ? __mmask16(0xffff) : __mmask16(0);
                    for (int v = 0; v < kVPass; ++v) o[u][v] = _mm512_mask3_fmadd_ps(w, vv[v], o[u][v], k);
                }
            }
        }
        for (int u = 0; u < NQ; ++u)
            for (int v = 0; v < kVPass; ++v) _mm512_storeu_ps(g.out[i0 + u] + 16 * (v0 + v), o[u][v]);
    }
}

// The queries from i0 that share one pass over the span: a whole group of up to kWide (decode: a KV head's
// seven query heads, so the keys and values are loaded and converted once, not once per quad), else a quad
// (the last one may have fewer).
constexpr int kWide = 8;
inline int pass_width(const QueryGroup& g) { return g.n <= kWide ? g.n : kQuad; }

template <int NV, bool kPrefetch, typename T>
void pass_queries(const QueryGroup& g, int i0, const SpanView<T>& sv, __m512 scale, float* m, float* l, float* sc,
           const SpanView<T>* next) {
    switch (std::min(pass_width(g), g.n - i0)) {
        case 8: pass_span<NV, 8, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 7: pass_span<NV, 7, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 6: pass_span<NV, 6, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 5: pass_span<NV, 5, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 4: pass_span<NV, 4, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 3: pass_span<NV, 3, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 2: pass_span<NV, 2, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        case 1: pass_span<NV, 1, kPrefetch>(g, i0, sv, scale, m, l, sc, next); break;
        default: break;
    }
}

// One block of a Q8_0 cache, one KV head (dimensions off .. off + 16 NV): its keys as f32 (hd, BS), like an
// f32 block's, and its first nj positions' values as f32 rows of hd. Scale times level, as the scalar
// reference dequantizes them.
template <int BS, int NV>
void dequantize_q8_span(const KVCache& kv, int32_t b, int layer, int64_t off, int nj, float* kf, float* vf) {
    constexpr int hd = 16 * NV;
    const auto* kq = reinterpret_cast<const int8_t*>(kv.k(b, layer));
    const uint16_t* ks = kv.k_scales(b, layer);
    for (int d = 0; d < hd; ++d) {
        const int64_t c = off + d;
        for (int r = 0; r < BS / 16; ++r) {
            _mm512_storeu_ps(kf + d * BS + 16 * r, _mm512_mul_ps(load16(ks + (c / QK) * BS + 16 * r), levels16(kq + c * BS + 16 * r)));
        }
    }
    for (int j = 0; j < nj; ++j) {
        const auto* row = reinterpret_cast<const BlockQ8_0*>(kv.v(b, layer) + static_cast<size_t>(j) * kv.row_bytes());
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(vf + j * hd + 16 * v, value16(row, off + 16 * v));
    }
}

// BS = block size (16 or 32), NV = head_dim / 16 value registers.
template <typename T, int BS, int NV>
void attend_group_t(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    const KVCache& kv = *a.kv;
    constexpr int hd = 16 * NV;
    static_assert(kSpan % BS == 0 && BS % 16 == 0);
    const int kv_dim = kv.config().kv_dim;
    const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(hd)));
    const int64_t off = static_cast<int64_t>(a.kv_head) * hd;
    float* kb = scratch;                // (kSpan / BS) x (hd, BS) keys as f32 (f16 caches)
    float* vb = kb + kSpan * hd;        // (kSpan, hd) values as f32 (f16 caches)
    float* m = vb + kSpan * hd;         // (n) running max
    float* l = m + kMaxGroupQueries;    // (n) running sum of weights
    float* sc = l + kMaxGroupQueries;   // (n, kSpan) this span's weights
    int n_max = 0;
    for (int i = 0; i < g.n; ++i) {
        m[i] = -INFINITY;
        l[i] = 0;
        std::fill(g.out[i], g.out[i] + hd, 0.0f);
        n_max = std::max(n_max, g.n_pos[i]);
    }
    // An f16 or Q8_0 cache is read in place by a few queries (decode: one pass of up to eight), and converted once
    // per span into f32 scratch for many (a prompt chunk, a block of drafts); the values are the same f32
    // either way, so are the results.
    constexpr bool kQ8 = std::is_same_v<T, int8_t>;
    constexpr bool kF16 = std::is_same_v<T, uint16_t>;
    const bool convert = (kF16 || kQ8) && g.n > kWide;
    // Points a view at the span of positions [p0, p0 + kSpan): its blocks' keys (and key scales) and value rows.
    auto point = [&](SpanView<T>& v, int p0) {
        v.p0 = p0;
        v.n = std::min(kSpan, n_max - p0);
        const int n_blocks = (v.n + BS - 1) / BS;
        for (int bi = 0; bi < kSpan / BS; ++bi) {
            // Past the sequence's last block the registers are never loaded (their positions are not seen).
            const int32_t b = a.blocks[p0 / BS + std::min(bi, n_blocks - 1)];
            const T* kr = reinterpret_cast<const T*>(kv.k(b, a.layer)) + off * BS;
            for (int c = 0; c < BS / 16; ++c) v.kt[bi * (BS / 16) + c] = kr + 16 * c;
            if constexpr (kQ8) {
                const uint16_t* ks = kv.k_scales(b, a.layer) + (off / QK) * BS;
                for (int c = 0; c < BS / 16; ++c) v.ks[bi * (BS / 16) + c] = ks + 16 * c;
                for (int j = 0; j < BS; ++j)
                    v.vt[bi * BS + j] = reinterpret_cast<const BlockQ8_0*>(kv.v(b, a.layer) + static_cast<size_t>(j) * kv.row_bytes());
            } else {
                for (int j = 0; j < BS; ++j) v.vt[bi * BS + j] = reinterpret_cast<const T*>(kv.v(b, a.layer)) + off + int64_t(j) * kv_dim;
            }
        }
    };
    SpanView<T> views[2];  // this span and the next, taking turns
    SpanView<float> cv;
    views[0].kt_stride = views[1].kt_stride = cv.kt_stride = BS;
    if constexpr (kQ8) views[0].off = views[1].off = off;
    if (n_max > 0) point(views[0], 0);
    for (int p0 = 0, cur = 0; p0 < n_max; p0 += kSpan, cur ^= 1) {
        const SpanView<T>& sv = views[cur];
        const SpanView<T>* next = nullptr;
        if (p0 + kSpan < n_max) {
            point(views[cur ^ 1], p0 + kSpan);
            next = &views[cur ^ 1];
        }
        cv.p0 = p0;
        cv.n = sv.n;
        const int n_blocks = (sv.n + BS - 1) / BS;
        for (int bi = 0; convert && bi < n_blocks; ++bi) {
            if (next) prefetch_block<T, BS, hd>(next, bi);
            float* kbb = kb + bi * hd * BS;
            const int nj = std::min(BS, sv.n - bi * BS);
            if constexpr (kQ8) {
                dequantize_q8_span<BS, NV>(kv, a.blocks[p0 / BS + bi], a.layer, off, nj, kbb, vb + bi * BS * hd);
            } else {
                const T* kr = sv.kt[bi * (BS / 16)];
                for (int i = 0; i < hd * BS; i += 16) _mm512_storeu_ps(kbb + i, load16(kr + i));
                for (int j = 0; j < nj; ++j) {
                    float* row = vb + (bi * BS + j) * hd;
                    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(row + 16 * v, load16(sv.vt[bi * BS + j] + 16 * v));
                }
            }
            for (int c = 0; c < BS / 16; ++c) cv.kt[bi * (BS / 16) + c] = kbb + 16 * c;
            for (int j = 0; j < nj; ++j) cv.vt[bi * BS + j] = vb + (bi * BS + j) * hd;
        }
        // The first pass's loads bring this span in (the others find it in cache): it requests the next.
        auto run = [&](const auto& view, const auto* pf) {
            for (int i0 = 0; i0 < g.n; i0 += pass_width(g)) {
                if (i0 == 0 && pf) pass_queries<NV, true>(g, i0, view, scale, m, l, sc, pf);
                else pass_queries<NV, false>(g, i0, view, scale, m, l, sc, pf);
            }
        };
        if (convert) run(cv, static_cast<const SpanView<float>*>(nullptr));
        else run(sv, next);
    }
    for (int i = 0; i < g.n; ++i) {
        const __m512 inv = _mm512_set1_ps(1.0f / l[i]);
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(g.out[i] + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(g.out[i] + 16 * v), inv));
    }
}

template <int BS, int NV>
void attend_group_nv(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    if (a.kv->config().type == DType::F16) attend_group_t<uint16_t, BS, NV>(a, g, scratch);
    else if (a.kv->config().type == DType::Q8_0) attend_group_t<int8_t, BS, NV>(a, g, scratch);
    else attend_group_t<float, BS, NV>(a, g, scratch);
}

template <int BS>
bool attend_group_bs(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    switch (a.head_dim) {
        case 16: attend_group_nv<BS, 1>(a, g, scratch); return true;
        case 32: attend_group_nv<BS, 2>(a, g, scratch); return true;
        case 48: attend_group_nv<BS, 3>(a, g, scratch); return true;  // TinyStories 15M
        case 64: attend_group_nv<BS, 4>(a, g, scratch); return true;
        case 80: attend_group_nv<BS, 5>(a, g, scratch); return true;
        case 96: attend_group_nv<BS, 6>(a, g, scratch); return true;
        case 128: attend_group_nv<BS, 8>(a, g, scratch); return true;
        default: return false;
    }
}

}  // namespace

// The cases of attend_group_bs() and attend_group_avx512() (tests/model/attention_test.cpp checks they agree).
bool avx512_attention_fits(int head_dim, int block_size) {
    const bool hd = head_dim % 16 == 0 && head_dim > 0 && head_dim <= 128 && head_dim != 112;
    return hd && (block_size == 16 || block_size == 32);
}

bool attend_group_avx512(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    switch (a.kv->block_size()) {
        case 16: return attend_group_bs<16>(a, g, scratch);
        case 32: return attend_group_bs<32>(a, g, scratch);
        default: return false;
    }
}

}  // namespace flint::detail
