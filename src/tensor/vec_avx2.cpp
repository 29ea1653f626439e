// flint/tensor/vec_avx2.cpp — AVX2 + FMA + F16C versions of the vector kernels. Tails (n % 8) go to
// the scalar reference. Sums use four accumulators so the FMA latency is hidden.
#include <immintrin.h>

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

}  // namespace

void fill_vec_avx2(KernelSet& k) {
    k.dot_f32 = dot_f32_avx2;
    k.dot_f16_f32 = dot_f16_f32_avx2;
    k.axpy_f32 = axpy_f32_avx2;
    k.axpy_f16 = axpy_f16_avx2;
    k.fp32_to_fp16_row = fp32_to_fp16_row_avx2;
    k.fp16_to_fp32_row = fp16_to_fp32_row_avx2;
}

}  // namespace flint::detail
