// flint/tensor/k_scales_sse.h — Q3_K's packed sub-block scales unpacked in one 128-bit register, for the
// AVX2 and AVX-512 kernels (internal to src/tensor). Each kernel file is compiled for its own instruction
// set, so the function has internal linkage: every file gets its own copy, and the linker cannot hand an
// AVX2-only CPU the AVX-512 file's.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace flint::detail {

// Q3_K's sixteen 6-bit scales, less 32, as int8 lanes (quant_internal.h q3k_scale): the low four bits from
// the nibbles of bytes 0..7 (low nibbles: sub-blocks 0..7, high: 8..15), the top two from bytes 8..11, two
// bits per group of four sub-blocks.
static inline __m128i q3k_scales_sse(const uint8_t* packed) {
    uint64_t lo;
    uint32_t hi;
    std::memcpy(&lo, packed, 8);
    std::memcpy(&hi, packed + 8, 4);
    const __m128i l = _mm_cvtsi64_si128(int64_t(lo)), m4 = _mm_set1_epi8(0x0f);
    const __m128i low4 = _mm_unpacklo_epi64(_mm_and_si128(l, m4), _mm_and_si128(_mm_srli_epi16(l, 4), m4));
    const uint32_t m2 = 0x03030303;
    const __m128i top2 = _mm_set_epi32(int((hi >> 6) & m2), int((hi >> 4) & m2), int((hi >> 2) & m2), int(hi & m2));
    return _mm_sub_epi8(_mm_or_si128(low4, _mm_slli_epi16(top2, 4)), _mm_set1_epi8(32));
}

}  // namespace flint::detail
