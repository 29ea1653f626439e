// flint/tensor/dot_f_avx512.cpp — AVX-512 matmul tiles for 16-bit float weights (F16, BF16) against f32
// activations.
//
// The AVX2 tile (dot_avx2.cpp) sums a row's products in one chain of 8-wide FMAs. For one token that
// chain's latency, not the memory, set the pace (0.5B F16 decode ~25 tok/s, ~65% of the read probe, on a
// Zen 5 guest), and a batch's 4 x 2 tile converted each weight register for two tokens only. Here every
// (row, token) sum has two 16-wide partial sums: the row's 16-element chunk j goes to partial j % 2 (the
// last ones masked, so any width works without a scalar tail), and the partials are added, then across
// lanes. That order is the same for every tile shape and token count, so a token's result does not
// depend on the batch it is in (tests/tensor/batch_invariance_test.cpp). One token streams its rows one
// after another, one chain pair each (two or four rows at once, or a software prefetch, streamed slower
// from DRAM: 11-14 and 18-26 against 19-27 GB/s, kernels_bench Cpu1T 40000 x 896); a batch goes four rows
// by three tokens. Measured against the AVX2 tile (BENCHMARKS.md, Thirty-third session): 0.5B F16 decode
// 29-30 -> 40-41 tok/s, pp512 199-215 -> 315-373 tok/s; four partial sums decoded no faster and left room
// for a 2 x 2 batch tile only (pp512 ~150). F32 weights keep the AVX2 tile: its bits are the ones the golden
// tests were recorded with, and stories260K's rows are too short for the chain to matter. The AVX2 tile
// itself keeps one chain: there two partials leave room for 2 x 2 or 3 x 2 batch tiles only, and a trial
// decoded 28-38% faster but read prompts 12-37% slower.
#include <immintrin.h>

#include <cstdint>

// GCC 12's AVX-512 headers implement _mm512_undefined_* as a self-initialised variable, which
// -Wmaybe-uninitialized reports at every inlined cast/extract/reduce (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "tensor/kernels.h"
#include "tensor/lanes_avx512.h"

namespace flint::detail {
namespace {

constexpr int kChunk = 16;    // elements per register
constexpr int kPartials = 2;  // partial sums per (row, token)
// A batch's tile: four rows by three tokens, 24 accumulators of the 32 registers.
constexpr int kBatchRows = 4, kBatchTokens = 3;

struct F16Z {
    static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load(const uint16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};
struct BF16Z {
    // bf16 is the top half of an f32: widen, shift into place.
    static __m512 load(const uint16_t* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load(const uint16_t* p, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
    static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
};

// Chunk i of R rows against T tokens into partial K, `m` its lanes. Every small loop here carries an unroll
// pragma: unrolled early, the accumulator array lives in registers (GCC 12 otherwise stored each accumulator
// to the stack on every step).
template <typename W, int R, int T, bool Masked>
__attribute__((always_inline)) inline void chunk(const uint16_t* const (&wr)[R], const float* const (&at)[T], int64_t i,
                                                 int K, __mmask16 m, __m512 (&acc)[R][T][kPartials]) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = Masked ? W::load(wr[r] + i, m) : W::load(wr[r] + i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
        const __m512 av = Masked ? _mm512_maskz_loadu_ps(m, at[t] + i) : _mm512_loadu_ps(at[t] + i);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][t][K] = _mm512_fmadd_ps(wv[r], av, acc[r][t][K]);
    }
}

// R rows x T tokens: y[t * ldy + r] = sum_c W[r, c] * A[t, c], in the order the file comment gives.
template <typename W, int R, int T>
void tile_rt(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const uint16_t* wr[R];
    const float* at[T];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const uint16_t*>(w + size_t(r) * ws);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const float*>(a + size_t(t) * as);
    __m512 acc[R][T][kPartials];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
            for (int k = 0; k < kPartials; ++k) acc[r][t][k] = _mm512_setzero_ps();
    // Whole steps with plain loads (masked ones streamed from DRAM at half the rate, Zen 5), then the last
    // < 32 elements masked: a chunk past the end adds 0 x 0 (a partial sum's -0 becomes +0, in every tile
    // alike).
    int64_t i = 0;
    for (; i + kChunk * kPartials <= n; i += kChunk * kPartials) {
#pragma GCC unroll 8
        for (int k = 0; k < kPartials; ++k) chunk<W, R, T, false>(wr, at, i + k * kChunk, k, 0xffff, acc);
    }
    if (i < n) {
#pragma GCC unroll 8
        for (int k = 0; k < kPartials; ++k) chunk<W, R, T, true>(wr, at, i + k * kChunk, k, first_lanes(n - i - k * kChunk), acc);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            static_assert(kPartials == 2);
            y[t * ldy + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][t][0], acc[r][t][1]));
        }
}

// R rows against every token, kBatchTokens at a time.
template <typename W, int R>
void walk_tokens(int64_t cols, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nt, float* y, int64_t ldy) {
    int t = 0;
    for (; t + kBatchTokens <= nt; t += kBatchTokens) tile_rt<W, R, kBatchTokens>(cols, w, ws, a + size_t(t) * as, as, y + t * ldy, ldy);
    for (; t < nt; ++t) tile_rt<W, R, 1>(cols, w, ws, a + size_t(t) * as, as, y + t * ldy, ldy);
}

// One token (decode, nr <= kDecodeRows): the rows one after another. Batches (nr <= kTileRows): four rows by
// three tokens, remainders one at a time.
template <typename W>
void tile_f16x(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y,
               int64_t ldy) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* ab = static_cast<const uint8_t*>(a);
    if (nt == 1) {
        for (int r = 0; r < nr; ++r) tile_rt<W, 1, 1>(cols, wb + size_t(r) * ws, ws, ab, as, y + r, ldy);
        return;
    }
    int r = 0;
    for (; r + kBatchRows <= nr; r += kBatchRows) walk_tokens<W, kBatchRows>(cols, wb + size_t(r) * ws, ws, ab, as, nt, y + r, ldy);
    for (; r < nr; ++r) walk_tokens<W, 1>(cols, wb + size_t(r) * ws, ws, ab, as, nt, y + r, ldy);
}

}  // namespace

void fill_avx512_float(KernelSet& k) {
    k.tile[static_cast<int>(DType::F16)] = tile_f16x<F16Z>;
    k.tile[static_cast<int>(DType::BF16)] = tile_f16x<BF16Z>;
}

}  // namespace flint::detail
