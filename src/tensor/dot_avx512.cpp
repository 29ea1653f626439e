// flint/tensor/dot_avx512.cpp — AVX-512 (F/BW/VL + VNNI) matmul tiles for the integer formats (16-bit floats:
// dot_f_avx512.cpp).
//
// Two 32-element blocks per 512-bit register and VPDPBUSD (u8 x s8 -> int32, no int16 saturation)
// replace AVX2's sign/maddubs/madd triple. VPDPBUSD wants the weights unsigned: Q4_0 / Q5_0 store
// level + 8 / + 16 already, and Q8_0's signed bytes become w + 128 with one XOR. The dot of those
// with the signed activations is then off by offset * sum(a), so the accumulator starts at
// -offset * sum(a), computed once per token block and reused by every row: the int32 lanes equal
// the exact block dot, as in the scalar reference.
// Per (row, token, 2 blocks) that leaves 4 instructions: dpbusd, cvt, scale product, fma. IQ4_NL looks its
// levels up (+ 128) with one VPSHUFB; Q4_1 / Q5_1 store unsigned levels and add m * d_a * sum(a) per block.
// K-quants: each super-block's levels and scales are unpacked in registers (no L1 buffer, unlike
// the AVX2 path) and dotted 64 bytes at a time with maddubs/madd against Q8_K.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

// GCC 12's AVX-512 headers implement _mm512_undefined_* as a self-initialised variable, which
// -Wmaybe-uninitialized reports at every inlined cast/extract/reduce (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "tensor/k_scales_sse.h"
#include "tensor/kernels.h"
#include "tensor/quant_internal.h"

namespace flint::detail {
namespace {

template <typename B>
const B* row_ptr(const void* base, size_t stride, int r) {
    return reinterpret_cast<const B*>(static_cast<const uint8_t*>(base) + size_t(r) * stride);
}

// The two floats of f (lanes 0, 1: block b, block b+1) spread over a block pair's lanes. Natural
// order: [f0 x 8, f1 x 8]; kPermuted (see load_nibble_pair): [f0 x 4, f1 x 4, f0 x 4, f1 x 4].
template <bool kPermuted>
__m512 spread2(__m128 f) {
    const __m512i idx = kPermuted ? _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0)
                                  : _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_zextps128_ps512(f));
}

__m128 halves2(uint16_t h0, uint16_t h1) { return _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(h0), h1, 1)); }

// Two fp16 scales -> the pair's per-lane scales.
template <bool kPermuted = false>
__m512 scales2(uint16_t h0, uint16_t h1) { return spread2<kPermuted>(halves2(h0, h1)); }

// 64 bytes: the 32 quants of block b, then of block b+1. kTail: only block b exists; the upper half is 0.
template <bool kTail>
__m512i load_q8_pair(const BlockQ8_0* blk) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[0].qs));
    if constexpr (kTail) return _mm512_zextsi256_si512(lo);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[1].qs)), 1);
}

struct Q8_0W {
    using Block = BlockQ8_0;
    static constexpr int kOffset = 128;
    static constexpr bool kPermuted = false;
    template <bool kTail>
    static __m512i load(const Block* blk) {
        const __m512i v = _mm512_xor_si512(load_q8_pair<kTail>(blk), _mm512_set1_epi8(int8_t(0x80)));
        // A missing second block must contribute 0: its (zero) activations already make it so.
        return v;
    }
};

// Nibbles of two blocks, unpacked in 256-bit halves (cheaper than a 512-bit cross-lane permute):
// 128-bit lanes [block b elements 0..15, b+1 0..15, b 16..31, b+1 16..31]. The activations are
// permuted the same way (act_pair), once per token block, and the scales follow (scales2<true>).
template <bool kTail, typename B>
__m512i load_nibble_pair(const B* blk) {
    __m256i y = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs)));
    if constexpr (!kTail) y = _mm256_inserti128_si256(y, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs)), 1);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(y, m4)),
                              _mm256_and_si256(_mm256_srli_epi16(y, 4), m4), 1);
}

struct Q4_0W {
    using Block = BlockQ4_0;
    static constexpr int kOffset = 8;
    static constexpr bool kPermuted = true;
    template <bool kTail>
    static __m512i load(const Block* blk) { return load_nibble_pair<kTail>(blk); }
};

// Q5_0 / Q5_1: the nibble pair plus 16 where the fifth bit is set. qh's bit i is element i's fifth bit;
// arranged in load_nibble_pair's element order they form a byte mask.
template <bool kTail, typename B>
__m512i load_five_bit_pair(const B* blk) {
    uint32_t h0, h1 = 0;
    std::memcpy(&h0, blk[0].qh, 4);
    if constexpr (!kTail) std::memcpy(&h1, blk[1].qh, 4);
    const uint64_t bits = uint64_t(h0 & 0xffff) | (uint64_t(h1 & 0xffff) << 16) | (uint64_t(h0 >> 16) << 32) |
                          (uint64_t(h1 >> 16) << 48);
    const __m512i v = load_nibble_pair<kTail>(blk);
    return _mm512_or_si512(v, _mm512_maskz_mov_epi8(__mmask64(bits), _mm512_set1_epi8(16)));
}

struct Q5_0W {
    using Block = BlockQ5_0;
    static constexpr int kOffset = 16;
    static constexpr bool kPermuted = true;
    template <bool kTail>
    static __m512i load(const Block* blk) { return load_five_bit_pair<kTail>(blk); }
};

// Q4_1 / Q5_1: unsigned levels as stored (no offset) and a minimum per block, x = d * q + m: the minimum meets
// the activation pair's per-lane sums, m * d_a * sum(a), one more FMA per (row, token, pair).
struct Q4_1W {
    using Block = BlockQ4_1;
    static constexpr int kOffset = 0;
    static constexpr bool kPermuted = true;
    template <bool kTail>
    static __m512i load(const Block* blk) { return load_nibble_pair<kTail>(blk); }
};

struct Q5_1W {
    using Block = BlockQ5_1;
    static constexpr int kOffset = 0;
    static constexpr bool kPermuted = true;
    template <bool kTail>
    static __m512i load(const Block* blk) { return load_five_bit_pair<kTail>(blk); }
};

template <typename W>
constexpr bool kHasMin = std::is_same_v<W, Q4_1W> || std::is_same_v<W, Q5_1W>;

// The activation pair's sums per 4-byte group (lanes as the pair's), as floats: what a block minimum meets.
inline __m512 act_sums(__m512i av) {
    return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), av));
}

// The pair's two block minima (0 for a missing second block).
template <typename W, bool kTail>
__m128 mins2(const typename W::Block* blk) {
    if constexpr (kHasMin<W>) return halves2(blk[0].m, kTail ? 0 : blk[1].m);
    else return _mm_setzero_ps();
}

// IQ4_NL: the nibbles index the level table (one VPSHUFB per 128-bit lane, the table in each), stored + 128
// so that VPDPBUSD takes them unsigned.
struct IQ4_NLW {
    using Block = BlockIQ4_NL;
    static constexpr int kOffset = 128;
    static constexpr bool kPermuted = true;
    template <bool kTail>
    static __m512i load(const Block* blk) {
        const __m128i table = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)),
                                            _mm_set1_epi8(int8_t(0x80)));
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), load_nibble_pair<kTail>(blk));
    }
};

// A block pair's signed levels (what the formats store minus their offset; Q8_0 stores them as they are).
template <typename W, bool kTail>
__m512i load_signed(const typename W::Block* blk) {
    if constexpr (std::is_same_v<W, Q8_0W>) return load_q8_pair<kTail>(blk);
    else return _mm512_sub_epi8(W::template load<kTail>(blk), _mm512_set1_epi8(W::kOffset));
}

// One activation block pair in the weight type's element order.
template <typename W, bool kTail>
__m512i act_pair(const BlockQ8_0* blk) {
    const __m512i v = load_q8_pair<kTail>(blk);
    if constexpr (W::kPermuted) return _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));
    return v;
}

// -offset * sum(a) per 4-byte group of one activation block pair: the accumulator's start.
template <typename W>
__m512i offset_init(__m512i av) {
    return _mm512_sub_epi32(_mm512_setzero_si512(),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(int8_t(W::kOffset)), av));
}

template <typename W, int R, int T, bool kTail>
inline void step(const typename W::Block* const* wr, const BlockQ8_0* const* at, int64_t b, __m512 (&acc)[R][T]) {
    __m512i wv[R];
    __m512 dw[R], mw[R];
    for (int r = 0; r < R; ++r) {
        wv[r] = W::template load<kTail>(wr[r] + b);
        dw[r] = scales2<W::kPermuted>(wr[r][b].d, kTail ? 0 : wr[r][b + 1].d);
        if constexpr (kHasMin<W>) mw[r] = spread2<W::kPermuted>(mins2<W, kTail>(wr[r] + b));
    }
    for (int t = 0; t < T; ++t) {
        const __m512i av = act_pair<W, kTail>(at[t] + b);
        const __m512 da = scales2<W::kPermuted>(at[t][b].d, kTail ? 0 : at[t][b + 1].d);
        const __m512i init = offset_init<W>(av);
        [[maybe_unused]] __m512 asum;
        if constexpr (kHasMin<W>) asum = act_sums(av);  // once per token, for all R rows
        for (int r = 0; r < R; ++r) {
            const __m512i isum = _mm512_dpbusd_epi32(init, wv[r], av);
            acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[r], da), acc[r][t]);
            if constexpr (kHasMin<W>) acc[r][t] = _mm512_fmadd_ps(asum, _mm512_mul_ps(mw[r], da), acc[r][t]);
        }
    }
}

template <typename W, int R, int T>
void tile_rt(int64_t nb, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ldy) {
    using B = typename W::Block;
    const B* wr[R];
    const BlockQ8_0* at[T];
    for (int r = 0; r < R; ++r) wr[r] = row_ptr<B>(w, ws, r);
    for (int t = 0; t < T; ++t) at[t] = row_ptr<BlockQ8_0>(a, as, t);
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) step<W, R, T, false>(wr, at, b, acc);
    if (b < nb) step<W, R, T, true>(wr, at, b, acc);
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
}

template <typename W, int T>
void rows_dispatch(int nr, int64_t nb, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ldy) {
    switch (nr) {
        case 1: tile_rt<W, 1, T>(nb, w, ws, a, as, y, ldy); break;
        case 2: tile_rt<W, 2, T>(nb, w, ws, a, as, y, ldy); break;
        case 3: tile_rt<W, 3, T>(nb, w, ws, a, as, y, ldy); break;
        default: tile_rt<W, 4, T>(nb, w, ws, a, as, y, ldy); break;
    }
}

// Few tokens (decode, a handful of sequences, a block of drafts to verify): rows are streamed one after
// another, each dotted with every token while its bytes pass. Measured on this machine (Zen4 VM, one
// thread, per CPU-second): reading 2 or 4 rows interleaved block by block ran at 9-10 GB/s against
// 23-25 GB/s for the same bytes read row by row, and software prefetch did not recover it; the 4x4
// tiles below read rows that way, which is right for a prompt (each weight byte serves 64 tokens from
// L1) and wrong for a few tokens, where the weight stream is the cost.
// So the tokens' activation pairs are prepared once per chunk (offset sums, scales, in L1), and every
// row is then one sequential stream. One accumulator per (row, token), carried across the chunks and fed
// pair by pair in ascending order: exactly the arithmetic of tile_rt, so a token's result does not
// depend on the batch it is in (speculative verification and continuous batching rely on that).
template <typename W, int T>
void stream_rows(int64_t nb, const void* w, size_t ws, int nr, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    // Where VPDPBUSD's offset correction goes. One token: on the activation side (the weights made
    // unsigned, the accumulator starting at -offset * sum(a), prepared once per chunk), so a pair costs
    // one weight load and the two L1 loads. Several tokens: on the weight side (the activations made
    // unsigned, a + 128, once per chunk; the weights' signed levels, the accumulator starting at
    // -128 * sum(w), once per row pair for all tokens), so each token costs one L1 load fewer.
    // Either way the int32 lanes are the exact block dot: the floats that follow are the same.
    constexpr bool kWeightSide = T > 1;
    constexpr int64_t kPairs = T == 1 ? 64 : std::max(16, 64 / T);  // pairs per chunk: <= 136*T*kPairs B in L1
    alignas(64) __m512i av[T][kPairs], ainit[kWeightSide ? 1 : T][kPairs];
    // Each pair's two activation scales: one token, as two floats spread per row below; several tokens,
    // spread over the lanes once here, so a (row, token) pair costs one product.
    alignas(64) float da[kWeightSide ? 1 : T][2 * kPairs];
    alignas(64) __m512 da16[kWeightSide ? T : 1][kWeightSide ? kPairs : 1];
    alignas(64) __m512 racc[kDecodeRows][T];
    // Minimum types: each pair's activation sums (act_sums), once per chunk.
    alignas(64) __m512 asum[kHasMin<W> ? T : 1][kHasMin<W> ? kPairs : 1];
    for (int r = 0; r < nr; ++r)
        for (int t = 0; t < T; ++t) racc[r][t] = _mm512_setzero_ps();
    const __m512i k80 = _mm512_set1_epi8(int8_t(0x80));
    const int64_t n_pairs = (nb + 1) / 2;
    for (int64_t p0 = 0; p0 < n_pairs; p0 += kPairs) {
        const int64_t np = std::min(kPairs, n_pairs - p0);
        for (int t = 0; t < T; ++t) {
            const auto* at = row_ptr<BlockQ8_0>(a, as, t);
            for (int64_t p = 0; p < np; ++p) {
                const int64_t b = 2 * (p0 + p);
                const bool tail = b + 1 >= nb;
                const __m512i v = tail ? act_pair<W, true>(at + b) : act_pair<W, false>(at + b);
                if constexpr (kHasMin<W>) asum[t][p] = act_sums(v);
                if constexpr (kWeightSide) {
                    av[t][p] = _mm512_xor_si512(v, k80);
                    da16[t][p] = scales2<W::kPermuted>(at[b].d, tail ? 0 : at[b + 1].d);
                } else {
                    av[t][p] = v;
                    ainit[t][p] = offset_init<W>(v);
                    da[t][2 * p] = _cvtsh_ss(at[b].d);
                    da[t][2 * p + 1] = tail ? 0.0f : _cvtsh_ss(at[b + 1].d);
                }
            }
        }
        const int64_t full = (2 * (p0 + np) <= nb) ? np : np - 1;  // the last pair may be half a pair
        for (int r = 0; r < nr; ++r) {
            const auto* wr = row_ptr<typename W::Block>(w, ws, r);
            __m512 acc[T];
            for (int t = 0; t < T; ++t) acc[t] = racc[r][t];
            auto pair = [&](int64_t p, auto tail) {
                constexpr bool kTail = decltype(tail)::value;
                const int64_t b = 2 * (p0 + p);
                _mm_prefetch(reinterpret_cast<const char*>(wr + b) + kPrefetchBytes, _MM_HINT_T0);
                // The two scale products in a 128-bit register, then spread: the same products tile_rt
                // forms in 512 bits, for fewer uops (this path is load/uop bound).
                const __m128 dw = halves2(wr[b].d, kTail ? 0 : wr[b + 1].d);
                if constexpr (kWeightSide) {
                    // A missing second block: its levels pair with a + 128 = 128 and cancel against winit.
                    const __m512i wv = load_signed<W, kTail>(wr + b);
                    const __m512i winit = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), k80, wv));
                    const __m512 dw16 = spread2<W::kPermuted>(dw);
                    [[maybe_unused]] const __m512 mw16 = spread2<W::kPermuted>(mins2<W, kTail>(wr + b));
                    for (int t = 0; t < T; ++t) {
                        const __m512i isum = _mm512_dpbusd_epi32(winit, av[t][p], wv);
                        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw16, da16[t][p]), acc[t]);
                        if constexpr (kHasMin<W>) acc[t] = _mm512_fmadd_ps(asum[t][p], _mm512_mul_ps(mw16, da16[t][p]), acc[t]);
                    }
                } else {
                    const __m512i wv = W::template load<kTail>(wr + b);
                    const __m128 dwa = _mm_mul_ps(dw, _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&da[0][2 * p]))));
                    const __m512i isum = _mm512_dpbusd_epi32(ainit[0][p], wv, av[0][p]);
                    acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), spread2<W::kPermuted>(dwa), acc[0]);
                    if constexpr (kHasMin<W>) {
                        const __m128 da2 = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&da[0][2 * p])));
                        const __m128 mwa = _mm_mul_ps(mins2<W, kTail>(wr + b), da2);
                        acc[0] = _mm512_fmadd_ps(asum[0][p], spread2<W::kPermuted>(mwa), acc[0]);
                    }
                }
            };
            int64_t p = 0;
            for (; p < full; ++p) pair(p, std::false_type{});
            if (p < np) pair(p, std::true_type{});
            for (int t = 0; t < T; ++t) racc[r][t] = acc[t];
        }
    }
    for (int r = 0; r < nr; ++r)
        for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(racc[r][t]);
}

// Q8_0 decode once went to the AVX2 kernel (measured, whole 0.5B decode step, 2 threads: AVX2 85-87% of a
// plain read of the same bytes, AVX-512 79-81%). It stays on AVX-512 so that decode and batched products
// agree bit for bit (the AVX2 kernel sums in another order); see tests/tensor/batch_invariance_test.cpp.

// Up to kStreamTokens tokens: streamed rows, tokens in groups of at most 8 (8 accumulators per row; a
// row's second pass comes from L1). More (a prompt): 4x4 tiles (16 accumulators of the 32 registers).
template <typename W>
void tile_q8(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y, int64_t ldy) {
    const int64_t nb = cols / QK;
    const auto* ab = static_cast<const uint8_t*>(a);
    if (nt <= kStreamTokens) {
        const int groups = (nt + 7) / 8;  // balanced: 17 tokens go 6 + 6 + 5, not 8 + 8 + 1
        for (int t = 0, i = 0; t < nt; ++i) {
            const int g = nt / groups + (i < nt % groups);
            const uint8_t* at = ab + size_t(t) * as;
            float* yt = y + t * ldy;
            switch (g) {
                case 1: stream_rows<W, 1>(nb, w, ws, nr, at, as, yt, ldy); break;
                case 2: stream_rows<W, 2>(nb, w, ws, nr, at, as, yt, ldy); break;
                case 3: stream_rows<W, 3>(nb, w, ws, nr, at, as, yt, ldy); break;
                case 4: stream_rows<W, 4>(nb, w, ws, nr, at, as, yt, ldy); break;
                case 5: stream_rows<W, 5>(nb, w, ws, nr, at, as, yt, ldy); break;
                case 6: stream_rows<W, 6>(nb, w, ws, nr, at, as, yt, ldy); break;
                case 7: stream_rows<W, 7>(nb, w, ws, nr, at, as, yt, ldy); break;
                default: stream_rows<W, 8>(nb, w, ws, nr, at, as, yt, ldy); break;
            }
            t += g;
        }
        return;
    }
    int t = 0;
    for (; t + 4 <= nt; t += 4) rows_dispatch<W, 4>(nr, nb, w, ws, ab + size_t(t) * as, as, y + t * ldy, ldy);
    switch (nt - t) {
        case 3: rows_dispatch<W, 3>(nr, nb, w, ws, ab + size_t(t) * as, as, y + t * ldy, ldy); break;
        case 2: rows_dispatch<W, 2>(nr, nb, w, ws, ab + size_t(t) * as, as, y + t * ldy, ldy); break;
        case 1: rows_dispatch<W, 1>(nr, nb, w, ws, ab + size_t(t) * as, as, y + t * ldy, ldy); break;
        default: break;
    }
}

// ---- K-quants ---------------------------------------------------------------------------------------

// Q4_K / Q5_K fused: the weight side of one super-block (levels for 4 chunk pairs, scales widened
// to int16 lanes, mins) is built in registers once and dotted with up to kT tokens; no L1 buffer.
// Per 64 elements: maddubs(levels, a) -> int16 pairs, madd with the sub-block scales -> int32.
template <bool kQ5, typename B>
void tile_q45k_fused(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y,
                     int64_t ldy) {
    constexpr int kT = 8;  // tokens per pass over a row: 4 -> 8 made a 1.5B Q4_K prompt 70 -> 78 tok/s (the unpacked
                           // super-block is reused twice as often; eight accumulator pairs still fit in registers)
    const int64_t nb = cols / QK_K;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    // vpermw indices: lanes 0..15 take scale 2p, lanes 16..31 scale 2p+1.
    __m512i pick[4];
    for (int p = 0; p < 4; ++p)
        pick[p] = _mm512_inserti64x4(_mm512_set1_epi16(int16_t(2 * p)), _mm256_set1_epi16(int16_t(2 * p + 1)), 1);
    for (int r = 0; r < nr; ++r) {
        const B* wr = row_ptr<B>(w, ws, r);
        for (int t0 = 0; t0 < nt; t0 += kT) {
            const int tn = std::min(kT, nt - t0);
            __m512 acc[kT];
            __m256 macc[kT];
            for (int t = 0; t < tn; ++t) {
                acc[t] = _mm512_setzero_ps();
                macc[t] = _mm256_setzero_ps();
            }
            for (int64_t b = 0; b < nb; ++b) {
                const B& blk = wr[b];
                _mm_prefetch(reinterpret_cast<const char*>(&blk) + kPrefetchBytes, _MM_HINT_T0);
                alignas(8) uint8_t sc[8], mn[8];
                k4_scales_mins(blk.scales, sc, mn);
                const __m512i sc16 = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc))));
                const __m128i m8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn));
                const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));  // one min per 16 elements
                __m512i q[4], s[4];
                for (int p = 0; p < 4; ++p) {
                    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * p));
                    q[p] = _mm512_and_si512(
                        _mm512_inserti64x4(_mm512_castsi256_si512(raw), _mm256_srli_epi16(raw, 4), 1), m4);
                    if constexpr (kQ5) {
                        // Fifth bit of sub-block j is bit j of qh[l]: test bit 2p (low half), 2p+1 (high).
                        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh));
                        const __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(h), h, 1);
                        const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(int8_t(1 << (2 * p))),
                                                               _mm256_set1_epi8(int8_t(1 << (2 * p + 1))), 1);
                        q[p] = _mm512_mask_add_epi8(q[p], _mm512_test_epi8_mask(hh, bit), q[p], _mm512_set1_epi8(16));
                    }
                    s[p] = _mm512_permutexvar_epi16(pick[p], sc16);
                }
                const float d = _cvtsh_ss(blk.d), dmin = _cvtsh_ss(blk.dmin);
                for (int t = 0; t < tn; ++t) {
                    const BlockQ8_K& ab = row_ptr<BlockQ8_K>(a, as, t0 + t)[b];
                    __m512i isum = _mm512_setzero_si512();
                    for (int p = 0; p < 4; ++p) {
                        const __m512i av = _mm512_loadu_si512(ab.qs + 64 * p);
                        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(q[p], av), s[p]));
                    }
                    const __m256i msum = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)), m16);
                    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d * ab.d), acc[t]);
                    macc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * ab.d), macc[t]);
                }
            }
            for (int t = 0; t < tn; ++t)
                y[(t0 + t) * ldy + r] = _mm512_reduce_add_ps(acc[t]) - _mm512_reduce_add_ps(_mm512_zextps256_ps512(macc[t]));
        }
    }
}

// Super-blocks of sixteen 16-element sub-blocks (Q6_K, Q3_K), fused as Q4_K/Q5_K are: per row and
// super-block the unpacker gives the unsigned levels of 64 elements per register, the sixteen sub-block
// scales and "mins" as int16 lanes and the two float multipliers, x = d * sc * q - dmin * m; the mins meet
// the activation's bsums. Q6_K stores level + 32 and Q3_K level + 4: their offsets are mins of 32 * sc and
// 4 * sc with dmin = d.
struct KLevels {
    __m512i q[4];
    __m256i sc16, m16;
    float d, dmin;
};

// Q6_K: the low four bits from ql, the top two from qh.
struct Q6KUnpack {
    using Block = BlockQ6_K;
    // Per-lane shifts that bring bits (0,1) / (2,3) of qh to bits 4,5 for the chunk pair (0,1) and
    // bits (4,5) / (6,7) for (2,3); lanes 0..15 (first 32 bytes) and 16..31 differ by 2.
    const __m512i shl01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr23 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    void operator()(const Block& blk, KLevels& k) const {
        const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(0x30);
        k.sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
        for (int h = 0; h < 2; ++h) {
            const __m512i L = _mm512_loadu_si512(blk.ql + 64 * h);
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h));
            const __m512i H = _mm512_inserti64x4(_mm512_castsi256_si512(qh), qh, 1);
            k.q[2 * h] = _mm512_or_si512(_mm512_and_si512(L, m4), _mm512_and_si512(_mm512_sllv_epi16(H, shl01), m2));
            k.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4),
                                             _mm512_and_si512(_mm512_srlv_epi16(H, shr23), m2));
        }
        k.m16 = k.sc16;
        k.d = _cvtsh_ss(blk.d);
        k.dmin = 32 * k.d;
    }
};

// Q3_K's low two bits: register p holds elements 64p .. 64p + 63, the two-bit planes 2 (p % 2) and 2 (p % 2) + 1 of
// qs[32 (p / 2) ..] in its two halves.
struct K2Planes {
    const __m512i shift[2] = {_mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1),
                              _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1)};
    void levels(const uint8_t* qs, __m512i (&q)[4]) const {
        for (int h = 0; h < 2; ++h) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
            const __m512i Q = _mm512_inserti64x4(_mm512_castsi256_si512(raw), raw, 1);
            for (int j = 0; j < 2; ++j)
                q[2 * h + j] = _mm512_and_si512(_mm512_srlv_epi16(Q, shift[j]), _mm512_set1_epi8(3));
        }
    }
};

// Q3_K: the two-bit planes plus 4 where hmask's bit 4h + k is set (register p, half j: bit 2p + j).
struct Q3KUnpack : K2Planes {
    using Block = BlockQ3_K;
    const __m512i hshift[4] = {_mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(1), 1),
                               _mm512_inserti64x4(_mm512_set1_epi16(2), _mm256_set1_epi16(3), 1),
                               _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(5), 1),
                               _mm512_inserti64x4(_mm512_set1_epi16(6), _mm256_set1_epi16(7), 1)};
    void operator()(const Block& blk, KLevels& k) const {
        levels(blk.qs, k.q);
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.hmask));
        const __m512i H = _mm512_inserti64x4(_mm512_castsi256_si512(hm), hm, 1);
        for (int p = 0; p < 4; ++p)
            k.q[p] = _mm512_or_si512(k.q[p], _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, hshift[p]), _mm512_set1_epi8(1)), 2));
        k.sc16 = _mm256_cvtepi8_epi16(q3k_scales_sse(blk.scales));
        k.m16 = k.sc16;
        k.d = _cvtsh_ss(blk.d);
        k.dmin = 4 * k.d;
    }
};

template <typename Unpack>
void tile_k16_fused(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y,
                    int64_t ldy) {
    using Block = typename Unpack::Block;
    constexpr int kT = 8;
    const int64_t nb = cols / QK_K;
    const Unpack unpack;
    // Lane i of register p takes scale 4p + i/8, the same one across each 128-bit lane L (scale 4p + L): one
    // PSHUFB of the scales' low or high eight, broadcast to every 128-bit lane (cheaper than VPERMW on Zen 4).
    __m512i pick[2];
    for (int j = 0; j < 2; ++j) {
        alignas(64) int8_t idx[64];
        for (int i = 0; i < 64; ++i) idx[i] = int8_t(2 * (4 * j + i / 16) + i % 2);
        pick[j] = _mm512_load_si512(idx);
    }
    for (int r = 0; r < nr; ++r) {
        const Block* wr = row_ptr<Block>(w, ws, r);
        for (int t0 = 0; t0 < nt; t0 += kT) {
            const int tn = std::min(kT, nt - t0);
            __m512 acc[kT];
            __m256 macc[kT];
            for (int t = 0; t < tn; ++t) {
                acc[t] = _mm512_setzero_ps();
                macc[t] = _mm256_setzero_ps();
            }
            for (int64_t b = 0; b < nb; ++b) {
                const Block& blk = wr[b];
                _mm_prefetch(reinterpret_cast<const char*>(&blk) + kPrefetchBytes, _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(&blk) + kPrefetchBytes + 64, _MM_HINT_T0);
                KLevels k;
                unpack(blk, k);
                __m512i s[4];
                const __m512i lo8 = _mm512_broadcast_i32x4(_mm256_castsi256_si128(k.sc16));
                const __m512i hi8 = _mm512_broadcast_i32x4(_mm256_extracti128_si256(k.sc16, 1));
                for (int p = 0; p < 4; ++p) s[p] = _mm512_shuffle_epi8(p < 2 ? lo8 : hi8, pick[p % 2]);
                for (int t = 0; t < tn; ++t) {
                    const BlockQ8_K& ab = row_ptr<BlockQ8_K>(a, as, t0 + t)[b];
                    __m512i isum = _mm512_setzero_si512();
                    for (int p = 0; p < 4; ++p) {
                        const __m512i av = _mm512_loadu_si512(ab.qs + 64 * p);
                        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(_mm512_maddubs_epi16(k.q[p], av), s[p]));
                    }
                    const __m256i msum = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)), k.m16);
                    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(k.d * ab.d), acc[t]);
                    macc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(k.dmin * ab.d), macc[t]);
                }
            }
            for (int t = 0; t < tn; ++t)
                y[(t0 + t) * ldy + r] = _mm512_reduce_add_ps(acc[t]) - _mm512_reduce_add_ps(_mm512_zextps256_ps512(macc[t]));
        }
    }
}

constexpr int id(DType t) { return static_cast<int>(t); }

}  // namespace

void fill_avx512(KernelSet& k) {
    k.tile[id(DType::Q8_0)] = tile_q8<Q8_0W>;
    k.tile[id(DType::Q4_0)] = tile_q8<Q4_0W>;
    k.tile[id(DType::Q5_0)] = tile_q8<Q5_0W>;
    k.tile[id(DType::IQ4_NL)] = tile_q8<IQ4_NLW>;
    k.tile[id(DType::Q4_1)] = tile_q8<Q4_1W>;
    k.tile[id(DType::Q5_1)] = tile_q8<Q5_1W>;
    k.tile[id(DType::Q4_K)] = tile_q45k_fused<false, BlockQ4_K>;
    k.tile[id(DType::Q5_K)] = tile_q45k_fused<true, BlockQ5_K>;
    k.tile[id(DType::Q6_K)] = tile_k16_fused<Q6KUnpack>;
    k.tile[id(DType::Q3_K)] = tile_k16_fused<Q3KUnpack>;
    // Q2_K stays on the AVX2 kernel: the fused one prefilled ~20% faster but decoded 28-29 tok/s against 41-43
    // (1.5B shape, flint bench --isa avx2|avx512 alternating, 2026-12-07); Q3_K decodes at the same speed on
    // both and prefills ~35% faster here.
    // Every kernel here walks rows one after another for a handful of tokens (the K-quants always do).
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::IQ4_NL, DType::Q4_1, DType::Q5_1, DType::Q3_K, DType::Q4_K,
                    DType::Q5_K, DType::Q6_K})
        k.stream_tokens[id(t)] = kStreamTokens;
    fill_avx512_r16(k);
    fill_avx512_float(k);
    fill_vec_avx512(k);
}

}  // namespace flint::detail
