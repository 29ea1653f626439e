// flint/tensor/dot_r4_avx512.cpp — AVX-512 VNNI kernels for the four-row layouts (tensor/repack.h).
//
// A repacked block holds block b of four rows, 16 elements of one row per 128-bit lane. So per block:
// two weight registers (Q8_0: loaded as they are; Q4_0: one load, the nibbles split in two), the four
// row scales spread over their lanes (one 8-byte load, a convert and a permute), and per token two
// broadcast loads of the activation block's halves, two VPDPBUSD, one scale product, one convert and
// one FMA. The weights are unsigned (Q8_0 + 128, Q4_0's nibbles = level + 8), so each int32 lane starts
// at -offset/4 * sum(a): a row's four lanes then add up to the exact block dot of the scalar reference.
// Against the file-layout kernels (dot_avx512.cpp) that is about half the instructions per weight byte
// for one token and 5 instead of 8 vector operations per token and 128 weights for several.
//
// Every token count runs the same code: a row group is streamed once per group of at most 8 tokens, each
// token with its own accumulator fed block by block in ascending order, the four lanes of a row summed
// the same way at the end. A token's result therefore does not depend on the batch it is in
// (tests/tensor/batch_invariance_test.cpp), as the runtime's decode batching and draft verification need.
#include <immintrin.h>

#include "tensor/kernels.h"
#include "tensor/quant.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace flint::detail {
namespace {

struct Q8R4 {
    using Block = BlockQ8_0R4;
    static constexpr int kLaneOffset = 128 / 4;
    static void load(const Block& b, __m512i& w0, __m512i& w1) {
        w0 = _mm512_loadu_si512(b.qs);
        w1 = _mm512_loadu_si512(b.qs + 64);
    }
};

struct Q4R4 {
    using Block = BlockQ4_0R4;
    static constexpr int kLaneOffset = 8 / 4;
    static void load(const Block& b, __m512i& w0, __m512i& w1) {
        const __m512i v = _mm512_loadu_si512(b.qs);
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        w0 = _mm512_and_si512(v, m4);
        w1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
};

// The four rows' scales over their lanes: [d0 x 4, d1 x 4, d2 x 4, d3 x 4].
inline __m512 row_scales(const uint16_t* d) {
    const __m128 s = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d)));
    return _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0), _mm512_castps128_ps512(s));
}

// Sum of each 128-bit lane's four floats: the four rows' results.
inline __m128 row_sums(__m512 x) {
    x = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1)));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), x));
}

// ng groups of four rows (group_stride bytes apart) against T tokens.
template <typename W, int T>
void groups_rt(int64_t nb, const uint8_t* w, size_t group_stride, int ng, const uint8_t* a, size_t as, float* y,
               int64_t ldy) {
    using B = typename W::Block;
    const BlockQ8_0S* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_0S*>(a + size_t(t) * as);
    for (int g = 0; g < ng; ++g) {
        const B* wb = reinterpret_cast<const B*>(w + size_t(g) * group_stride);
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const char* next = reinterpret_cast<const char*>(wb + b) + kPrefetchBytes;
            _mm_prefetch(next, _MM_HINT_T0);
            if constexpr (sizeof(B) > 64) _mm_prefetch(next + 64, _MM_HINT_T0);
            __m512i w0, w1;
            W::load(wb[b], w0, w1);
            const __m512 s = row_scales(wb[b].d);
            for (int t = 0; t < T; ++t) {
                const BlockQ8_0S& ab = at[t][b];
                const __m512i a0 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ab.qs)));
                const __m512i a1 = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ab.qs + 16)));
                const __m512i init = _mm512_set1_epi32(-W::kLaneOffset * ab.sum);
                const __m512i isum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(init, w0, a0), w1, a1);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(ab.d)), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) _mm_storeu_ps(y + t * ldy + 4 * g, row_sums(acc[t]));
    }
}

// Tokens in balanced groups of at most 8 (8 accumulators and the block's registers fit the 32 zmm).
template <typename W>
void tile_r4(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y, int64_t ldy) {
    const int64_t nb = cols / QK;
    const auto* wp = static_cast<const uint8_t*>(w);
    const auto* ab = static_cast<const uint8_t*>(a);
    const int ng = nr / 4;
    const size_t gs = 4 * ws;
    const int groups = (nt + 7) / 8;
    for (int t = 0, i = 0; t < nt; ++i) {
        const int n = nt / groups + (i < nt % groups);
        const uint8_t* at = ab + size_t(t) * as;
        float* yt = y + t * ldy;
        switch (n) {
            case 1: groups_rt<W, 1>(nb, wp, gs, ng, at, as, yt, ldy); break;
            case 2: groups_rt<W, 2>(nb, wp, gs, ng, at, as, yt, ldy); break;
            case 3: groups_rt<W, 3>(nb, wp, gs, ng, at, as, yt, ldy); break;
            case 4: groups_rt<W, 4>(nb, wp, gs, ng, at, as, yt, ldy); break;
            case 5: groups_rt<W, 5>(nb, wp, gs, ng, at, as, yt, ldy); break;
            case 6: groups_rt<W, 6>(nb, wp, gs, ng, at, as, yt, ldy); break;
            case 7: groups_rt<W, 7>(nb, wp, gs, ng, at, as, yt, ldy); break;
            default: groups_rt<W, 8>(nb, wp, gs, ng, at, as, yt, ldy); break;
        }
        t += n;
    }
}

constexpr int id(DType t) { return static_cast<int>(t); }

}  // namespace

void fill_avx512_r4(KernelSet& k) {
    k.tile[id(DType::Q8_0_R4)] = tile_r4<Q8R4>;
    k.tile[id(DType::Q4_0_R4)] = tile_r4<Q4R4>;
    k.stream_tokens[id(DType::Q8_0_R4)] = 255;  // every token count streams kDecodeRows rows (see above)
    k.stream_tokens[id(DType::Q4_0_R4)] = 255;
    k.repack[id(DType::Q8_0)] = DType::Q8_0_R4;
    k.repack[id(DType::Q4_0)] = DType::Q4_0_R4;
}

}  // namespace flint::detail
