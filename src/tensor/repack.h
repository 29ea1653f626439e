// flint/tensor/repack.h — weights rearranged once at load time for the kernels that read them.
//
// GGUF stores a Q8_0 / Q4_0 matrix row by row in 34- / 18-byte blocks: a kernel reading one row needs two
// unaligned loads, an insert and two fp16 scale loads per 64 weights, and decode ran compute-bound at
// ~13 GB/s per core (BENCHMARKS.md, Engine), and each extra token of a batch cost 4 vector operations per
// 64 weights. The _R16 layouts put sixteen rows' block b side by side in 4-element quads (quant.h,
// BlockQ8_0R16): 32-bit lane i of a register is row i, so eight VPDPBUSD against broadcast activation
// quads give sixteen whole block dots, the levels are already unsigned, the sixteen scales are one load,
// and the f32 work (convert, scale product, FMA) is done once per sixteen rows instead of per row.
// Same bytes per row as the file (so a matrix is rewritten in place), same integer block dots and f32
// scale products, in the same order, as the scalar reference on the file's layout. IQ4_NL, Q4_1 and Q5_1
// take Q4_0's / Q5_0's layout (IQ4_NL's nibbles index its table; Q4_1 / Q5_1 add the rows' minima after the
// scales); the K-quants and IQ4_XS interleave whole super-blocks. AVX2 CPUs get the _R8 layouts (every type above): eight rows to a 256-bit register, one
// VPMADDUBSW per quad for the eight (dot_avx2.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "tensor/dtype.h"

namespace flint {

// The layout the active kernels want a `rows` x `cols` matrix of type t in, or nullopt to keep the
// file's (no faster kernel for t on this CPU, or rows not a multiple of the layout's interleave).
std::optional<DType> repack_target(DType t, int64_t rows, int64_t cols);

// Rewrites `rows` rows of type `from` (Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K or IQ4_XS) in
// place as `to` (the matching _R16 or _R8 layout; rows a multiple of interleaved_rows(to)); the bytes used stay
// the same.
void repack_rows(DType from, DType to, void* data, int64_t rows, int64_t cols);

// Column panels. A one-token kernel reads a group of interleaved rows against the whole activation row, then
// the next group against it again; when a group's bytes and the activation row overflow L1, the streaming
// group evicts the activation before the next group needs it (a 896 x 4864 Q4_0_R16 matrix, 44 KB groups and
// 6 KB of activations, streamed at 63-67% of a plain read where 4864 x 896 reached 77-83%; BENCHMARKS.md,
// Twenty-second session). So repack_rows stores a wide matrix as `panels` narrower ones one after another,
// each [rows, c1 - c0] in the layout's groups, and matmul multiplies them one by one and sums the products
// ((y0 + y1) + y2 ..., with every token count, so a token's logits do not depend on its batch). Layouts that
// do not interleave rows keep one panel.
struct Panel {
    int64_t c0 = 0, c1 = 0;  // columns [c0, c1)
    size_t offset = 0;       // the panel's first byte in the matrix
};
int layout_panels(DType t, int64_t cols);
Panel layout_panel(DType t, int64_t rows, int64_t cols, int p);

// Rows the layout t interleaves (kR16Rows for the _R16 layouts, kR8Rows for the _R8 ones, else 1): a matrix's
// row count is a multiple of it, and kernel tiles start at and span multiples of it.
int interleaved_rows(DType t);

// Row `row` of a rows x cols matrix stored in layout t (a file type or a repacked layout) as f32: out[cols].
void dequantize_matrix_row(DType t, const void* data, int64_t rows, int64_t row, int64_t cols, float* out);

}  // namespace flint
