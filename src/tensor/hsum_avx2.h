// flint/tensor/hsum_avx2.h — horizontal sum of 8 floats, shared by the AVX2 translation units (include
// only from *_avx2.cpp / *_avx512.cpp files, which are compiled with the instruction set enabled).
#pragma once
#include <immintrin.h>

namespace flint::detail {
// Internal linkage on purpose: each includer gets its own copy compiled with its own ISA flags, so the
// linker can never pick one TU's (say AVX-512) instance for another.
namespace {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace flint::detail
