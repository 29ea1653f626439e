// flint/tensor/matmul.h — the matrix-vector / matrix-matrix products of the forward pass.
//
// Weights are stored as GGUF lays them out: `rows` rows of `cols` elements each, every row contiguous
// (ne[0] = cols). Activations are f32. For quantized weights the activations are quantized once per row
// (Q8_0 for the 32-element formats, Q8_K for K-quants) and dotted with integer arithmetic, as fast CPU
// engines do. The instruction set (scalar / AVX2 / AVX-512) is chosen once at start-up.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tensor/dtype.h"
#include "tensor/isa.h"

namespace flint {

class ThreadPool;

struct WeightView {
    DType type = DType::F32;
    const void* data = nullptr;  // rows * row_bytes(type, cols) bytes
    int64_t rows = 0;            // output features
    int64_t cols = 0;            // input features (ne[0])
};

// y[t * rows + r] = sum_c W[r, c] * x[t * cols + c]  for t in [0, n_tokens), r in [0, rows).
// Work is split across the pool by output rows, so each weight byte is read once per call however
// many tokens are in the batch. `pool` may be null (single thread).
void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool);

// Several products of the same input (Q, K and V of a layer): y_i = W_i · x for each pair. Neighbours that
// share a type and width (up to three) have their activations converted once and all their rows shared
// out in one parallel region. Results are the same bits as separate matmul calls.
struct MatmulOut {
    WeightView w;
    float* y = nullptr;
};
void matmul_many(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool* pool);

// The SwiGLU feed-forward's first half: h[t, r] = silu(gate · x)[t, r] * (up · x)[t, r], with up's product
// left in up_out ([n_tokens][rows] each). gate and up must have the same shape. Same type: one region (a
// batch: the rows of gate and up computed together and combined while hot; one token: each thread streams
// one of the matrices, combined after the region); otherwise two regions and a pass.
void matmul_swiglu(const WeightView& gate, const WeightView& up, const float* x, int64_t n_tokens, float* h,
                   float* up_out, ThreadPool* pool);

// A GGUF file's matrices may be of type t: every instruction set multiplies it (each SIMD kernel table is
// filled over a copy of the scalar one, so the scalar reference's types are the set).
bool has_matmul_kernel(DType t);

// One row of W as f32 (embedding lookup): out[cols].
void get_row(const WeightView& w, int64_t row, float* out);

}  // namespace flint
