// flint/tensor/exp_simd.h — the vector exp of the SIMD kernels (SwiGLU's gate, attention's softmax).
//
// exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 in [-ln2/2, ln2/2]; ln 2 is split in a
// high part exact in a float and a low correction so r loses nothing; e^r is the degree-6 minimax
// polynomial of the Cephes library's expf (about 1 ulp on that interval). Inputs are clamped to where
// 2^n stays a normal float; a NaN stays NaN. Included by the *_avx2.cpp / *_avx512.cpp files, which are
// compiled for those instruction sets.
#pragma once
#include <immintrin.h>

namespace flint::detail::exp_simd {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kMin = -87.3f;  // 2^n >= 2^-126
constexpr float kMax = 88.3f;   // 2^n <= 2^127
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_set1_ps(kMax), _mm256_max_ps(_mm256_set1_ps(kMin), x));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
    __m256 p = _mm256_set1_ps(kP[0]);
    for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP[i]));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#endif

#if defined(__AVX512F__)
inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(kMax), _mm512_max_ps(_mm512_set1_ps(kMin), x));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
    __m512 p = _mm512_set1_ps(kP[0]);
    for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP[i]));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}
#endif

}  // namespace flint::detail::exp_simd
