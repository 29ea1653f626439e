// flint/tensor/quant_internal.h — per-format row converters behind quantize_row_ref /
// dequantize_row_ref, shared by the matmul kernels (activation quantization) and the tests.
// Not part of the public tensor API.
#pragma once
#include <cstdint>

#include "tensor/quant.h"

namespace flint::detail {

// n elements, n a multiple of the block size (32 or 256).
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t n);
void quantize_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t n);
void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n);
void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t n);
void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t n);
void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n);
void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n);
void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n);

// Q8_0 blocks -> Q8_0S (same levels and scale, the scale widened to f32, -128 * the levels' sum added).
void widen_q8_0s(const BlockQ8_0* x, BlockQ8_0S* y, int64_t n_blocks);
void quantize_q8_0s(const float* x, BlockQ8_0S* y, int64_t n);  // quantize_q8_0, then widen_q8_0s
// The same, block by block through a given Q8_0 quantizer (a SIMD one that writes the reference's bytes).
void quantize_q8_0s_via(void (*quantize)(const float* x, BlockQ8_0* y, int64_t n), const float* x, BlockQ8_0S* y,
                        int64_t n);

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n);
void dequantize_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n);
void dequantize_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n);
void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n);
void dequantize_q2_k(const BlockQ2_K* x, float* y, int64_t n);
void dequantize_q3_k(const BlockQ3_K* x, float* y, int64_t n);
void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n);

// The 6-bit (scale, min) pair of sub-block j (0..7) of a Q4_K/Q5_K super-block: 12 bytes hold
// eight 6-bit scales and eight 6-bit mins; j < 4 sit in the low 6 bits of bytes j and j+4, j >= 4
// are split between the nibbles of bytes j+4 and the top 2 bits of bytes j-4 / j.
inline void k4_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = uint8_t((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// All eight (scale, min) pairs at once, four per 32-bit word: sc[0..7], m[0..7] (same as k4_scale_min).
inline void k4_scales_mins(const uint8_t* q, uint8_t* sc, uint8_t* m) {
    uint32_t w[3];
    __builtin_memcpy(w, q, 12);
    const uint32_t lo6 = 0x3f3f3f3f, lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
    const uint32_t s03 = w[0] & lo6, m03 = w[1] & lo6;
    const uint32_t s47 = (w[2] & lo4) | (((w[0] >> 6) & lo2) << 4);
    const uint32_t m47 = ((w[2] >> 4) & lo4) | (((w[1] >> 6) & lo2) << 4);
    __builtin_memcpy(sc, &s03, 4);
    __builtin_memcpy(sc + 4, &s47, 4);
    __builtin_memcpy(m, &m03, 4);
    __builtin_memcpy(m + 4, &m47, 4);
}

// Q5_0 / Q5_1's fifth bits: element j of the block (0..31) is bit j of the little-endian 32-bit qh.
inline uint32_t q5_high_bits(const uint8_t* qh) {
    uint32_t h;
    __builtin_memcpy(&h, qh, 4);
    return h;
}

// Q2_K / Q3_K: the two low bits of element e (0..255): element 128 h + 32 k + l sits in bits 2k, 2k + 1 of
// qs[32 h + l].
inline int k2_level(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
// Q3_K: the high bit of element e, bit 4 h + k of hmask[l] (as k2_level).
inline int q3k_high_bit(const uint8_t* hmask, int e) { return (hmask[e % 32] >> (4 * (e / 128) + (e % 128) / 32)) & 1; }
// Q3_K: the 6-bit scale (0..63, standing for s - 32) of sub-block j (0..15): its low four bits are nibble j / 8 of
// byte j % 8, its top two bits 2 (j / 4), 2 (j / 4) + 1 of byte 8 + j % 4.
inline int q3k_scale(const uint8_t* scales, int j) {
    return ((scales[j % 8] >> (4 * (j / 8))) & 15) | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

}  // namespace flint::detail
