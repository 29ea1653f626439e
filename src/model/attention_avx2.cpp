// AVX2 + FMA + F16C attention for one head; head_dim a multiple of 8.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kv/kv_cache.h"
#include "model/attention.h"
#include "tensor/exp_simd.h"
#include "tensor/hsum_avx2.h"
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

// NC = block_size / 8 and NV = head_dim / 8 are compile-time so the accumulator arrays live in registers
// (with run-time bounds GCC keeps them on the stack: a store-forwarding chain per FMA, 3-4x slower).
template <typename T, int NC, int NV>
void attend_group_t(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    const KVCache& kv = *a.kv;
    constexpr int bs = 8 * NC, hd = 8 * NV, nv = NV;
    const int kv_dim = kv.config().kv_dim;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t off = static_cast<int64_t>(a.kv_head) * hd;  // V: column offset; K: row offset * bs
    float* kb = scratch;                    // (bs, hd) keys of the block, f32
    float* vb = kb + bs * hd;               // (bs, hd) values
    float* m = vb + bs * hd;                // (n) running max
    float* l = m + kMaxGroupQueries;        // (n) running sum of weights
    float* sc = l + kMaxGroupQueries;       // (n, bs) this block's scores, then weights
    int n_max = 0;
    for (int i = 0; i < g.n; ++i) {
        m[i] = -INFINITY;
        l[i] = 0;
        std::fill(g.out[i], g.out[i] + hd, 0.0f);
        n_max = std::max(n_max, g.n_pos[i]);
    }
    for (int p0 = 0; p0 < n_max; p0 += bs) {
        const int32_t b = a.blocks[p0 / bs];
        const int n = std::min(bs, n_max - p0);
        const T* kr = reinterpret_cast<const T*>(kv.k(b, a.layer)) + off * bs;
        const T* vr = reinterpret_cast<const T*>(kv.v(b, a.layer)) + off;
        // K is stored transposed, (hd, bs) per head, so 8 positions' scores come from one FMA per dimension
        // (no horizontal sums); V is (bs, hd) for the weighted sum. Slots past n hold stale values: their
        // scores are computed and never read.
        // An f32 cache is read in place; f16 is converted once per block for all the queries.
        const float* kt = kb;
        const float* vt = vb;
        int v_stride = hd;
        if constexpr (std::is_same_v<T, float>) {
            kt = kr;
            vt = vr;
            v_stride = kv_dim;
        } else if constexpr (std::is_same_v<T, int8_t>) {
            dequantize_q8_block<bs, hd>(kv, b, a.layer, off, n, kb, vb);
        } else {
            to_f32(kr, kb, hd * bs);
            for (int j = 0; j < n; ++j) to_f32(vr + static_cast<int64_t>(j) * kv_dim, vb + j * hd, hd);
        }
        constexpr int n8 = NC;  // padded positions score 0 and are never read
        for (int i = 0; i < g.n; ++i) {
            const int ni = std::min(n, g.n_pos[i] - p0);  // positions of this block query i sees
            if (ni <= 0) continue;
            const float* q = g.q[i];
            float* s = sc + i * bs;
            __m256 acc[8];
            for (int c = 0; c < n8; ++c) acc[c] = _mm256_setzero_ps();
            for (int d = 0; d < hd; ++d) {
                const __m256 qd = _mm256_broadcast_ss(q + d);
                const float* kd = kt + d * bs;
                for (int c = 0; c < n8; ++c) acc[c] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 8 * c), acc[c]);
            }
            const __m256 vscale = _mm256_set1_ps(scale);
            for (int c = 0; c < n8; ++c) _mm256_storeu_ps(s + 8 * c, _mm256_mul_ps(acc[c], vscale));
            float bmax = -INFINITY;
            for (int j = 0; j < ni; ++j) bmax = std::max(bmax, s[j]);
            // Online softmax: rescale what was accumulated under the old max.
            const float m_new = std::max(m[i], bmax);
            const float rescale = m[i] == -INFINITY ? 0.0f : std::exp(m[i] - m_new);
            float bsum = 0;
            int j = 0;
            for (; j + 8 <= ni; j += 8) {
                const __m256 e = exp_simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), _mm256_set1_ps(m_new)));
                _mm256_storeu_ps(s + j, e);
                bsum += hsum(e);
            }
            for (; j < ni; ++j) {
                s[j] = std::exp(s[j] - m_new);
                bsum += s[j];
            }
            l[i] = l[i] * rescale + bsum;
            m[i] = m_new;
            float* o = g.out[i];
            const __m256 r = _mm256_set1_ps(rescale);
            for (int v0 = 0; v0 < nv; v0 += 8) {  // 8 accumulators (64 dims) at a time in registers
                constexpr int nvv = nv < 8 ? nv : 8;
                __m256 acc[8];
                for (int v = 0; v < nvv; ++v) acc[v] = _mm256_mul_ps(_mm256_loadu_ps(o + 8 * (v0 + v)), r);
                for (int j = 0; j < ni; ++j) {
                    const __m256 w = _mm256_set1_ps(s[j]);
                    const float* vv = vt + j * v_stride + 8 * v0;
                    for (int v = 0; v < nvv; ++v) acc[v] = _mm256_fmadd_ps(w, _mm256_loadu_ps(vv + 8 * v), acc[v]);
                }
                for (int v = 0; v < nvv; ++v) _mm256_storeu_ps(o + 8 * (v0 + v), acc[v]);
            }
        }
    }
    for (int i = 0; i < g.n; ++i) {
        const __m256 inv = _mm256_set1_ps(1.0f / l[i]);
        for (int v = 0; v < nv; ++v) _mm256_storeu_ps(g.out[i] + 8 * v, _mm256_mul_ps(_mm256_loadu_ps(g.out[i] + 8 * v), inv));
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
        case 32: attend_group_nv<NC, 4>(a, g, scratch); return true;
        case 64: attend_group_nv<NC, 8>(a, g, scratch); return true;
        case 128: attend_group_nv<NC, 16>(a, g, scratch); return true;
        default: return false;
    }
}
}  // namespace

bool attend_group_avx2(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    switch (a.kv->block_size()) {
        case 8: return attend_group_nc<1>(a, g, scratch);
        case 16: return attend_group_nc<2>(a, g, scratch);
        case 32: return attend_group_nc<4>(a, g, scratch);
        default: return false;
    }
}

}  // namespace flint::detail
