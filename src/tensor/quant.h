// flint/tensor/quant.h — GGUF block formats: conversion to and from f32.
// Block layouts are GGUF's (ggml's), so real files load without conversion. `*_ref` functions are the
// scalar reference every SIMD kernel is tested against.
#pragma once
#include <cstdint>
#include <cstddef>

#include "tensor/dtype.h"

namespace flint {

// ---- scalar half/bfloat helpers -----------------------------------------------------------------
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);          // round to nearest even
inline float bf16_to_fp32(uint16_t h) { uint32_t u = uint32_t(h) << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }
uint16_t fp32_to_bf16(float f);          // round to nearest even

// ---- block structs (sizes match dtype.cpp traits) --------------------------------------------------
constexpr int QK = 32;    // elements per block for Q4_0, Q5_0, Q8_0
constexpr int QK_K = 256; // elements per super-block for K-quants

struct BlockQ4_0 { uint16_t d; uint8_t qs[QK / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[QK]; };
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; };
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };  // activations for K-quant dots
// Four rows' block b side by side (tensor/repack.h): the quants of rows 0..3 in 16-element runs so that
// a 128-bit lane holds one row, levels made unsigned (Q8_0: + 128; Q4_0 keeps its nibbles, + 8 built in),
// then the four rows' scales.
//   Q8_0R4 qs: [r0 e0..15 | r1 e0..15 | r2 e0..15 | r3 e0..15 | r0 e16..31 | r1 ... | r3 e16..31]
//   Q4_0R4 qs: [r0 qs0..15 | r1 | r2 | r3], each byte as in Q4_0 (low nibble e_j, high nibble e_j+16)
struct BlockQ8_0R4 { uint8_t qs[4 * QK]; uint16_t d[4]; };
struct BlockQ4_0R4 { uint8_t qs[2 * QK]; uint16_t d[4]; };
// Activations for the _R4 kernels: Q8_0's levels and (fp16-rounded) scale, the scale as f32 and the sum
// of the levels (the unsigned weight levels' offset correction, once per block instead of per row).
struct BlockQ8_0S { int8_t qs[QK]; float d; int32_t sum; };
static_assert(sizeof(BlockQ8_0R4) == 4 * 34 && sizeof(BlockQ4_0R4) == 4 * 18 && sizeof(BlockQ8_0S) == 40);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// ---- whole rows ------------------------------------------------------------------------------------
// n must be a multiple of the type's block size. Types: F32, F16, BF16, Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K
// (and Q8_K for activations). Throws flint::Error for types it cannot convert.
void quantize_row_ref(DType t, const float* x, void* out, int64_t n);
void dequantize_row_ref(DType t, const void* in, float* out, int64_t n);
bool can_quantize(DType t);    // quantize_row_ref supports it
bool can_dequantize(DType t);  // dequantize_row_ref supports it

}  // namespace flint
