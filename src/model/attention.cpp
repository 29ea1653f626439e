#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/kv_cache.h"
#include "tensor/isa.h"
#include "tensor/quant.h"

namespace flint {
namespace detail {

void attend_head_scalar(const HeadAttention& a, const float* q, float* scores, float* out) {
    const KVCache& kv = *a.kv;
    const int bs = kv.block_size(), kv_dim = kv.config().kv_dim, hd = a.head_dim;
    const DType type = kv.config().type;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t off = static_cast<int64_t>(a.kv_head) * hd;
    auto k_at = [&](int p, int i) {  // keys are transposed in the cache: [kv_dim][block_size]
        const int64_t c = off + i, idx = c * bs + p % bs;
        const int32_t b = a.blocks[p / bs];
        if (type == DType::Q8_0)
            return fp16_to_fp32(kv.k_scales(b, a.layer)[(c / QK) * bs + p % bs]) *
                   float(reinterpret_cast<const int8_t*>(kv.k(b, a.layer))[idx]);
        return type == DType::F16 ? fp16_to_fp32(reinterpret_cast<const uint16_t*>(kv.k(b, a.layer))[idx])
                                  : reinterpret_cast<const float*>(kv.k(b, a.layer))[idx];
    };
    auto v_at = [&](int p, int i) {
        const int64_t c = off + i;
        const int32_t b = a.blocks[p / bs];
        if (type == DType::Q8_0) {
            const auto* row = reinterpret_cast<const BlockQ8_0*>(kv.v(b, a.layer) + static_cast<size_t>(p % bs) * kv.row_bytes());
            return fp16_to_fp32(row[c / QK].d) * float(row[c / QK].qs[c % QK]);
        }
        const int64_t idx = static_cast<int64_t>(p % bs) * kv_dim + c;
        return type == DType::F16 ? fp16_to_fp32(reinterpret_cast<const uint16_t*>(kv.v(b, a.layer))[idx])
                                  : reinterpret_cast<const float*>(kv.v(b, a.layer))[idx];
    };
    float mx = -INFINITY;
    for (int p = 0; p < a.n_pos; ++p) {
        float s = 0;
        for (int i = 0; i < hd; ++i) s += q[i] * k_at(p, i);
        scores[p] = s * scale;
        mx = std::max(mx, scores[p]);
    }
    double sum = 0;
    for (int p = 0; p < a.n_pos; ++p) {
        scores[p] = std::exp(scores[p] - mx);
        sum += scores[p];
    }
    const float inv = static_cast<float>(1.0 / sum);
    std::fill(out, out + hd, 0.0f);
    for (int p = 0; p < a.n_pos; ++p) {
        const float w = scores[p] * inv;
        for (int i = 0; i < hd; ++i) out[i] += w * v_at(p, i);
    }
}

}  // namespace detail

size_t attend_group_scratch(const HeadAttention& a) {
    // K and V of one block (the AVX-512 kernel: of 64 positions) as f32, per-query running max / sum, and
    // the block's scores.
    const size_t bs = std::max<size_t>(static_cast<size_t>(a.kv->block_size()), detail::kAttendSpan);
    return 2 * bs * a.head_dim + 2 * kMaxGroupQueries + kMaxGroupQueries * bs + static_cast<size_t>(a.n_pos);
}

Isa attention_isa(int head_dim, int block_size) {
    if (active_isa() == Isa::AVX512 && detail::avx512_attention_fits(head_dim, block_size)) return Isa::AVX512;
    if (active_isa() != Isa::Scalar && detail::avx2_attention_fits(head_dim, block_size)) return Isa::AVX2;
    return Isa::Scalar;
}

std::string attention_fallback_warning(int head_dim, int block_size) {
    if (active_isa() == Isa::Scalar || attention_isa(head_dim, block_size) != Isa::Scalar) return {};
    return "no vector attention kernel is compiled for heads " + std::to_string(head_dim) + " wide (blocks of " +
           std::to_string(block_size) + "): attention runs the scalar reference, slow at long contexts";
}

void attend_group(const HeadAttention& a, const QueryGroup& g, float* scratch) {
    if (active_isa() == Isa::AVX512 && detail::attend_group_avx512(a, g, scratch)) return;
    if (active_isa() != Isa::Scalar && detail::attend_group_avx2(a, g, scratch)) return;
    float* scores = scratch;  // the scalar path: one query at a time
    for (int i = 0; i < g.n; ++i) {
        HeadAttention one = a;
        one.n_pos = g.n_pos[i];
        detail::attend_head_scalar(one, g.q[i], scores, g.out[i]);
    }
}

}  // namespace flint
