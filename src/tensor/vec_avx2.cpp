// flint/tensor/vec_avx2.cpp — AVX2 + FMA + F16C versions of the vector kernels. Tails (n % 8) go to
// the scalar reference. Sums use four accumulators so the FMA latency is hidden.
#include <immintrin.h>

#include <cmath>

#include "tensor/exp_simd.h"
#include "tensor/hsum_avx2.h"
#include "tensor/kernels.h"

namespace flint::detail {
namespace {

__m256 load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <typename LoadA>
float dot_impl(LoadA load_a, const float* b, int64_t n, int64_t& done) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(load_a(i + 8 * j), _mm256_loadu_ps(b + i + 8 * j), acc[j]);
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(load_a(i), _mm256_loadu_ps(b + i), acc[0]);
    done = i;
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

float dot_f32_avx2(const float* a, const float* b, int64_t n) {
    int64_t done;
    const float s = dot_impl([a](int64_t i) { return _mm256_loadu_ps(a + i); }, b, n, done);
    return s + dot_f32_scalar(a + done, b + done, n - done);
}

float dot_f16_f32_avx2(const uint16_t* a, const float* b, int64_t n) {
    int64_t done;
    const float s = dot_impl([a](int64_t i) { return load_f16(a + i); }, b, n, done);
    return s + dot_f16_f32_scalar(a + done, b + done, n - done);
}

void axpy_f32_avx2(float a, const float* x, float* y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    axpy_f32_scalar(a, x + i, y + i, n - i);
}

void axpy_f16_avx2(float a, const uint16_t* x, float* y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load_f16(x + i), _mm256_loadu_ps(y + i)));
    axpy_f16_scalar(a, x + i, y + i, n - i);
}

void fp32_to_fp16_row_avx2(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    fp32_to_fp16_row_scalar(x + i, y + i, n - i);
}

void fp16_to_fp32_row_avx2(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load_f16(x + i));
    fp16_to_fp32_row_scalar(x + i, y + i, n - i);
}

// silu(g) * u for eight lanes. Where exp(-g) overflows (g < -kMax) silu(g) is below 1e-36: 0, not
// g / (1 + e^kMax).
inline __m256 silu_mul8(__m256 x, __m256 u) {
    const __m256 e = exp_simd::exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    const __m256 finite = _mm256_cmp_ps(x, _mm256_set1_ps(-exp_simd::kMax), _CMP_NLT_UQ);
    return _mm256_mul_ps(_mm256_and_ps(finite, _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e))), u);
}

// Lanes where i < left (1..8) set.
inline __m256i tail_mask(int64_t left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The tail goes through the same lanes (masked), so an element's result never depends on where a call
// splits the row: matmul_swiglu hands out different row ranges for different batch sizes. Only the tail is
// masked: VMASKMOVPS stores are microcoded on AMD cores (perf on Zen 3 pp512: this function 3.9% of the
// samples with every vector masked).
void silu_mul_avx2(float* g, const float* u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(g + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(g + i, m, silu_mul8(_mm256_maskload_ps(g + i, m), _mm256_maskload_ps(u + i, m)));
    }
}

// Two passes: the maximum (MAXPS returns its second operand when the first is NaN, so NaNs are skipped),
// then the first index holding it.
int64_t argmax_f32_avx2(const float* x, int64_t n) {
    if (n < 16 || std::isnan(x[0])) return argmax_f32_scalar(x, n);
    __m256 m0 = _mm256_set1_ps(x[0]), m1 = m0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
    float m = lanes[0];
    for (float v : lanes) m = v > m ? v : m;
    for (; i < n; ++i) m = x[i] > m ? x[i] : m;
    const __m256 mv = _mm256_set1_ps(m);
    for (i = 0; i + 8 <= n; i += 8) {
        const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), mv, _CMP_EQ_OQ));
        if (mask) return i + __builtin_ctz(unsigned(mask));
    }
    for (; i < n; ++i)
        if (x[i] == m) return i;
    return 0;
}

// exp(x * scale - shift) for eight lanes, 0 where the argument is below kMin or the lane is masked off.
inline __m256 exp_lanes(__m256 x, __m256 keep_lanes, __m256 sc, __m256 sh) {
    const __m256 a = _mm256_sub_ps(_mm256_mul_ps(x, sc), sh);
    const __m256 keep = _mm256_and_ps(keep_lanes, _mm256_cmp_ps(a, _mm256_set1_ps(exp_simd::kMin), _CMP_GE_OQ));
    return _mm256_and_ps(keep, exp_simd::exp8(a));
}

// A masked tail (an element's value never depends on n; only the tail is masked, as in silu_mul_avx2); the
// sum in two double accumulators of four.
double exp_sum_avx2(const float* x, float* y, int64_t n, float scale, float shift) {
    const __m256 sc = _mm256_set1_ps(scale), sh = _mm256_set1_ps(shift);
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    auto add = [&](__m256 e) {
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp_lanes(_mm256_loadu_ps(x + i), all, sc, sh);
        _mm256_storeu_ps(y + i, e);
        add(e);
    }
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        const __m256 e = exp_lanes(_mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m), sc, sh);
        _mm256_maskstore_ps(y + i, m, e);
        add(e);
    }
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(s0, s1));
    return (t[0] + t[1]) + (t[2] + t[3]);
}

}  // namespace

void fill_vec_avx2(KernelSet& k) {
    k.dot_f32 = dot_f32_avx2;
    k.dot_f16_f32 = dot_f16_f32_avx2;
    k.axpy_f32 = axpy_f32_avx2;
    k.axpy_f16 = axpy_f16_avx2;
    k.fp32_to_fp16_row = fp32_to_fp16_row_avx2;
    k.fp16_to_fp32_row = fp16_to_fp32_row_avx2;
    k.silu_mul = silu_mul_avx2;
    k.argmax_f32 = argmax_f32_avx2;
    k.exp_sum = exp_sum_avx2;
}

}  // namespace flint::detail
