// flint/tensor/dot_r16_avx512.cpp — AVX-512 VNNI kernels for the sixteen-row layouts (tensor/repack.h).
//
// A repacked block holds block b of sixteen rows, 32-bit lane i = row i, in eight registers of 4-element
// quads (Q8_0: loaded as they are; Q4_0: four loads, each split into two quads' nibbles; Q5_0: Q4_0's, plus
// 16 where a 64-bit mask per register has the fifth bit; IQ4_NL: Q4_0's nibbles looked up in its table). Per
// token, eight VPDPBUSD against the activation's quads broadcast from memory accumulate the sixteen exact
// block dots (the weights are unsigned, Q8_0 + 128, Q4_0's level + 8, Q5_0's + 16, IQ4_NL's + 128, so each
// lane starts at -offset * sum(a), which the activation block carries; Q4_1's and Q5_1's levels have no
// offset, and their minima meet sum(a) in one more FMA),
// then one convert, one scale product (the sixteen row scales, converted once per block, times the token's
// scale) and one FMA per sixteen rows. That is 2.75 vector operations per token and 128 weights, against
// 8 for the file-layout kernels (dot_avx512.cpp), and no horizontal sums: lane i is row i's result.
//
// Every token count runs the same code: each token has its own accumulator, fed block by block in
// ascending order, with the same products, so a token's result does not depend on the batch it is in
// (tests/tensor/batch_invariance_test.cpp), as decode batching and draft verification need.
#include <immintrin.h>

#include <cstring>

#include "tensor/kernels.h"
#include "tensor/prefetch.h"
#include "tensor/quant.h"
#include "tensor/tile_groups.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace flint::detail {
namespace {

static_assert(kR16Rows == 16, "one repacked row per 32-bit lane of a 512-bit register");

struct Q8R16 {
    using Block = BlockQ8_0R16;
    static constexpr int kOffset = 128;
    // The lanes' start, -128 * sum(a): stored so in the activation block.
    static __m512i init(const BlockQ8_0S& a) { return _mm512_set1_epi32(a.ofs); }
    static void load(const Block& b, __m512i (&w)[8]) {
        for (int k = 0; k < 8; ++k) w[k] = _mm512_loadu_si512(b.qs + 64 * k);
    }
};

struct Q4R16 {
    using Block = BlockQ4_0R16;
    static constexpr int kOffset = 8;
    // The lanes' start, -8 * sum(a) = (-128 * sum(a)) / 16, exactly (an arithmetic shift of a multiple of 16).
    static __m512i init(const BlockQ8_0S& a) { return _mm512_set1_epi32(a.ofs >> 4); }
    static void load(const Block& b, __m512i (&w)[8]) { load_nibbles(b.qs, w); }
    static void load_nibbles(const uint8_t* qs, __m512i (&w)[8]) {
        const __m512i m4 = _mm512_set1_epi8(0x0f);
        for (int k = 0; k < 4; ++k) {
            const __m512i v = _mm512_loadu_si512(qs + 64 * k);
            w[k] = _mm512_and_si512(v, m4);
            w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
    }
};

struct Q5R16 {
    using Block = BlockQ5_0R16;
    static constexpr int kOffset = 16;
    // The lanes' start, -16 * sum(a) = (-128 * sum(a)) / 8, exactly.
    static __m512i init(const BlockQ8_0S& a) { return _mm512_set1_epi32(a.ofs >> 3); }
    static void load(const Block& b, __m512i (&w)[8]) {
        Q4R16::load_nibbles(b.qs, w);
        add_fifth_bits(b.qh, w);
    }
    // 16 added to the bytes whose fifth bit is set (one 64-bit mask per register).
    static void add_fifth_bits(const uint8_t (&qh)[8][8], __m512i (&w)[8]) {
        const __m512i sixteen = _mm512_set1_epi8(0x10);
        for (int k = 0; k < 8; ++k) {
            uint64_t bits;
            std::memcpy(&bits, qh[k], 8);
            w[k] = _mm512_mask_add_epi8(w[k], _cvtu64_mask64(bits), w[k], sixteen);
        }
    }
};

// IQ4_NL: Q4_0_R16's nibbles index the level table (one VPSHUFB per register, the table in each 128-bit lane),
// stored + 128 so they are unsigned; the lanes start at -128 * sum(a), as Q8_0's.
struct IQ4NLR16 {
    using Block = BlockIQ4_NLR16;
    static __m512i init(const BlockQ8_0S& a) { return _mm512_set1_epi32(a.ofs); }
    static void load(const Block& b, __m512i (&w)[8]) { levels(b.qs, w); }
    // Q4_0_R16-style nibble bytes at qs to eight registers of levels + 128 (IQ4_XS_R16's sub-blocks too).
    static void levels(const uint8_t* qs, __m512i (&w)[8]) {
        const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
        const __m512i table = _mm512_broadcast_i32x4(_mm_xor_si128(values, _mm_set1_epi8(int8_t(0x80))));
        Q4R16::load_nibbles(qs, w);
        for (int k = 0; k < 8; ++k) w[k] = _mm512_shuffle_epi8(table, w[k]);
    }
};

// Q4_1 / Q5_1: the levels as stored (0..15, 0..31: no offset), and a minimum per row and block, x = d * q + m,
// which meets the activation block's sum (-ofs / 128, exactly) in one more FMA per token (group_rt).
struct Q41R16 {
    using Block = BlockQ4_1R16;
    static __m512i init(const BlockQ8_0S&) { return _mm512_setzero_si512(); }
    static void load(const Block& b, __m512i (&w)[8]) { Q4R16::load_nibbles(b.qs, w); }
};
struct Q51R16 {
    using Block = BlockQ5_1R16;
    static __m512i init(const BlockQ8_0S&) { return _mm512_setzero_si512(); }
    static void load(const Block& b, __m512i (&w)[8]) {
        Q4R16::load_nibbles(b.qs, w);
        Q5R16::add_fifth_bits(b.qh, w);
    }
};
template <typename W>
constexpr bool kHasMin = requires(const typename W::Block& b) { b.m; };

// acc + w . (activation quad k broadcast), the quad read by the instruction itself (EVEX embedded broadcast:
// one fused load, where GCC emits a separate VPBROADCASTD for the intrinsic).
inline __m512i dpbusd_quad(__m512i acc, __m512i w, const int8_t* qs, int k) {
    asm("vpdpbusd %[a]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [a] "m"(*reinterpret_cast<const int32_t*>(qs + 4 * k)));
    return acc;
}

// Software prefetch of the weight stream (tensor/prefetch.h). From two tokens a pass always. For one token
// it depends on the core, so there are two tables (set_r16_decode_prefetch; matmul.cpp picks one by CPU,
// isa.h DecodePrefetch). On Zen 4 one token streams fastest on the hardware prefetcher alone (whole 0.5B
// Q8_0 step 17.7 -> 16.1 ms without a near-only prefetch; 1.5B Q4_K decode 28-39 -> 32-52 tok/s, IQ4_XS
// 33-39 -> 40-51 without the two-distance one, BENCHMARKS.md, Thirty-seventh session). On Intel (Emerald
// Rapids, KVM) it is what lets one core keep enough misses in flight: 0.5B decode, binaries alternated in one
// run, Q4_0 46-73 -> 76-97 tok/s (70-84% -> 90-96% of the read probe), Q8_0 47-53 -> 50-55 (Twenty-sixth
// session). On Zen 5 a 1.5B Q4_K decode went from 57-69% of the probe to 86-91% with it (Q5_K 58-59% to
// 84-86%; Twentieth session) and Q4_0's was no better with it (Twenty-second).
// The 32-element kernels, Q4_K / Q5_K's and IQ4_XS's take the choice. Not the Q6_K kernel (nor Q3_K's and
// Q2_K's, the same code): it does more work per byte, and at 17 tokens (three passes, the later ones partly
// from L3) the requests cost more than they saved (kernels_bench Cpu1TLayouts: 5.3-5.4 -> 5.8-5.9 ms; 1.1-1.4x
// better at 4-8).
template <int T, bool OneToken>
constexpr bool kPrefetchPass = T >= 2 || OneToken;

// One group of sixteen rows against T tokens: y[t * ldy + i] for row i.
template <typename W, int T, bool PfOne>
void group_rt(int64_t nb, const typename W::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    using B = typename W::Block;
    const BlockQ8_0S* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_0S*>(a + size_t(t) * as);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        if constexpr (kPrefetchPass<T, PfOne>) prefetch_stream(wb + b, sizeof(B));
        __m512i w[8];
        W::load(wb[b], w);
        const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].d)));
        [[maybe_unused]] __m512 m;
        if constexpr (kHasMin<W>) m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].m)));
        // Unrolled, so the accumulators stay in registers (GCC keeps them in memory from 12 tokens otherwise).
#pragma GCC unroll 32
        for (int t = 0; t < T; ++t) {
            const BlockQ8_0S& ab = at[t][b];
            __m512i isum;
            if constexpr (T < 4) {
                // Few tokens: two chains of four, so consecutive VPDPBUSD do not wait on each other.
                __m512i i0 = W::init(ab), i1 = _mm512_setzero_si512();
                for (int k = 0; k < 8; k += 2) {
                    i0 = dpbusd_quad(i0, w[k], ab.qs, k);
                    i1 = dpbusd_quad(i1, w[k + 1], ab.qs, k + 1);
                }
                isum = _mm512_add_epi32(i0, i1);
            } else {
                isum = W::init(ab);
                for (int k = 0; k < 8; ++k) isum = dpbusd_quad(isum, w[k], ab.qs, k);
            }
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(ab.d)), acc[t]);
            if constexpr (kHasMin<W>) acc[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(ab.d * float(-(ab.ofs >> 7))), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// One token against a Q4_0_R16 tile (decode). The high nibbles are not shifted down: v & 0xF0 is 16 x the
// level, so their four VPDPBUSD sum 16 x their dot, exactly (|sum| < 16 x 240 x 128, far inside int32), and
// one arithmetic shift of that sum replaces group_rt's four per block.
// Two blocks a step, their four dependency chains interleaved: one block's two chains of four VPDPBUSD left
// the core waiting on latency; each register of weights is loaded once, not once per mask (GCC folds the
// load into both VPANDDs otherwise). The blocks still reach the accumulator one after the other, in order.
// Zen 5, one thread, a cache-resident 1024x896 matrix: 58-60 -> 82-84 GB/s; in a DRAM-bound decode the gain
// is small: a 0.5B Q4_0 decode step 1.4-2.1% shorter, the two kernels switched repetition by repetition in one
// process (53 of 80 pairs faster; BENCHMARKS.md, Twenty-second session, which also says why it was reverted
// once in the twenty-first).
// PfOne: the weight stream prefetched two blocks at a time (where the CPU wants it, see kPrefetchPass).
// The same int32 dots and the same FMA order as group_rt's, so the same logits in any batch.
struct Q4Dots {
    __m512i lo, hi;
};
inline Q4Dots q4_block_start(const BlockQ8_0S& a) { return {Q4R16::init(a), _mm512_setzero_si512()}; }
inline void q4_block_quad(Q4Dots& d, __m512i v, const BlockQ8_0S& a, int k) {
    d.lo = dpbusd_quad(d.lo, _mm512_and_si512(v, _mm512_set1_epi8(0x0f)), a.qs, k);
    d.hi = dpbusd_quad(d.hi, _mm512_and_si512(v, _mm512_set1_epi8(int8_t(0xf0))), a.qs, k + 4);
}
inline __m512 q4_block_finish(const Q4Dots& d, const BlockQ4_0R16& w, const BlockQ8_0S& a, __m512 acc) {
    const __m512i isum = _mm512_add_epi32(d.lo, _mm512_srai_epi32(d.hi, 4));
    const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.d)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(s, _mm512_set1_ps(a.d)), acc);
}

template <bool PfOne>
void decode_tile_q4r16(int64_t nb, const uint8_t* w, size_t gs, int ng, const uint8_t* a, float* y) {
    const auto* at = reinterpret_cast<const BlockQ8_0S*>(a);
    for (int g = 0; g < ng; ++g) {
        const auto* wb = reinterpret_cast<const BlockQ4_0R16*>(w + size_t(g) * gs);
        __m512 acc = _mm512_setzero_ps();
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            if constexpr (PfOne) prefetch_stream(wb + b, 2 * sizeof(BlockQ4_0R16));
            Q4Dots d0 = q4_block_start(at[b]), d1 = q4_block_start(at[b + 1]);
            for (int k = 0; k < 4; ++k) {
                __m512i v0 = _mm512_loadu_si512(wb[b].qs + 64 * k), v1 = _mm512_loadu_si512(wb[b + 1].qs + 64 * k);
                asm("" : "+v"(v0), "+v"(v1));  // in registers: one load each
                q4_block_quad(d0, v0, at[b], k);
                q4_block_quad(d1, v1, at[b + 1], k);
            }
            acc = q4_block_finish(d0, wb[b], at[b], acc);
            acc = q4_block_finish(d1, wb[b + 1], at[b + 1], acc);
        }
        if (b < nb) {
            Q4Dots d = q4_block_start(at[b]);
            for (int k = 0; k < 4; ++k) q4_block_quad(d, _mm512_loadu_si512(wb[b].qs + 64 * k), at[b], k);
            acc = q4_block_finish(d, wb[b], at[b], acc);
        }
        _mm512_storeu_ps(y + kR16Rows * g, acc);
    }
}

// Accumulators per pass: T + 8 weight registers + the scales and temporaries fit the 32 zmm registers up to
// 20 tokens (no stack traffic in the loop, checked in the disassembly), so a block of 16 drafts and the
// model's token (17) is one pass over the weights: whole 0.5B Q8_0 step 41.8 -> 31.5 ms against 16 at most.
constexpr int kMaxTokens = 20;

// ---- Q4_K and Q5_K, sixteen rows ---------------------------------------------------------------------
// Per 32-element sub-block j: Q4_0_R16's eight VPDPBUSD give the sixteen rows' integer dots (levels 0..15,
// Q5_K's 0..31 with Q5_0_R16's fifth-bit masks, no offset), VPMULLD applies the rows' 6-bit scales (picked
// out of the packed scale words with one VPSHUFB), and the sub-blocks add up exactly in int32, as the
// file's scalar reference does; the mins meet the activation's 32-element sums in four VPDPWSSD. One
// convert and two FMAs per token and super-block.
constexpr int kMaxTokensK = 8;

// Sub-block j's levels, one register per 4-element quad.
struct Q4KR16 {
    using Block = BlockQ4_KR16;
    static void load(const Block& B, int j, __m512i (&w)[8]) { Q4R16::load_nibbles(B.qs[j], w); }
};
struct Q5KR16 {
    using Block = BlockQ5_KR16;
    static void load(const Block& B, int j, __m512i (&w)[8]) {
        Q4R16::load_nibbles(B.s[j].nib, w);
        Q5R16::add_fifth_bits(B.s[j].qh, w);
    }
};

// VPSHUFB controls (indices count bytes within each 128-bit lane, so 32-bit lane d starts at byte 4 (d % 4)):
// byte b of each 32-bit lane to its byte 0, zeros above (a scale as an int32) ...
inline __m512i pick_byte(int b) {
    const __m512i base = _mm512_set1_epi32(int(0x80808000u | uint32_t(b)));
    return _mm512_add_epi32(base, _mm512_set4_epi32(12, 8, 4, 0));
}
// ... or bytes b, b+1 to its two 16-bit halves (two mins as an int16 pair).
inline __m512i pick_pair(int b) {
    const __m512i base = _mm512_set1_epi32(int(0x80008000u | uint32_t(b) | (uint32_t(b + 1) << 16)));
    return _mm512_add_epi32(base, _mm512_set4_epi32(0x000c000c, 0x00080008, 0x00040004, 0));
}

// Sub-block j of super-block b, levels w, against T tokens' activations: qsum[t] += scj * (the rows' dots), two
// chains of four VPDPBUSD per token.
template <int T>
inline void sub_block_dots(__m512i (&qsum)[T], const __m512i (&w)[8], const BlockQ8_K* const (&at)[T], int64_t b, int j,
                           __m512i scj) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
        const int8_t* aq = at[t][b].qs + 32 * j;
        __m512i i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();
        for (int k = 0; k < 8; k += 2) {
            i0 = dpbusd_quad(i0, w[k], aq, k);
            i1 = dpbusd_quad(i1, w[k + 1], aq, k + 1);
        }
        qsum[t] = _mm512_add_epi32(qsum[t], _mm512_mullo_epi32(_mm512_add_epi32(i0, i1), scj));
    }
}

// The activation's sums over 32-element sub-blocks 2q and 2q + 1 (from Q8_K's 16-element bsums), as the int16
// pair a VPDPWSSD against the rows' (min or scale) pairs takes.
inline int sub_block_sums(const BlockQ8_K& a, int q) {
    const int s0 = a.bsums[4 * q] + a.bsums[4 * q + 1], s1 = a.bsums[4 * q + 2] + a.bsums[4 * q + 3];
    return int(uint32_t(uint16_t(int16_t(s0))) | (uint32_t(uint16_t(int16_t(s1))) << 16));
}

template <typename L, int T, bool PfOne>
void group_q45k(int64_t nb, const typename L::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_K* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * as);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    const __m512i lo6 = _mm512_set1_epi32(0x3f3f3f3f), lo4 = _mm512_set1_epi32(0x0f0f0f0f), lo2 = _mm512_set1_epi32(0x03030303);
    for (int64_t b = 0; b < nb; ++b) {
        const typename L::Block& B = wb[b];
        if constexpr (kPrefetchPass<T, PfOne>) prefetch_stream(&B, sizeof(B));
        // The eight scales and mins of every row (lane), four per 32-bit word, as k4_scales_mins unpacks them.
        const __m512i w0 = _mm512_loadu_si512(B.sc[0]), w1 = _mm512_loadu_si512(B.sc[1]), w2 = _mm512_loadu_si512(B.sc[2]);
        const __m512i s03 = _mm512_and_si512(w0, lo6), m03 = _mm512_and_si512(w1, lo6);
        const __m512i s47 = _mm512_or_si512(_mm512_and_si512(w2, lo4),
                                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w0, 6), lo2), 4));
        const __m512i m47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), lo4),
                                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w1, 6), lo2), 4));
        __m512i qsum[T];
        for (int t = 0; t < T; ++t) qsum[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            __m512i w[8];
            L::load(B, j, w);
            const __m512i scj = _mm512_shuffle_epi8(j < 4 ? s03 : s47, pick_byte(j % 4));
            sub_block_dots<T>(qsum, w, at, b, j, scj);
        }
        const __m512i mp[4] = {_mm512_shuffle_epi8(m03, pick_pair(0)), _mm512_shuffle_epi8(m03, pick_pair(2)),
                               _mm512_shuffle_epi8(m47, pick_pair(0)), _mm512_shuffle_epi8(m47, pick_pair(2))};
        const __m512 dr = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.d)));
        const __m512 dmr = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.dmin)));
        for (int t = 0; t < T; ++t) {
            const BlockQ8_K& ab = at[t][b];
            __m512i msum = _mm512_setzero_si512();
            for (int q = 0; q < 4; ++q) {  // sub-blocks 2q and 2q+1: their activation sums as an int16 pair
                msum = _mm512_dpwssd_epi32(msum, mp[q], _mm512_set1_epi32(sub_block_sums(ab, q)));
            }
            const __m512 v = _mm512_fnmadd_ps(dmr, _mm512_cvtepi32_ps(msum), _mm512_mul_ps(dr, _mm512_cvtepi32_ps(qsum[t])));
            acc[t] = _mm512_fmadd_ps(v, _mm512_set1_ps(ab.d), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// ---- IQ4_XS, sixteen rows ----------------------------------------------------------------------------
// Per 32-element sub-block j: IQ4_NL_R16's nibbles looked up in its table (levels + 128, unsigned) and eight
// VPDPBUSD give the sixteen rows' dots, VPMULLD applies the rows' scales less 32 and the sub-blocks add up in
// int32; the +128 comes off once per super-block, 128 * sum_j (s_j - 32) * (the activation's 32-element sum),
// through four VPDPWSSD, as Q4_K's mins. Exact: |sum| < 8 * 32 * 32 * 241 * 127 < 2^31. One convert and one
// FMA per token and super-block.
template <int T, bool PfOne>
void group_iq4xs(int64_t nb, const BlockIQ4_XSR16* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_K* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * as);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    const __m512i lo6 = _mm512_set1_epi8(0x3f), lo4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i s32 = _mm512_set1_epi32(32);
    for (int64_t b = 0; b < nb; ++b) {
        const BlockIQ4_XSR16& B = wb[b];
        if constexpr (kPrefetchPass<T, PfOne>) prefetch_stream(&B, sizeof(B));
        // The eight scales of every row, four bytes a lane: sa's low six bits (scales 0..3), and sb's nibbles
        // spread one to a byte (each 16-bit word x of its two nibbles: (x | x << 4) & 0x0f0f) with sa's top
        // two bits above them (scales 4..7).
        const __m512i sa = _mm512_loadu_si512(B.sa);
        const __m512i sbw = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.sb)));
        const __m512i s03 = _mm512_and_si512(sa, lo6);
        const __m512i s47 = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_or_si512(sbw, _mm512_slli_epi16(sbw, 4)), lo4),
                                                      _mm512_srli_epi32(sa, 2), m30, 0xF8);
        __m512i qsum[T];
        for (int t = 0; t < T; ++t) qsum[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            __m512i w[8];
            IQ4NLR16::levels(B.qs[j], w);
            const __m512i scj = _mm512_sub_epi32(_mm512_shuffle_epi8(j < 4 ? s03 : s47, pick_byte(j % 4)), s32);
            sub_block_dots<T>(qsum, w, at, b, j, scj);
        }
        // Sub-blocks 2q, 2q + 1: their scales less 32 as an int16 pair.
        const __m512i mp[4] = {_mm512_sub_epi16(_mm512_shuffle_epi8(s03, pick_pair(0)), _mm512_set1_epi16(32)),
                               _mm512_sub_epi16(_mm512_shuffle_epi8(s03, pick_pair(2)), _mm512_set1_epi16(32)),
                               _mm512_sub_epi16(_mm512_shuffle_epi8(s47, pick_pair(0)), _mm512_set1_epi16(32)),
                               _mm512_sub_epi16(_mm512_shuffle_epi8(s47, pick_pair(2)), _mm512_set1_epi16(32))};
        const __m512 dr = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.d)));
        for (int t = 0; t < T; ++t) {
            const BlockQ8_K& ab = at[t][b];
            __m512i msum = _mm512_setzero_si512();
            for (int q = 0; q < 4; ++q) {
                msum = _mm512_dpwssd_epi32(msum, mp[q], _mm512_set1_epi32(sub_block_sums(ab, q)));
            }
            const __m512i isum = _mm512_sub_epi32(qsum[t], _mm512_slli_epi32(msum, 7));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dr, _mm512_set1_ps(ab.d)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// ---- Q6_K and Q3_K, sixteen rows ------------------------------------------------------------------------
// Per pair of 16-element sub-blocks: the levels rebuilt into eight registers of quads (Q6_K: 0..63 from
// Q4_0_R16-style nibbles and a register of top bits per four quads, one shift and one VPTERNLOGD each; Q3_K:
// 0..7 from a register of two-bit fields per four quads and a high-bit mask per quad); four VPDPBUSD per
// sub-block give the rows' dots, VPMULLD applies the rows' scales, and the offset (-32, -4) enters as
// -offset * scale * (the activation's 16-element sums) through one VPDPWSSD per pair. All in int32, as the
// file's scalar code sums.

// Q6_K: the rows' int8 scales of the pair stored side by side, an int16 pair per lane.
struct Q6KPairs {
    using Block = BlockQ6_KR16;
    static constexpr int kOffset = 32;
    struct Scales {};
    static Scales scales(const Block&) { return {}; }
    static void levels(const Block& B, int P, __m512i (&w)[8]) {
        const __m512i m30 = _mm512_set1_epi8(0x30);
        Q4R16::load_nibbles(B.p[P].nib, w);
        for (int g = 0; g < 2; ++g) {
            const __m512i h = _mm512_loadu_si512(B.p[P].hi[g]);
            // Bits 2(k % 4), 2(k % 4) + 1 of each byte to bits 4, 5, OR-ed into the nibble: a | (b & c).
            w[4 * g + 0] = _mm512_ternarylogic_epi32(w[4 * g + 0], _mm512_slli_epi16(h, 4), m30, 0xF8);
            w[4 * g + 1] = _mm512_ternarylogic_epi32(w[4 * g + 1], _mm512_slli_epi16(h, 2), m30, 0xF8);
            w[4 * g + 2] = _mm512_ternarylogic_epi32(w[4 * g + 2], h, m30, 0xF8);
            w[4 * g + 3] = _mm512_ternarylogic_epi32(w[4 * g + 3], _mm512_srli_epi16(h, 2), m30, 0xF8);
        }
    }
    // Lane i: (scale 2P, scale 2P+1) of row i as an int16 pair.
    static __m512i pair(const Block& B, const Scales&, int P) {
        return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.p[P].sc)));
    }
};

// Q3_K_R16's / Q2_K_R16's two-bit fields of a pair into eight registers of quads (levels 0..3).
inline void two_bit_levels(const uint8_t (&lo)[2][64], __m512i (&w)[8]) {
    const __m512i m3 = _mm512_set1_epi8(0x03);
    for (int g = 0; g < 2; ++g) {
        const __m512i v = _mm512_loadu_si512(lo[g]);
        w[4 * g + 0] = _mm512_and_si512(v, m3);
        w[4 * g + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 2), m3);
        w[4 * g + 2] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m3);
        w[4 * g + 3] = _mm512_and_si512(_mm512_srli_epi16(v, 6), m3);
    }
}

// Q3_K: the sixteen 6-bit scales of each row unpacked once per super-block from its three scale words into
// four words of four bytes (scales 4j .. 4j + 3 in word j, as the file's scalar code reads them), less 32 per
// pair.
struct Q3KPairs {
    using Block = BlockQ3_KR16;
    static constexpr int kOffset = 4;
    struct Scales {
        __m512i aux[4];
    };
    static Scales scales(const Block& B) {
        const __m512i w0 = _mm512_loadu_si512(B.sc[0]), w1 = _mm512_loadu_si512(B.sc[1]), w2 = _mm512_loadu_si512(B.sc[2]);
        const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(0x03);
        auto top = [&](int shift) { return _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w2, shift), m2), 4); };
        Scales s;
        s.aux[0] = _mm512_or_si512(_mm512_and_si512(w0, m4), top(0));
        s.aux[1] = _mm512_or_si512(_mm512_and_si512(w1, m4), top(2));
        s.aux[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w0, 4), m4), top(4));
        s.aux[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w1, 4), m4), top(6));
        return s;
    }
    static void levels(const Block& B, int P, __m512i (&w)[8]) {
        const __m512i four = _mm512_set1_epi8(0x04);
        two_bit_levels(B.p[P].lo, w);
        for (int k = 0; k < 8; ++k) {
            uint64_t bits;
            std::memcpy(&bits, B.p[P].hb[k], 8);
            w[k] = _mm512_mask_add_epi8(w[k], _cvtu64_mask64(bits), w[k], four);
        }
    }
    // Lane i: (scale 2P - 32, scale 2P+1 - 32) of row i as an int16 pair: bytes 2 (P % 2), 2 (P % 2) + 1 of
    // word P / 2, each zero-extended to 16 bits by one VPSHUFB.
    static __m512i pair(const Block&, const Scales& s, int P) {
        return _mm512_sub_epi16(_mm512_shuffle_epi8(s.aux[P / 2], pick(P % 2)), _mm512_set1_epi16(32));
    }
    // Within each 32-bit lane (at byte 4l of its 128-bit lane): bytes o, o + 1 (o = 2 half), each with a zero
    // byte above.
    static __m512i pick(int half) {
        const uint32_t o = 2 * uint32_t(half);
        auto lane = [o](uint32_t l) { return int(0x80u << 24 | (4 * l + o + 1) << 16 | 0x80u << 8 | (4 * l + o)); };
        const __m128i q = _mm_set_epi32(lane(3), lane(2), lane(1), lane(0));
        return _mm512_broadcast_i32x4(q);
    }
};

// Q2_K: levels 0..3 with no offset; per pair the rows' scale bytes, scale in the low nibble and min in the high
// one, the mins meeting the activation's 16-element sums once per super-block (mins below), times dmin.
struct Q2KPairs {
    using Block = BlockQ2_KR16;
    static constexpr int kOffset = 0;
    struct Scales {};
    static Scales scales(const Block&) { return {}; }
    static void levels(const Block& B, int P, __m512i (&w)[8]) { two_bit_levels(B.p[P].lo, w); }
    static __m512i bytes(const Block& B, int P) {
        return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.p[P].sc)));
    }
    static __m512i pair(const Block& B, const Scales&, int P) { return _mm512_and_si512(bytes(B, P), _mm512_set1_epi16(0x0f)); }
    static __m512i min_pair(const Block& B, int P) { return _mm512_srli_epi16(bytes(B, P), 4); }
};
template <typename U>
constexpr bool kHasMins = requires(const typename U::Block& b) { b.dmin; };

template <typename U, int T>
void group_k16_pairs(int64_t nb, const typename U::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_K* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * as);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const typename U::Block& B = wb[b];
        const typename U::Scales sc = U::scales(B);
        __m512i qsum[T];
        for (int t = 0; t < T; ++t) qsum[t] = _mm512_setzero_si512();
        for (int P = 0; P < 8; ++P) {
            __m512i w[8];
            U::levels(B, P, w);
            // Lane i: the rows' two scales as an int16 pair; each as an int32; -offset * the pair.
            const __m512i pair = U::pair(B, sc, P);
            const __m512i s0 = _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16), s1 = _mm512_srai_epi32(pair, 16);
            [[maybe_unused]] const __m512i neg =
                _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_mullo_epi16(pair, _mm512_set1_epi16(U::kOffset)));
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& ab = at[t][b];
                const int8_t* aq = ab.qs + 32 * P;
                __m512i i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();
                for (int k = 0; k < 4; ++k) {
                    i0 = dpbusd_quad(i0, w[k], aq, k);
                    i1 = dpbusd_quad(i1, w[k + 4], aq, k + 4);
                }
                __m512i q = qsum[t];
                if constexpr (U::kOffset != 0) {
                    int32_t sums;  // the activation's sums over the two sub-blocks, an int16 pair
                    std::memcpy(&sums, ab.bsums + 2 * P, 4);
                    q = _mm512_dpwssd_epi32(q, neg, _mm512_set1_epi32(sums));
                }
                q = _mm512_add_epi32(q, _mm512_mullo_epi32(i0, s0));
                qsum[t] = _mm512_add_epi32(q, _mm512_mullo_epi32(i1, s1));
            }
        }
        const __m512 dr = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.d)));
        if constexpr (kHasMins<U>) {
            // The mins' part, sum over sub-blocks of min * (the activation's 16-element sum), per token.
            const __m512 dmr = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.dmin)));
            for (int t = 0; t < T; ++t) {
                __m512i msum = _mm512_setzero_si512();
                for (int P = 0; P < 8; ++P) {
                    int32_t sums;
                    std::memcpy(&sums, at[t][b].bsums + 2 * P, 4);
                    msum = _mm512_dpwssd_epi32(msum, U::min_pair(B, P), _mm512_set1_epi32(sums));
                }
                const __m512 v = _mm512_fnmadd_ps(dmr, _mm512_cvtepi32_ps(msum), _mm512_mul_ps(dr, _mm512_cvtepi32_ps(qsum[t])));
                acc[t] = _mm512_fmadd_ps(v, _mm512_set1_ps(at[t][b].d), acc[t]);
            }
        } else {
            for (int t = 0; t < T; ++t)
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(qsum[t]), _mm512_mul_ps(dr, _mm512_set1_ps(at[t][b].d)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// The 32-element layouts' group kernel, and the K-quants', as tile_groups wants them.
template <typename W, bool PfOne>
struct R16 {
    template <int T>
    struct K {
        static constexpr auto run = group_rt<W, T, PfOne>;
    };
};

template <typename L, bool PfOne>
struct Q45K {
    template <int T>
    struct K {
        static constexpr auto run = group_q45k<L, T, PfOne>;
    };
};
template <bool PfOne>
struct IQ4XS {
    template <int T>
    struct K {
        static constexpr auto run = group_iq4xs<T, PfOne>;
    };
};
template <typename U>
struct K16Pairs {
    template <int T>
    struct K {
        static constexpr auto run = group_k16_pairs<U, T>;
    };
};

constexpr int id(DType t) { return static_cast<int>(t); }

// The kernels that take the one-token prefetch choice (kPrefetchPass): the 32-element layouts', Q4_K / Q5_K's
// and IQ4_XS's.
template <bool PfOne>
void fill_r16_32(KernelSet& k) {
    k.tile[id(DType::Q8_0_R16)] = tile_groups<kR16Rows, BlockQ8_0R16, R16<Q8R16, PfOne>::template K, kMaxTokens, QK>;
    k.tile[id(DType::Q4_0_R16)] =
        tile_groups<kR16Rows, BlockQ4_0R16, R16<Q4R16, PfOne>::template K, kMaxTokens, QK, decode_tile_q4r16<PfOne>>;
    k.tile[id(DType::Q5_0_R16)] = tile_groups<kR16Rows, BlockQ5_0R16, R16<Q5R16, PfOne>::template K, kMaxTokens, QK>;
    k.tile[id(DType::IQ4_NL_R16)] = tile_groups<kR16Rows, BlockIQ4_NLR16, R16<IQ4NLR16, PfOne>::template K, kMaxTokens, QK>;
    k.tile[id(DType::Q4_1_R16)] = tile_groups<kR16Rows, BlockQ4_1R16, R16<Q41R16, PfOne>::template K, kMaxTokens, QK>;
    k.tile[id(DType::Q5_1_R16)] = tile_groups<kR16Rows, BlockQ5_1R16, R16<Q51R16, PfOne>::template K, kMaxTokens, QK>;
    k.tile[id(DType::Q4_K_R16)] = tile_groups<kR16Rows, BlockQ4_KR16, Q45K<Q4KR16, PfOne>::template K, kMaxTokensK, QK_K>;
    k.tile[id(DType::Q5_K_R16)] = tile_groups<kR16Rows, BlockQ5_KR16, Q45K<Q5KR16, PfOne>::template K, kMaxTokensK, QK_K>;
    k.tile[id(DType::IQ4_XS_R16)] = tile_groups<kR16Rows, BlockIQ4_XSR16, IQ4XS<PfOne>::template K, kMaxTokensK, QK_K>;
}

}  // namespace

void set_r16_decode_prefetch(KernelSet& k, bool on) {
    if (on)
        fill_r16_32<true>(k);
    else
        fill_r16_32<false>(k);
}

void fill_avx512_r16(KernelSet& k) {
    set_r16_decode_prefetch(k, false);
    k.tile[id(DType::Q6_K_R16)] = tile_groups<kR16Rows, BlockQ6_KR16, K16Pairs<Q6KPairs>::K, kMaxTokensK, QK_K>;
    k.tile[id(DType::Q3_K_R16)] = tile_groups<kR16Rows, BlockQ3_KR16, K16Pairs<Q3KPairs>::K, kMaxTokensK, QK_K>;
    k.tile[id(DType::Q2_K_R16)] = tile_groups<kR16Rows, BlockQ2_KR16, K16Pairs<Q2KPairs>::K, kMaxTokensK, QK_K>;
    for (DType t : {DType::Q8_0_R16, DType::Q4_0_R16, DType::Q5_0_R16, DType::Q4_K_R16, DType::Q5_K_R16, DType::Q6_K_R16,
                    DType::IQ4_NL_R16, DType::Q4_1_R16, DType::Q5_1_R16, DType::Q3_K_R16, DType::Q2_K_R16, DType::IQ4_XS_R16})
        k.stream_tokens[id(t)] = 255;  // every token count: tiles of one group (kDecodeRows = 16 rows)
    k.repack[id(DType::Q8_0)] = DType::Q8_0_R16;
    k.repack[id(DType::Q4_0)] = DType::Q4_0_R16;
    k.repack[id(DType::Q5_0)] = DType::Q5_0_R16;
    k.repack[id(DType::Q4_K)] = DType::Q4_K_R16;
    k.repack[id(DType::Q5_K)] = DType::Q5_K_R16;
    k.repack[id(DType::Q6_K)] = DType::Q6_K_R16;
    k.repack[id(DType::IQ4_NL)] = DType::IQ4_NL_R16;
    k.repack[id(DType::Q4_1)] = DType::Q4_1_R16;
    k.repack[id(DType::Q5_1)] = DType::Q5_1_R16;
    k.repack[id(DType::Q3_K)] = DType::Q3_K_R16;
    k.repack[id(DType::Q2_K)] = DType::Q2_K_R16;
    k.repack[id(DType::IQ4_XS)] = DType::IQ4_XS_R16;
}

}  // namespace flint::detail
