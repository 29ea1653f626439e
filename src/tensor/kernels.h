// flint/tensor/kernels.h — the table of kernels one instruction set provides (internal to src/tensor).
// matmul.cpp picks one table at start-up (or when a test calls set_isa) and calls through it; each
// SIMD file fills its entries over a copy of the scalar table, so anything it does not accelerate
// falls back to the scalar reference.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/quant.h"

namespace flint::detail {

// Dot products of a tile of weight rows with a batch of activation rows:
//   y[t * ldy + r] = sum_c W[r, c] * A[t, c]     for r in [0, nr), t in [0, nt)
// w: nr weight rows of `cols` elements, w_stride bytes apart (interleaved layouts: nr/g groups of g rows,
//    g * w_stride bytes apart, g = interleaved_rows, 16 or 8, tensor/repack.h); nr <= kDecodeRows when nt == 1 or
//    nt <= KernelSet::stream_tokens[type] (the kernel streams the rows one after another, see
//    dot_avx512.cpp), otherwise nr <= kTileRows.
// a: nt activation rows in the weight's activation format (activation_type), a_stride bytes apart.
using TileFn = void (*)(int64_t cols, const void* w, size_t w_stride, int nr, const void* a,
                        size_t a_stride, int nt, float* y, int64_t ldy);
constexpr int kTileRows = 4;
constexpr int kDecodeRows = 16;
// The most tokens a row-streaming kernel takes (decode batches, draft blocks); above it, tiles.
// Measured (whole 0.5B Q8_0 step, 2 threads, kernels_bench ModelStep): 32 tokens streamed 144 ms, by
// 4x4 tiles 171 ms; from ~64 tokens the two are even (prompts keep the tiles, which need no re-reads).
constexpr int kStreamTokens = 32;
// Row-streaming kernels prefetch this far ahead in the weight stream (into L1; the interleaved-layout
// kernels also further ahead into L2, tensor/prefetch.h). Measured with the weights on 2 MiB pages (one
// thread, per CPU-second, 40000x896, two rounds under load; kernels_bench Cpu1T): 512 -> 2048 bytes: Q8_0
// decode 17.7 -> 19.5 GB/s, Q4_0 14 -> 16.8 GB/s, 8 tokens Q8_0 +25%; 4096 no better. (With the weights on
// 4 KiB pages, 1-4 KB had measured no better than 512.)
constexpr int kPrefetchBytes = 2048;

struct KernelSet {
    TileFn tile[kMaxDTypeId] = {};  // indexed by DType id; null where the type has no matmul
    // Per DType id: tile streams kDecodeRows rows for up to this many tokens (0: for one token only).
    uint8_t stream_tokens[kMaxDTypeId] = {};
    // Per file type: the layout these kernels want its matrices in (tensor/repack.h); F32: keep the file's.
    DType repack[kMaxDTypeId] = {};
    void (*quantize_q8_0)(const float* x, BlockQ8_0* y, int64_t n) = nullptr;
    void (*quantize_q8_k)(const float* x, BlockQ8_K* y, int64_t n) = nullptr;
    // Straight to the interleaved layouts' Q8_0S blocks: the bytes of quantize_q8_0 then widen_q8_0s.
    void (*quantize_q8_0s)(const float* x, BlockQ8_0S* y, int64_t n) = nullptr;
    float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
    float (*dot_f16_f32)(const uint16_t* a, const float* b, int64_t n) = nullptr;
    void (*axpy_f32)(float a, const float* x, float* y, int64_t n) = nullptr;
    void (*axpy_f16)(float a, const uint16_t* x, float* y, int64_t n) = nullptr;
    void (*fp32_to_fp16_row)(const float* x, uint16_t* y, int64_t n) = nullptr;
    void (*fp16_to_fp32_row)(const uint16_t* x, float* y, int64_t n) = nullptr;
    void (*silu_mul)(float* g, const float* u, int64_t n) = nullptr;
    int64_t (*argmax_f32)(const float* x, int64_t n) = nullptr;
    double (*exp_sum)(const float* x, float* y, int64_t n, float scale, float shift) = nullptr;
};

// The format activations are converted to before dotting with weights of type w:
// Q8_0 for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/IQ4_NL, Q8_K for the K-quants and IQ4_XS, Q8_0S for the 32-element interleaved layouts (the
// _R16 and _R8 layouts of Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1), F32 (no conversion) for F32/F16/BF16.
DType activation_type(DType w);

void fill_scalar(KernelSet& k);
void fill_avx2(KernelSet& k);      // dot_avx2.cpp (calls fill_vec_avx2)
void fill_vec_avx2(KernelSet& k);  // vec_avx2.cpp
void fill_avx512(KernelSet& k);     // defined in dot_avx512.cpp (calls fill_avx512_r16, fill_vec_avx512)
void fill_avx512_r16(KernelSet& k);  // dot_r16_avx512.cpp: the sixteen-row layouts and when to repack
// dot_r16_avx512.cpp: the 32-element sixteen-row kernels (and IQ4_XS's) with or without the one-token weight prefetch
// (fill_avx512_r16 fills them without; matmul.h DecodePrefetch).
void set_r16_decode_prefetch(KernelSet& k, bool on);
void fill_vec_avx512(KernelSet& k);  // vec_avx512.cpp
void fill_avx512_float(KernelSet& k);  // dot_f_avx512.cpp: F16 and BF16 weights

// Scalar vector kernels (vec.cpp), also used by the SIMD files for tails.
float dot_f32_scalar(const float* a, const float* b, int64_t n);
float dot_f16_f32_scalar(const uint16_t* a, const float* b, int64_t n);
void axpy_f32_scalar(float a, const float* x, float* y, int64_t n);
void axpy_f16_scalar(float a, const uint16_t* x, float* y, int64_t n);
void fp32_to_fp16_row_scalar(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row_scalar(const uint16_t* x, float* y, int64_t n);
void silu_mul_scalar(float* g, const float* u, int64_t n);
int64_t argmax_f32_scalar(const float* x, int64_t n);
double exp_sum_scalar(const float* x, float* y, int64_t n, float scale, float shift);

// The kernel table in use (see matmul.h set_isa).
const KernelSet& active_kernels();

}  // namespace flint::detail
