// flint/tensor/vec_avx512.cpp — AVX-512 versions of the elementwise kernels of the forward pass (the
// rest of the vector table keeps its AVX2 entries). Tails go to the scalar reference.
#include <immintrin.h>

#include <cmath>

#include "tensor/exp_simd.h"
#include "tensor/kernels.h"
#include "tensor/lanes_avx512.h"
#include "tensor/quant.h"

// GCC 12's -Wmaybe-uninitialized fires inside the AVX-512 intrinsic headers (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace flint::detail {
namespace {

// The tail goes through the same lanes (masked), so an element's result never depends on where a call
// splits the row: matmul_swiglu hands out different row ranges for different batch sizes.
void silu_mul_avx512(float* g, const float* u, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 x = _mm512_maskz_loadu_ps(m, g + i);
        const __m512 e = exp_simd::exp16(_mm512_sub_ps(zero, x));
        // Where exp(-g) overflows (g < -kMax) silu(g) is below 1e-36: 0, not g / (1 + e^kMax).
        const __mmask16 finite = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-exp_simd::kMax), _CMP_NLT_UQ);
        const __m512 s = _mm512_maskz_div_ps(finite, x, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, u + i)));
    }
}

// Two passes: the maximum (VMAXPS returns its second operand when the first is NaN, so NaNs are
// skipped), then the first index holding it.
int64_t argmax_f32_avx512(const float* x, int64_t n) {
    if (n < 32 || std::isnan(x[0])) return argmax_f32_scalar(x, n);
    __m512 m0 = _mm512_set1_ps(x[0]), m1 = m0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
    }
    float m = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    const __m512 mv = _mm512_set1_ps(m);
    for (i = 0; i + 16 <= n; i += 16) {
        const __mmask16 mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), mv, _CMP_EQ_OQ);
        if (mask) return i + __builtin_ctz(unsigned(mask));
    }
    for (; i < n; ++i)
        if (x[i] == m) return i;
    return 0;
}

// Masked tails (an element's value never depends on n); the sum in two double accumulators of eight.
double exp_sum_avx512(const float* x, float* y, int64_t n, float scale, float shift) {
    const __m512 sc = _mm512_set1_ps(scale), sh = _mm512_set1_ps(shift), lo = _mm512_set1_ps(exp_simd::kMin);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 a = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sc), sh);
        const __m512 e = _mm512_maskz_mov_ps(m & _mm512_cmp_ps_mask(a, lo, _CMP_GE_OQ), exp_simd::exp16(a));
        _mm512_mask_storeu_ps(y + i, m, e);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

// Float activations to Q8_0S blocks in one pass: the bytes of quantize_q8_0 then widen_q8_0s (the scale
// through fp16, round to nearest even, clamped to +-127 as the reference does; ofs = -128 x the block's sum).
// The 4864-wide FFN-down input of a 0.5B decode step, converted on the calling thread before every FFN-down
// region while the other waits: 2.8 us with the AVX2 quantizer and the scalar widening, 1.3-1.4 here.
void quantize_q8_0s_avx512(const float* x, BlockQ8_0S* y, int64_t n) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, x0), _mm512_andnot_ps(sign, x1)));
        const float d = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));  // = fp32_to_fp16's rounding
        const __m512 id = _mm512_set1_ps(d != 0 ? 1.0f / d : 0.0f);
        const __m512i q0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x0, id)), lo), hi);
        const __m512i q1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x1, id)), lo), hi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtepi32_epi8(q1));
        y[b].d = d;
        y[b].ofs = -128 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
}

}  // namespace

void fill_vec_avx512(KernelSet& k) {
    k.quantize_q8_0s = quantize_q8_0s_avx512;
    k.silu_mul = silu_mul_avx512;
    k.argmax_f32 = argmax_f32_avx512;
    k.exp_sum = exp_sum_avx512;
}

}  // namespace flint::detail
