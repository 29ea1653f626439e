// flint/tensor/dot_avx2.cpp — AVX2 + FMA (+F16C) matmul tiles and activation quantizers.
//
// Integer formats: per 32-element block the weights become 32 signed bytes, the activations are
// Q8_0 bytes, and the block dot is _mm256_maddubs_epi16(|w|, sign(a, w)) -> pairs of int16 ->
// _mm256_madd_epi16 with ones -> 8 int32 lanes, scaled by d_w*d_a into 8 f32 accumulator lanes.
// (maddubs wants one unsigned operand; moving the weight's sign onto the activation keeps the products
// exact: |w| <= 127 and |a| <= 127, so a pair sum never saturates int16.)
//
// A tile is R weight rows x T tokens held in R*T accumulators: each weight block is loaded and
// unpacked once per T tokens, each activation block once per R rows.
//
// K-quants: each super-block of R rows is first unpacked into a small L1 buffer (unsigned levels,
// int16 sub-block scales and mins) and then dotted against each token's Q8_K block; the mins are
// applied through Q8_K's per-16 sums (bsums), so the offset costs one madd per super-block.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tensor/hsum_avx2.h"
#include "tensor/k_scales_sse.h"
#include "tensor/kernels.h"
#include "tensor/prefetch.h"
#include "tensor/quant_internal.h"
#include "tensor/tile_groups.h"

namespace flint::detail {
namespace {

float half(uint16_t h) { return _cvtsh_ss(h); }

template <typename B>
const B* row_ptr(const void* base, size_t stride, int r) {
    return reinterpret_cast<const B*>(static_cast<const uint8_t*>(base) + size_t(r) * stride);
}

// ---- 32-element formats: one block of weights as 32 signed bytes -----------------------------------

struct Q8_0W {
    using Block = BlockQ8_0;
    static __m256i load(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
};

// A 32-element block's nibbles as bytes: low nibbles are elements 0..15, high nibbles 16..31.
inline __m256i block_nibbles(const uint8_t* qs) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0f));
}

// Q5_0 / Q5_1's 32 fifth bits spread to bytes (0xFF where set): byte i <- byte i/8 of qh, then test bit i%8.
inline __m256i fifth_bits(const uint8_t* qh) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(q5_high_bits(qh))),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

struct Q4_0W {
    using Block = BlockQ4_0;
    static __m256i load(const Block& b) { return _mm256_sub_epi8(block_nibbles(b.qs), _mm256_set1_epi8(8)); }
};

// IQ4_NL: the nibbles index the 16-entry table, one VPSHUFB; signed levels as Q8_0's (|level| <= 127).
struct IQ4_NLW {
    using Block = BlockIQ4_NL;
    static __m256i load(const Block& b) {
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
        return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), block_nibbles(b.qs));
    }
};

struct Q5_0W {
    using Block = BlockQ5_0;
    static __m256i load(const Block& b) {
        // value = nibble + 16*bit - 16: where the bit is clear, OR in 0xF0 (= nibble - 16 as int8).
        return _mm256_or_si256(block_nibbles(b.qs), _mm256_andnot_si256(fifth_bits(b.qh), _mm256_set1_epi8(int8_t(0xf0))));
    }
};

// Q4_1 / Q5_1: unsigned levels (0..15 / 0..31) and a minimum, x = d*q + m. VPMADDUBSW takes the levels as its
// unsigned operand directly; the minimum meets the activation block's sum, m * d_a * sum(a), kept spread over
// the same 8 lanes (one sum per token and block, shared by the R rows).
struct Q4_1W {
    using Block = BlockQ4_1;
    static __m256i load(const Block& b) { return block_nibbles(b.qs); }
};

struct Q5_1W {
    using Block = BlockQ5_1;
    static __m256i load(const Block& b) {
        return _mm256_or_si256(block_nibbles(b.qs), _mm256_and_si256(fifth_bits(b.qh), _mm256_set1_epi8(0x10)));
    }
};

template <typename W>
constexpr bool kHasMin = std::is_same_v<W, Q4_1W> || std::is_same_v<W, Q5_1W>;

// R rows x T tokens, every block: y[t*ldy + r] = sum_b d_w[r,b] d_a[t,b] <w[r,b], a[t,b]> (+ m_w[r,b] d_a[t,b]
// sum(a[t,b]) where the format has a minimum).
template <typename W, int R, int T>
void tile_q8_rt(int64_t nb, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ldy) {
    using B = typename W::Block;
    const B* wr[R];
    const BlockQ8_0* at[T];
    for (int r = 0; r < R; ++r) wr[r] = row_ptr<B>(w, ws, r);
    for (int t = 0; t < T; ++t) at[t] = row_ptr<BlockQ8_0>(a, as, t);
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
        __m256i wv[R], wabs[R];
        float dw[R], mw[R];
        for (int r = 0; r < R; ++r) {
            _mm_prefetch(reinterpret_cast<const char*>(wr[r] + b) + kPrefetchBytes, _MM_HINT_T0);
            wv[r] = W::load(wr[r][b]);
            dw[r] = half(wr[r][b].d);
            if constexpr (kHasMin<W>) mw[r] = half(wr[r][b].m);
            else wabs[r] = _mm256_sign_epi8(wv[r], wv[r]);
        }
        for (int t = 0; t < T; ++t) {
            const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at[t][b].qs));
            const float da = half(at[t][b].d);
            [[maybe_unused]] __m256 asum;
            if constexpr (kHasMin<W>)
                asum = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), av), ones));
            for (int r = 0; r < R; ++r) {
                const __m256i p16 = kHasMin<W> ? _mm256_maddubs_epi16(wv[r], av)
                                               : _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(av, wv[r]));
                const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
                acc[r][t] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw[r] * da), acc[r][t]);
                if constexpr (kHasMin<W>) acc[r][t] = _mm256_fmadd_ps(asum, _mm256_set1_ps(mw[r] * da), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum(acc[r][t]);
}

// Walks the tokens T at a time (remainder one at a time) for a tile of nr <= 4 rows. Decode (one token)
// streams the rows one after another; with kShortRows, rows of at most that many elements go four at a
// time instead (the same arithmetic per row, so the same bits either way). A short row is one short
// chain of dependent FMAs and a horizontal sum, which four rows overlap: stories260K (F32, 64 and 172
// wide) decodes 1.3x faster so (flint bench -t 1, 10.3k -> 13.7k tok/s, Zen 3); long rows stream from
// memory faster one at a time (0.5B F16 decode 17-18 -> 13-14 tok/s with four).
template <template <int, int> class Kernel, int T, int kShortRows = 0>
void walk_tokens(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y,
                 int64_t ldy) {
    auto call = [&](auto tt, const void* ap, float* yp) {
        constexpr int TT = decltype(tt)::value;
        switch (nr) {
            case 1: Kernel<1, TT>::run(n, w, ws, ap, as, yp, ldy); break;
            case 2: Kernel<2, TT>::run(n, w, ws, ap, as, yp, ldy); break;
            case 3: Kernel<3, TT>::run(n, w, ws, ap, as, yp, ldy); break;
            default: Kernel<4, TT>::run(n, w, ws, ap, as, yp, ldy); break;
        }
    };
    if (nt == 1) {  // decode: a tile of up to kDecodeRows rows
        int r = 0;
        if (n <= kShortRows)
            for (; r + 4 <= nr; r += 4) Kernel<4, 1>::run(n, static_cast<const uint8_t*>(w) + size_t(r) * ws, ws, a, as, y + r, ldy);
        for (; r < nr; ++r)
            Kernel<1, 1>::run(n, static_cast<const uint8_t*>(w) + size_t(r) * ws, ws, a, as, y + r, ldy);
        return;
    }
    int t = 0;
    for (; t + T <= nt; t += T)
        call(std::integral_constant<int, T>{}, static_cast<const uint8_t*>(a) + size_t(t) * as, y + t * ldy);
    for (; t < nt; ++t)
        call(std::integral_constant<int, 1>{}, static_cast<const uint8_t*>(a) + size_t(t) * as, y + t * ldy);
}

template <typename W>
struct Q8Kernel {
    template <int R, int T>
    struct K {
        static void run(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ldy) {
            tile_q8_rt<W, R, T>(n / QK, w, ws, a, as, y, ldy);
        }
    };
};

template <typename W>
void tile_q8(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y, int64_t ldy) {
    walk_tokens<Q8Kernel<W>::template K, 2>(cols, w, ws, nr, a, as, nt, y, ldy);
}

// ---- float weights (F32 / F16 / BF16) against f32 activations --------------------------------------

struct F32W {
    static constexpr int kBytes = 4;
    static __m256 load(const void* p, int64_t i) { return _mm256_loadu_ps(static_cast<const float*>(p) + i); }
    static float scalar(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
};
struct F16W {
    static constexpr int kBytes = 2;
    static __m256 load(const void* p, int64_t i) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
    }
    static float scalar(const void* p, int64_t i) { return half(static_cast<const uint16_t*>(p)[i]); }
};
struct BF16W {
    static constexpr int kBytes = 2;
    static __m256 load(const void* p, int64_t i) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    static float scalar(const void* p, int64_t i) { return bf16_to_fp32(static_cast<const uint16_t*>(p)[i]); }
};

template <typename W, int R, int T>
void tile_f_rt(int64_t cols, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ldy) {
    // Float weights may have any width (stories260K's FFN is 172 wide): 8 at a time, then a scalar tail.
    const int64_t cols8 = cols & ~int64_t(7);
    const void* wr[R];
    const float* at[T];
    for (int r = 0; r < R; ++r) wr[r] = static_cast<const uint8_t*>(w) + size_t(r) * ws;
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const float*>(static_cast<const uint8_t*>(a) + size_t(t) * as);
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < cols8; i += 8) {
        __m256 wv[R];
        if (i % 16 == 0)  // every 16 elements: once per 32 or 64 bytes
            for (int r = 0; r < R; ++r) _mm_prefetch(static_cast<const char*>(wr[r]) + i * W::kBytes + kPrefetchBytes, _MM_HINT_T0);
        for (int r = 0; r < R; ++r) wv[r] = W::load(wr[r], i);
        for (int t = 0; t < T; ++t) {
            const __m256 av = _mm256_loadu_ps(at[t] + i);
            for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], av, acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            float tail = 0;
            for (int64_t c = cols8; c < cols; ++c) tail += W::scalar(wr[r], c) * at[t][c];
            y[t * ldy + r] = hsum(acc[r][t]) + tail;
        }
}

template <typename W>
struct FKernel {
    template <int R, int T>
    struct K {
        static void run(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ldy) {
            tile_f_rt<W, R, T>(n, w, ws, a, as, y, ldy);
        }
    };
};

template <typename W>
void tile_f(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y, int64_t ldy) {
    walk_tokens<FKernel<W>::template K, 2, 256>(cols, w, ws, nr, a, as, nt, y, ldy);
}

// ---- K-quants ------------------------------------------------------------------------------------

// One K-quant super-block of one weight row, unpacked for integer dot products:
//   x[i] = d * sc[i/16] * q[i] - dmin * m[i/16]
struct alignas(32) KUnpacked {
    uint8_t q[QK_K];    // unsigned levels 0..63 (Q6_K stores level+32 and folds the -32 into m)
    int16_t sc[8][16];  // per 32-element chunk: 8 lanes of its first 16's scale, 8 of its second 16's
    int16_t m[16];      // per 16 elements
    float d, dmin;
};

void spread_nibbles(const uint8_t* qs, uint8_t* q) {
    // 32 bytes -> 64 levels: low nibbles first, then high nibbles (Q4_K/Q5_K chunk order).
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
    const __m256i mask = _mm256_set1_epi8(0x0f);
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), _mm256_and_si256(raw, mask));
    _mm256_store_si256(reinterpret_cast<__m256i*>(q + 32), _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask));
}

void set_k4_scales(const uint8_t* packed, KUnpacked& u) {
    alignas(8) uint8_t sc[8], m[8];
    k4_scales_mins(packed, sc, m);
    for (int j = 0; j < 8; ++j) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.sc[j]), _mm256_set1_epi16(sc[j]));
        u.m[2 * j] = u.m[2 * j + 1] = m[j];
    }
}

void unpack_q4_k_avx2(const BlockQ4_K& b, KUnpacked& u) {
    for (int c = 0; c < 4; ++c) spread_nibbles(b.qs + 32 * c, u.q + 64 * c);
    set_k4_scales(b.scales, u);
    u.d = half(b.d);
    u.dmin = half(b.dmin);
}

void unpack_q5_k_avx2(const BlockQ5_K& b, KUnpacked& u) {
    const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
    for (int c = 0; c < 4; ++c) {
        spread_nibbles(b.qs + 32 * c, u.q + 64 * c);
        for (int h = 0; h < 2; ++h) {  // sub-block j = 2c + h takes bit j of qh[l] as its fifth bit
            const __m256i bit = _mm256_set1_epi8(int8_t(1 << (2 * c + h)));
            const __m256i fifth = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bit), bit), _mm256_set1_epi8(16));
            __m256i* dst = reinterpret_cast<__m256i*>(u.q + 64 * c + 32 * h);
            _mm256_store_si256(dst, _mm256_or_si256(_mm256_load_si256(dst), fifth));
        }
    }
    set_k4_scales(b.scales, u);
    u.d = half(b.d);
    u.dmin = half(b.dmin);
}

void unpack_q6_k_avx2(const BlockQ6_K& b, KUnpacked& u) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
        __m256i* q = reinterpret_cast<__m256i*>(u.q + 128 * h);
        _mm256_store_si256(q + 0, _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2)));
        _mm256_store_si256(q + 1, _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2)));
        _mm256_store_si256(q + 2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m2)));
        _mm256_store_si256(q + 3, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                                  _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2)));
    }
    for (int c = 0; c < 8; ++c) {
        const int16_t s0 = b.scales[2 * c], s1 = b.scales[2 * c + 1];
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.sc[c]),
                           _mm256_set_m128i(_mm_set1_epi16(s1), _mm_set1_epi16(s0)));
        // Level q stands for q - 32: the offset is a "min" of 32*scale with multiplier d.
        u.m[2 * c] = int16_t(32 * s0);
        u.m[2 * c + 1] = int16_t(32 * s1);
    }
    u.d = u.dmin = half(b.d);
}

// Q2_K / Q3_K: per 128 elements, four 2-bit planes of the same 32 bytes (element 32k + l in bits 2k, 2k + 1).
void spread_k2_levels(const uint8_t* qs, uint8_t* q) {
    for (int h = 0; h < 2; ++h) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
        for (int k = 0; k < 4; ++k)
            _mm256_store_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * k),
                               _mm256_and_si256(_mm256_srli_epi16(raw, 2 * k), _mm256_set1_epi8(3)));
    }
}

// Sixteen signed per-16 scales (the int8 lanes of s) into KUnpacked's per-32-chunk lanes: chunk c's first
// eight int16 lanes take scale 2c, its last eight scale 2c + 1.
void set_k16_scales(__m128i s, KUnpacked& u) {
    for (int c = 0; c < 8; ++c) {
        const __m128i pick = _mm_set_epi64x(int64_t(0x0101010101010101ULL * uint64_t(2 * c + 1)),
                                            int64_t(0x0101010101010101ULL * uint64_t(2 * c)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.sc[c]), _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s, pick)));
    }
}

void unpack_q2_k_avx2(const BlockQ2_K& b, KUnpacked& u) {
    spread_k2_levels(b.qs, u.q);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i lo4 = _mm_set1_epi8(0x0f);
    set_k16_scales(_mm_and_si128(packed, lo4), u);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(u.m), _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), lo4)));
    u.d = half(b.d);
    u.dmin = half(b.dmin);
}

// Q3_K's level q - 4 * !high is stored as q + 4 * high (0..7), its -4 folded into a "min" of 4 * scale (with
// multiplier d), as Q6_K folds its -32.
void unpack_q3_k_avx2(const BlockQ3_K& b, KUnpacked& u) {
    spread_k2_levels(b.qs, u.q);
    const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
    for (int c = 0; c < 8; ++c) {  // chunk c = 4 h + k takes bit c of hmask[l] for its element l
        const __m256i bit = _mm256_set1_epi8(int8_t(1 << c));
        const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bit), bit), _mm256_set1_epi8(4));
        __m256i* dst = reinterpret_cast<__m256i*>(u.q + 32 * c);
        _mm256_store_si256(dst, _mm256_or_si256(_mm256_load_si256(dst), high));
    }
    const __m128i sc = q3k_scales_sse(b.scales);
    set_k16_scales(sc, u);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(u.m), _mm256_slli_epi16(_mm256_cvtepi8_epi16(sc), 2));
    u.d = u.dmin = half(b.d);
}

// acc += d_a * (d * sum_i sc*q*a - dmin * sum_g m_g * bsum_g), left spread over 8 lanes.
inline __m256 dot_k_block(const KUnpacked& u, const BlockQ8_K& a, __m256 acc) {
    __m256i isum = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * c));
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs + 32 * c));
        const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc[c]));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(q, av), sc));
    }
    const __m256i msum = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)),
                                           _mm256_load_si256(reinterpret_cast<const __m256i*>(u.m)));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(u.d * a.d), acc);
    return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(u.dmin * a.d), acc);
}

// IQ4_XS: the levels are signed (-127..113: the table looked up, stored as int8 in u.q), each chunk's scale less
// 32 in both halves of u.sc[c]; no mins. Its block dot meets them as Q8_0_R8's kernel does (|w| against a with
// w's signs), so the int16 pair sums stay below 2 x 127 x 127.
void unpack_iq4_xs_avx2(const BlockIQ4_XS& b, KUnpacked& u) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int p = 0; p < 4; ++p) {  // sub-blocks 2p, 2p + 1: low nibbles are elements 0..15, high ones 16..31
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * p));
        const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        __m256i* q = reinterpret_cast<__m256i*>(u.q + 64 * p);
        _mm256_store_si256(q, _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20)));
        _mm256_store_si256(q + 1, _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31)));
    }
    for (int c = 0; c < 8; ++c)
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.sc[c]), _mm256_set1_epi16(int16_t(iq4xs_scale(b, c) - 32)));
    u.d = half(b.d);
}

inline __m256 dot_iq4xs_block(const KUnpacked& u, const BlockQ8_K& a, __m256 acc) {
    __m256i isum = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
        const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * c));
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs + 32 * c));
        const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc[c]));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(av, w));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, sc));
    }
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(u.d * a.d), acc);
}

template <typename B, void (*Unpack)(const B&, KUnpacked&), __m256 (*Dot)(const KUnpacked&, const BlockQ8_K&, __m256) = dot_k_block>
void tile_k(int64_t cols, const void* w, size_t ws, int nr, const void* a, size_t as, int nt, float* y, int64_t ldy) {
    constexpr int kMaxT = 8;  // tokens whose accumulators live in registers at once
    const int64_t nb = cols / QK_K;
    if (nt == 1 && nr > 1) {  // decode: one row after another (see kDecodeRows)
        for (int r = 0; r < nr; ++r)
            tile_k<B, Unpack, Dot>(cols, static_cast<const uint8_t*>(w) + size_t(r) * ws, ws, 1, a, as, 1, y + r, ldy);
        return;
    }
    KUnpacked u[kTileRows];
    for (int t0 = 0; t0 < nt; t0 += kMaxT) {
        const int tn = std::min(kMaxT, nt - t0);
        __m256 acc[kTileRows][kMaxT];
        for (int r = 0; r < nr; ++r)
            for (int t = 0; t < tn; ++t) acc[r][t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            for (int r = 0; r < nr; ++r) {
                _mm_prefetch(reinterpret_cast<const char*>(row_ptr<B>(w, ws, r) + b) + kPrefetchBytes, _MM_HINT_T0);
                Unpack(row_ptr<B>(w, ws, r)[b], u[r]);
            }
            for (int t = 0; t < tn; ++t) {
                const BlockQ8_K& ab = row_ptr<BlockQ8_K>(a, as, t0 + t)[b];
                for (int r = 0; r < nr; ++r) acc[r][t] = Dot(u[r], ab, acc[r][t]);
            }
        }
        for (int r = 0; r < nr; ++r)
            for (int t = 0; t < tn; ++t) y[(t0 + t) * ldy + r] = hsum(acc[r][t]);
    }
}

// The eight-row kernels prefetch the weight stream (tensor/prefetch.h) for every pass, one token too
// (not Q6_K's: slower with it at 2-17 tokens, kernels_bench Cpu1TLayouts; Q8_0_R8's one token takes the
// near request alone, see decode_q8r8). Unlike the AVX-512 sixteen-row
// kernels on Zen 4, one token streams faster with it on an AVX2-only Zen 3 (EPYC 7003 VM, 2026-12-01,
// kernels_bench BM_ModelDecode/1/1/1, the 0.5B Q4_0 step against plain reads of its tensors, two
// alternating rounds): 83-86% of the reads without, 93-94% with both distances (91-93% with either alone).

// ---- Q4_0 and Q5_0, eight rows interleaved (BlockQ4_0R8 / BlockQ5_0R8, tensor/repack.h) ----------------
// Per block, four loads give eight registers of 4-element quads, 32-bit lane i = row i (levels 0..15; Q5_0
// adds 16 where a 32-bit mask per register has the fifth bit). Per token: eight VPMADDUBSW against the
// activation's quads broadcast, summed in int16 (Q4_0: at most 8 x 2 x 15 x 127 = 30,480; Q5_0 in two
// halves of four, 31,496 each: no saturation), VPMADDWD to int32 (lane i = row i's block dot), the offset
// (-8 or -16 times sum(a)) carried by the activation block, then one convert, one scale product and one FMA
// per eight rows: about 20 operations per token and 256 weights, where the file layout's kernel spends
// ~13-16 per row and 32 weights (and decode on it was instruction-bound: BENCHMARKS.md).

// The eight rows' block dots of one 32-element block against activation quads aq (int32 lane i = row i):
// VPMADDUBSW per quad, summed in int16 (in two halves where the levels reach 31), VPMADDWD to int32 by mul
// (int16 pairs: ones, or a row's scale in both halves of its lane, which applies it for free).
template <bool kHalves>
inline __m256i quad_dots(const __m256i (&w)[8], const int8_t* aq, __m256i mul = _mm256_set1_epi16(1)) {
    auto quad = [&](int k) {
        int32_t q;
        std::memcpy(&q, aq + 4 * k, 4);
        return _mm256_maddubs_epi16(w[k], _mm256_set1_epi32(q));
    };
    if constexpr (kHalves) {
        __m256i lo = quad(0), hi = quad(4);
        for (int k = 1; k < 4; ++k) {
            lo = _mm256_add_epi16(lo, quad(k));
            hi = _mm256_add_epi16(hi, quad(k + 4));
        }
        return _mm256_add_epi32(_mm256_madd_epi16(lo, mul), _mm256_madd_epi16(hi, mul));
    } else {
        __m256i s16 = quad(0);
        for (int k = 1; k < 8; ++k) s16 = _mm256_add_epi16(s16, quad(k));
        return _mm256_madd_epi16(s16, mul);
    }
}

// Q4_0's and Q5_0's eight block dots for one token: quad_dots plus the offset (-8 or -16 times sum(a)) the
// activation block carries (kOfsShift from its -128 * sum(a)).
template <bool kHalves, int kOfsShift>
struct OffsetDots {
    template <typename B>
    static __m256i dots(const B&, const __m256i (&w)[8], const BlockQ8_0S& a) {
        return _mm256_add_epi32(quad_dots<kHalves>(w, a.qs), _mm256_set1_epi32(a.ofs >> kOfsShift));
    }
};

// Q4_0: int16 sums of all eight quads fit; -8 * sum(a) = (-128 * sum(a)) >> 4, exactly.
struct Q4R8 : OffsetDots<false, 4> {
    using Block = BlockQ4_0R8;
    static void load(const Block& b, __m256i (&w)[8]) { load_nibbles(b.qs, w); }
    static void load_nibbles(const uint8_t* qs, __m256i (&w)[8]) {
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        for (int k = 0; k < 4; ++k) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * k));
            w[k] = _mm256_and_si256(v, m4);
            w[k + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
    }
};

// Q5_0: levels reach 31, so the int16 sums go in halves; -16 * sum(a).
struct Q5R8 : OffsetDots<true, 3> {
    using Block = BlockQ5_0R8;
    static void load(const Block& b, __m256i (&w)[8]) {
        Q4R8::load_nibbles(b.qs, w);
        add_fifth_bits(b.qh, w);
    }
    // 16 added where the fifth bit is set: byte j of register k takes bit j of mask k (the mask's bytes
    // spread with one shuffle, one bit tested per byte).
    static void add_fifth_bits(const uint32_t (&qh)[8], __m256i (&w)[8]) {
        const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
        const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
        const __m256i sixteen = _mm256_set1_epi8(0x10);
        for (int k = 0; k < 8; ++k) {
            const __m256i m = _mm256_shuffle_epi8(_mm256_set1_epi32(int(qh[k])), spread);
            const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(m, bit), bit);
            w[k] = _mm256_or_si256(w[k], _mm256_and_si256(set, sixteen));
        }
    }
};

// Q4_1 / Q5_1: Q4_0's / Q5_0's levels as stored, no offset (x = d * q + m: the minimum meets the activation
// block's sum in group_r8).
struct Q41R8 {
    using Block = BlockQ4_1R8;
    static void load(const Block& b, __m256i (&w)[8]) { Q4R8::load_nibbles(b.qs, w); }
    template <typename B>
    static __m256i dots(const B&, const __m256i (&w)[8], const BlockQ8_0S& a) { return quad_dots<false>(w, a.qs); }
};
struct Q51R8 {
    using Block = BlockQ5_1R8;
    static void load(const Block& b, __m256i (&w)[8]) {
        Q4R8::load_nibbles(b.qs, w);
        Q5R8::add_fifth_bits(b.qh, w);
    }
    template <typename B>
    static __m256i dots(const B&, const __m256i (&w)[8], const BlockQ8_0S& a) { return quad_dots<true>(w, a.qs); }
};
template <typename W>
constexpr bool kHasMinR8 = requires(const typename W::Block& b) { b.m; };

// IQ4_NL: the nibbles index the signed level table (one VPSHUFB per register, the table in both lanes), and
// the levels (-127..113) meet the activation as Q8_0_R8's do (q8r8_quad: |w| against a with w's signs).
// Quad by quad, as Q8_0_R8 goes: a quad's levels and |w| are made once and meet every token of the pass.
// The int32 sums are exact, so a token's dots are the same whatever the order or the pass's size. Against
// the levels made once per block and |w| per token (group_r8's order): 0.5B pp128 on AVX2 (BENCHMARKS.md,
// Thirty-eighth session).
inline __m256i q8r8_quad(__m256i isum, __m256i wk, __m256i wabs, const int8_t* aq);  // below, with Q8_0_R8
struct IQ4NLR8 {
    using Block = BlockIQ4_NLR8;
    template <int T>
    static void pass_dots(const Block& b, const int8_t* const (&aq)[T], __m256i (&isum)[T]) {
        pass_dots<T>(b.qs, aq, isum);
    }
    // isum[t] += the eight rows' dots of the 32 levels whose Q4_0_R8-style nibble bytes are at qs against
    // token t's 32 activations at aq[t] (int32 lane i = row i). IQ4_XS_R8's sub-blocks too.
    template <int T>
    static void pass_dots(const uint8_t* qs, const int8_t* const (&aq)[T], __m256i (&isum)[T]) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        if constexpr (T == 1) {
            // One token (decode): the block's four loads first, then the quads.
            __m256i w[8];
            Q4R8::load_nibbles(qs, w);
            for (int k = 0; k < 8; ++k) {
                w[k] = _mm256_shuffle_epi8(table, w[k]);
                isum[0] = q8r8_quad(isum[0], w[k], _mm256_abs_epi8(w[k]), aq[0] + 4 * k);
            }
            return;
        }
        for (int k = 0; k < 4; ++k) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * k));
            const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, m4));
            const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
            const __m256i lo_abs = _mm256_abs_epi8(lo), hi_abs = _mm256_abs_epi8(hi);
            for (int t = 0; t < T; ++t) {
                isum[t] = q8r8_quad(isum[t], lo, lo_abs, aq[t] + 4 * k);
                isum[t] = q8r8_quad(isum[t], hi, hi_abs, aq[t] + 4 * (k + 4));
            }
        }
    }
};

// The 32-element eight-row nibble layouts (Q4_0, Q5_0, Q4_1, Q5_1) against T tokens: W::load takes a block's levels
// into registers once, W::dots gives one token's eight block dots from them.
template <typename W, int T>
void group_r8(int64_t nb, const typename W::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_0S* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_0S*>(a + size_t(t) * as);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        prefetch_stream(wb + b, sizeof(wb[b]));
        __m256i w[8];
        W::load(wb[b], w);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb[b].d)));
        [[maybe_unused]] __m256 m;
        if constexpr (kHasMinR8<W>) m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb[b].m)));
        for (int t = 0; t < T; ++t) {
            const BlockQ8_0S& ab = at[t][b];
            const __m256i isum = W::dots(wb[b], w, ab);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(ab.d)), acc[t]);
            // The minimum times the activation block's sum, -ofs / 128 exactly.
            if constexpr (kHasMinR8<W>) acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(ab.d * float(-(ab.ofs >> 7))), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

// ---- Q8_0, eight rows interleaved (BlockQ8_0R8) ---------------------------------------------------------
// The levels are signed, so per quad and token the activation quad, broadcast, takes the weights' signs
// (VPSIGNB) and meets |w| in one VPMADDUBSW (pair sums at most 2 x 127 x 127: no saturation, but two of them
// could overflow int16), one VPMADDWD to int32 per quad, the eight added in int32 (lane i = row i's block
// dot), then as Q4_0_R8: one convert, one scale product and one FMA per token and eight rows. The file
// layout's kernel spends a sign, a VPMADDUBSW, a VPMADDWD, a convert, a scale product and an FMA per row,
// token and block.
// isum + quad k's dots (int32 lane i = row i): levels wk, their magnitudes wabs, the activation quad at aq.
// The one integer step both kernels below take, so a token's dots are the same alone or in a batch.
inline __m256i q8r8_quad(__m256i isum, __m256i wk, __m256i wabs, const int8_t* aq) {
    int32_t q;
    std::memcpy(&q, aq, 4);
    const __m256i s = _mm256_sign_epi8(_mm256_set1_epi32(q), wk);
    return _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, s), _mm256_set1_epi16(1)));
}

// The eight rows' dots (int32 lane i = row i) of one block against one token's activation block.
inline __m256i q8r8_dots(const BlockQ8_0R8& w, const BlockQ8_0S& a) {
    const auto* wq = reinterpret_cast<const __m256i*>(w.qs);
    __m256i isum = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
        const __m256i wk = _mm256_loadu_si256(wq + k);
        isum = q8r8_quad(isum, wk, _mm256_abs_epi8(wk), a.qs + 4 * k);
    }
    return isum;
}

// A pass of T tokens over one group, quad by quad: quad k's levels and |w| stay in two registers while every
// token's activation quad meets them, and the T tokens' int32 sums grow side by side. The same integer dots
// (q8r8_quad) and f32 steps as q8r8_dots per token, so a token's logits do not depend on its batch. Against
// a block at a time with each token's eight quads in turn (the levels read again from L1 per token and quad,
// one dependent sum per token): kernels_bench Cpu1T/0/896/4864/512/1/1 on the AVX2-only Zen 3 host, five
// alternating rounds, median 96 GFLOP/s a core against 85; eight tokens a pass no better than six
// (BENCHMARKS.md, Fifteenth session).
struct Q8R8 {
    using Block = BlockQ8_0R8;
    template <int T>
    static void pass_dots(const Block& b, const int8_t* const (&aq)[T], __m256i (&isum)[T]) {
        const auto* wq = reinterpret_cast<const __m256i*>(b.qs);
        for (int k = 0; k < 8; ++k) {
            const __m256i wk = _mm256_loadu_si256(wq + k);
            const __m256i wabs = _mm256_abs_epi8(wk);
            for (int t = 0; t < T; ++t) isum[t] = q8r8_quad(isum[t], wk, wabs, aq[t] + 4 * k);
        }
    }
};

// The signed-level eight-row layouts (Q8_0_R8, IQ4_NL_R8) against T tokens: W::pass_dots gives every token's
// int32 block dots, then one convert, one scale product and one FMA per token and eight rows.
template <typename W, int T>
void group_signed_r8(int64_t nb, const typename W::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_0S* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_0S*>(a + size_t(t) * as);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        prefetch_stream(wb + b, sizeof(wb[b]));
        const int8_t* aq[T];
        __m256i isum[T];
        for (int t = 0; t < T; ++t) {
            aq[t] = at[t][b].qs;
            isum[t] = _mm256_setzero_si256();
        }
        W::template pass_dots<T>(wb[b], aq, isum);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb[b].d)));
        for (int t = 0; t < T; ++t)
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(at[t][b].d)), acc[t]);
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
}
template <typename W>
struct SignedR8 {
    template <int T>
    struct K {
        static constexpr auto run = group_signed_r8<W, T>;
    };
};

// One token (decode) over NG groups in lockstep. Per group it takes |w| quad by quad instead of all eight
// first, and only the near prefetch, 8 KiB ahead: kernels_bench BM_ModelDecode/0/1/1 (the 0.5B Q8_0 step
// against plain reads of its tensors, Zen 3, alternating builds) put one group at a time at 80-95% of the
// reads with the prefetch_stream pair, 91-98% so (BENCHMARKS.md, Twelfth session); see decode_tile_q8r8.
constexpr int kQ8R8DecodePrefetch = 8192;
template <int NG>
void decode_q8r8(int64_t nb, const BlockQ8_0R8* const* wg, const BlockQ8_0S* at, float* y) {
    __m256 acc[NG];
    for (int g = 0; g < NG; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        for (int g = 0; g < NG; ++g)
            for (size_t o = 0; o < sizeof(wg[g][b]); o += 64)
                __builtin_prefetch(reinterpret_cast<const char*>(wg[g] + b) + kQ8R8DecodePrefetch + o, 0, 3);
        const __m256 ad = _mm256_set1_ps(at[b].d);
        for (int g = 0; g < NG; ++g) {
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg[g][b].d)));
            const __m256i isum = q8r8_dots(wg[g][b], at[b]);
            acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, ad), acc[g]);
        }
    }
    for (int g = 0; g < NG; ++g) _mm256_storeu_ps(y + kR8Rows * g, acc[g]);
}

// One token's tile (kDecodeRows: two groups): the two groups in lockstep, so the core reads two streams at
// once, not one after the other. kernels_bench BM_ModelDecode/0/1/1 (the 0.5B Q8_0 step against plain
// reads of its tensors, Zen 3 EPYC VM, 2026-12-01, three sets of alternating rounds): 93-103% of the reads
// against 85-96% for one group at a time; four groups at once (32-row tiles) no better (86-98%). Not for
// Q4_0_R8: two groups 82-90% against one's 86-92% there (with either prefetch), so it keeps group_r8<1>.
void decode_tile_q8r8(int64_t nb, const uint8_t* w, size_t gs, int ng, const uint8_t* a, float* y) {
    const auto* at = reinterpret_cast<const BlockQ8_0S*>(a);
    auto group = [&](int g) { return reinterpret_cast<const BlockQ8_0R8*>(w + size_t(g) * gs); };
    int g = 0;
    for (; g + 2 <= ng; g += 2) {
        const BlockQ8_0R8* const pair[2] = {group(g), group(g + 1)};
        decode_q8r8<2>(nb, pair, at, y + kR8Rows * g);
    }
    if (g < ng) {
        const BlockQ8_0R8* const one[1] = {group(g)};
        decode_q8r8<1>(nb, one, at, y + kR8Rows * g);
    }
}

// ---- Q4_K, eight rows interleaved (BlockQ4_KR8) -------------------------------------------------------
// Per 32-element sub-block j: Q4_0_R8's eight VPMADDUBSW per token give the eight rows' integer dots (levels
// 0..15, no offset), the VPMADDWD that widens them to int32 applies the rows' 6-bit scales (at most 2 x
// 30,480 x 63), and the sub-blocks add up exactly in int32, as the file's scalar reference sums; the mins
// meet the activation's two 16-element sums (Q8_K's bsums) in one more VPMADDWD. One convert pair and two
// FMAs per token and super-block. The rows' scales and mins are unpacked from their three packed words once
// per super-block, four per 32-bit lane, as k4_scales_mins does.
// Sub-block j's levels, one register per 4-element quad; Q5_K's reach 31, so its int16 sums go in halves.
struct Q4KR8 {
    using Block = BlockQ4_KR8;
    static constexpr bool kHalves = false;
    static void load(const Block& B, int j, __m256i (&w)[8]) { Q4R8::load_nibbles(B.qs[j], w); }
};
struct Q5KR8 {
    using Block = BlockQ5_KR8;
    static constexpr bool kHalves = true;
    static void load(const Block& B, int j, __m256i (&w)[8]) {
        Q4R8::load_nibbles(B.s[j].nib, w);
        Q5R8::add_fifth_bits(B.s[j].qh, w);
    }
};

template <typename L, int T>
void group_q45kr8(int64_t nb, const typename L::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_K* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * as);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i lo8 = _mm256_set1_epi32(0xff);
    const __m256i lo6 = _mm256_set1_epi32(0x3f3f3f3f), lo4 = _mm256_set1_epi32(0x0f0f0f0f), lo2 = _mm256_set1_epi32(0x03030303);
    for (int64_t b = 0; b < nb; ++b) {
        const typename L::Block& B = wb[b];
        prefetch_stream(&B, sizeof(B));
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.sc[0]));
        const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.sc[1]));
        const __m256i w2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.sc[2]));
        const __m256i sc[2] = {_mm256_and_si256(w0, lo6),
                               _mm256_or_si256(_mm256_and_si256(w2, lo4),
                                               _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w0, 6), lo2), 4))};
        const __m256i mn[2] = {_mm256_and_si256(w1, lo6),
                               _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), lo4),
                                               _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w1, 6), lo2), 4))};
        __m256i qsum[T], msum[T];
        for (int t = 0; t < T; ++t) qsum[t] = msum[t] = _mm256_setzero_si256();
        for (int j = 0; j < 8; ++j) {
            __m256i w[8];
            L::load(B, j, w);
            const int sh = 8 * (j % 4);
            // The rows' scale and min of sub-block j in both int16 halves of their lanes (see quad_dots); the
            // min meets the activation's two 16-element sums in one VPMADDWD.
            auto both_halves = [](__m256i v) { return _mm256_or_si256(v, _mm256_slli_epi32(v, 16)); };
            const __m256i scj = both_halves(_mm256_and_si256(_mm256_srli_epi32(sc[j / 4], sh), lo8));
            const __m256i mj = both_halves(_mm256_and_si256(_mm256_srli_epi32(mn[j / 4], sh), lo8));
            for (int t = 0; t < T; ++t) {
                qsum[t] = _mm256_add_epi32(qsum[t], quad_dots<L::kHalves>(w, at[t][b].qs + 32 * j, scj));
                int32_t sums;  // an int16 pair
                std::memcpy(&sums, at[t][b].bsums + 2 * j, 4);
                msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(mj, _mm256_set1_epi32(sums)));
            }
        }
        const __m256 dr = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.d)));
        const __m256 dmr = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.dmin)));
        for (int t = 0; t < T; ++t) {
            const __m256 v = _mm256_fnmadd_ps(dmr, _mm256_cvtepi32_ps(msum[t]), _mm256_mul_ps(dr, _mm256_cvtepi32_ps(qsum[t])));
            acc[t] = _mm256_fmadd_ps(v, _mm256_set1_ps(at[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

// ---- IQ4_XS, eight rows interleaved (BlockIQ4_XSR8) ----------------------------------------------------
// Per 32-element sub-block j: IQ4_NL_R8's signed levels from its table, each quad meeting the activation as
// Q8_0_R8's do (q8r8_quad: |w| against a with w's signs, no offset), VPMULLD applies the rows' scales less 32
// and the sub-blocks add up exactly in int32, as the file's scalar reference sums. The scales are unpacked
// once per super-block into two registers of four bytes a lane, as dot_r16_avx512.cpp's group_iq4xs does.
template <int T>
void group_iq4xsr8(int64_t nb, const BlockIQ4_XSR8* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_K* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * as);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i lo8 = _mm256_set1_epi32(0xff), s32 = _mm256_set1_epi32(32);
    for (int64_t b = 0; b < nb; ++b) {
        const BlockIQ4_XSR8& B = wb[b];
        prefetch_stream(&B, sizeof(B));
        const __m256i sa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.sa));
        const __m256i sbw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.sb)));
        const __m256i sc[2] = {
            _mm256_and_si256(sa, _mm256_set1_epi8(0x3f)),
            _mm256_or_si256(_mm256_and_si256(_mm256_or_si256(sbw, _mm256_slli_epi16(sbw, 4)), _mm256_set1_epi8(0x0f)),
                            _mm256_and_si256(_mm256_srli_epi32(sa, 2), _mm256_set1_epi8(0x30)))};
        __m256i qsum[T];
        for (int t = 0; t < T; ++t) qsum[t] = _mm256_setzero_si256();
        for (int j = 0; j < 8; ++j) {
            const int8_t* aq[T];
            __m256i dot[T];
            for (int t = 0; t < T; ++t) {
                aq[t] = at[t][b].qs + 32 * j;
                dot[t] = _mm256_setzero_si256();
            }
            IQ4NLR8::pass_dots<T>(B.qs[j], aq, dot);
            const __m256i scj = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(sc[j / 4], 8 * (j % 4)), lo8), s32);
            for (int t = 0; t < T; ++t) qsum[t] = _mm256_add_epi32(qsum[t], _mm256_mullo_epi32(dot[t], scj));
        }
        const __m256 dr = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.d)));
        for (int t = 0; t < T; ++t)
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(qsum[t]), _mm256_mul_ps(dr, _mm256_set1_ps(at[t][b].d)), acc[t]);
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

// ---- Q6_K, Q3_K and Q2_K, eight rows interleaved (BlockQ6_KR8, BlockQ3_KR8, BlockQ2_KR8) ------------------
// Per pair of 16-element sub-blocks: the levels rebuilt into eight registers of quads (Q6_K: 0..63 from
// Q4_0_R8-style nibbles and a register of top bits per four quads, a shift, an AND and an OR each; Q3_K: 0..7
// from two-bit fields and a plane of high bits per pair; Q2_K: 0..3); per sub-block four VPMADDUBSW per token
// summed two at a time in int16 (at most 2 x 2 x 63 x 127 = 32,004; Q3_K's and Q2_K's four), VPMADDWD to
// int32 with the rows' scales as its multiplier, and the offset (-32, -4) as -offset * scale * (the
// activation's 16-element sums) through one VPMADDWD per pair (Q2_K: its mins, times dmin, once per
// super-block). All in int32 until one convert and one FMA per token and super-block.

// Q6_K: the rows' int8 scales of the pair side by side, an int16 pair per lane.
struct Q6KPairsR8 {
    using Block = BlockQ6_KR8;
    static constexpr int kOffset = 32;
    static constexpr bool kSmallLevels = false;
    struct Scales {};
    static Scales scales(const Block&) { return {}; }
    static void levels(const Block& B, int P, __m256i (&w)[8]) {
        const __m256i m30 = _mm256_set1_epi8(0x30);
        Q4R8::load_nibbles(B.p[P].nib, w);
        for (int g = 0; g < 2; ++g) {
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.p[P].hi[g]));
            w[4 * g + 0] = _mm256_or_si256(w[4 * g + 0], _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
            w[4 * g + 1] = _mm256_or_si256(w[4 * g + 1], _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
            w[4 * g + 2] = _mm256_or_si256(w[4 * g + 2], _mm256_and_si256(h, m30));
            w[4 * g + 3] = _mm256_or_si256(w[4 * g + 3], _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
        }
    }
    static __m256i pair(const Block& B, const Scales&, int P) {
        return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.p[P].sc)));
    }
};

// Q3_K_R8's / Q2_K_R8's two-bit fields of a pair into eight registers of quads (levels 0..3).
inline void two_bit_levels_r8(const uint8_t (&lo)[2][32], __m256i (&w)[8]) {
    const __m256i m3 = _mm256_set1_epi8(0x03);
    for (int g = 0; g < 2; ++g) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo[g]));
        w[4 * g + 0] = _mm256_and_si256(v, m3);
        w[4 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 2), m3);
        w[4 * g + 2] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m3);
        w[4 * g + 3] = _mm256_and_si256(_mm256_srli_epi16(v, 6), m3);
    }
}

// Q3_K: each row's sixteen 6-bit scales unpacked once per super-block from its three words into four words of
// four bytes (scales 4j .. 4j + 3 in word j), then per pair two bytes zero-extended by one VPSHUFB, less 32.
struct Q3KPairsR8 {
    using Block = BlockQ3_KR8;
    static constexpr int kOffset = 4;
    static constexpr bool kSmallLevels = true;
    struct Scales {
        __m256i aux[4];
    };
    static Scales scales(const Block& B) {
        auto word = [&](int w) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.sc[w])); };
        const __m256i w0 = word(0), w1 = word(1), w2 = word(2);
        const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
        auto top = [&](int shift) { return _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w2, shift), m2), 4); };
        Scales s;
        s.aux[0] = _mm256_or_si256(_mm256_and_si256(w0, m4), top(0));
        s.aux[1] = _mm256_or_si256(_mm256_and_si256(w1, m4), top(2));
        s.aux[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w0, 4), m4), top(4));
        s.aux[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w1, 4), m4), top(6));
        return s;
    }
    // Bit k of each high-bit byte to bit 2 (+4) of register k's level bytes: one shift (16-bit lanes; what
    // crosses from the neighbouring byte never lands on bit 2) and one AND each.
    static void levels(const Block& B, int P, __m256i (&w)[8]) {
        two_bit_levels_r8(B.p[P].lo, w);
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B.p[P].hb)), four = _mm256_set1_epi8(0x04);
        w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(h, 2), four));
        w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(h, 1), four));
        w[2] = _mm256_or_si256(w[2], _mm256_and_si256(h, four));
        w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_srli_epi16(h, 1), four));
        w[4] = _mm256_or_si256(w[4], _mm256_and_si256(_mm256_srli_epi16(h, 2), four));
        w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_srli_epi16(h, 3), four));
        w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi16(h, 4), four));
        w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(h, 5), four));
    }
    static __m256i pair(const Block&, const Scales& s, int P) {
        const uint32_t o = 2 * uint32_t(P % 2);
        auto lane = [o](uint32_t l) { return int(0x80u << 24 | (4 * l + o + 1) << 16 | 0x80u << 8 | (4 * l + o)); };
        const __m128i pick = _mm_set_epi32(lane(3), lane(2), lane(1), lane(0));
        return _mm256_sub_epi16(_mm256_shuffle_epi8(s.aux[P / 2], _mm256_broadcastsi128_si256(pick)), _mm256_set1_epi16(32));
    }
};

// Q2_K: levels 0..3 with no offset; scale bytes (scale low nibble, min high nibble) beside each pair's levels.
struct Q2KPairsR8 {
    using Block = BlockQ2_KR8;
    static constexpr int kOffset = 0;
    static constexpr bool kSmallLevels = true;
    struct Scales {};
    static Scales scales(const Block&) { return {}; }
    static void levels(const Block& B, int P, __m256i (&w)[8]) { two_bit_levels_r8(B.p[P].lo, w); }
    static __m256i bytes(const Block& B, int P) {
        return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.p[P].sc)));
    }
    static __m256i pair(const Block& B, const Scales&, int P) { return _mm256_and_si256(bytes(B, P), _mm256_set1_epi16(0x0f)); }
    static __m256i min_pair(const Block& B, int P) { return _mm256_srli_epi16(bytes(B, P), 4); }
};
template <typename U>
constexpr bool kHasMinsR8 = requires(const typename U::Block& b) { b.dmin; };

template <typename U, int T>
void group_k16_pairs_r8(int64_t nb, const typename U::Block* wb, const uint8_t* a, size_t as, float* y, int64_t ldy) {
    const BlockQ8_K* at[T];
    for (int t = 0; t < T; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(a + size_t(t) * as);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const typename U::Block& B = wb[b];
        const typename U::Scales sc = U::scales(B);
        __m256i qsum[T];
        for (int t = 0; t < T; ++t) qsum[t] = _mm256_setzero_si256();
        for (int P = 0; P < 8; ++P) {
            __m256i w[8];
            U::levels(B, P, w);
            // Lane i: the rows' two scales as an int16 pair; each in both halves of the lane (VPMADDWD then
            // applies it to the lane's two partial sums and adds them); -offset * the pair.
            const __m256i pair = U::pair(B, sc, P);
            const __m256i lo16 = _mm256_set1_epi32(0xffff);
            const __m256i s0 = _mm256_or_si256(_mm256_and_si256(pair, lo16), _mm256_slli_epi32(pair, 16));
            const __m256i s1 = _mm256_or_si256(_mm256_andnot_si256(lo16, pair), _mm256_srli_epi32(pair, 16));
            [[maybe_unused]] const __m256i neg =
                _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_mullo_epi16(pair, _mm256_set1_epi16(U::kOffset)));
            for (int t = 0; t < T; ++t) {
                const BlockQ8_K& ab = at[t][b];
                const int8_t* aq = ab.qs + 32 * P;
                auto quad = [&](int k) {
                    int32_t q;
                    std::memcpy(&q, aq + 4 * k, 4);
                    return _mm256_maddubs_epi16(w[k], _mm256_set1_epi32(q));
                };
                // Registers k0 .. k0 + 3, one sub-block's 16 elements, times its scales sk: the int16 sums
                // two quads at a time (four where the levels stay under 8: 4 x 2 x 7 x 127 = 7,112).
                auto sub_dot = [&](int k0, __m256i sk) {
                    const __m256i h0 = _mm256_add_epi16(quad(k0), quad(k0 + 1)), h1 = _mm256_add_epi16(quad(k0 + 2), quad(k0 + 3));
                    if constexpr (U::kSmallLevels) return _mm256_madd_epi16(_mm256_add_epi16(h0, h1), sk);
                    else return _mm256_add_epi32(_mm256_madd_epi16(h0, sk), _mm256_madd_epi16(h1, sk));
                };
                __m256i q = qsum[t];
                if constexpr (U::kOffset != 0) {
                    int32_t sums;  // the activation's sums over the two sub-blocks, an int16 pair
                    std::memcpy(&sums, ab.bsums + 2 * P, 4);
                    q = _mm256_add_epi32(q, _mm256_madd_epi16(neg, _mm256_set1_epi32(sums)));
                }
                qsum[t] = _mm256_add_epi32(q, _mm256_add_epi32(sub_dot(0, s0), sub_dot(4, s1)));
            }
        }
        const __m256 dr = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.d)));
        if constexpr (kHasMinsR8<U>) {
            // The mins' part, sum over sub-blocks of min * (the activation's 16-element sum), per token.
            const __m256 dmr = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(B.dmin)));
            for (int t = 0; t < T; ++t) {
                __m256i msum = _mm256_setzero_si256();
                for (int P = 0; P < 8; ++P) {
                    int32_t sums;
                    std::memcpy(&sums, at[t][b].bsums + 2 * P, 4);
                    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(U::min_pair(B, P), _mm256_set1_epi32(sums)));
                }
                const __m256 v = _mm256_fnmadd_ps(dmr, _mm256_cvtepi32_ps(msum), _mm256_mul_ps(dr, _mm256_cvtepi32_ps(qsum[t])));
                acc[t] = _mm256_fmadd_ps(v, _mm256_set1_ps(at[t][b].d), acc[t]);
            }
        } else {
            for (int t = 0; t < T; ++t)
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(qsum[t]), _mm256_mul_ps(dr, _mm256_set1_ps(at[t][b].d)), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
}

// The eight-row group kernels as tile_groups (tensor/tile_groups.h) wants them. Tokens a pass: 9 for the
// 4- and 5-bit 32-element layouts, Q6_K and Q3_K, 6 for Q8_0_R8, Q4_K, Q5_K, IQ4_XS and Q2_K. Only ~3 (2)
// accumulators fit the sixteen ymm registers beside the eight weight registers, and the rest live on the
// stack, but one token's spill and reload per block costs less than another pass that re-streams and
// re-unpacks the weights: one thread, 8192x4864 (kernels_bench Cpu1TLayouts, two alternating rounds), 3 -> 9
// tokens: Q4_0 at 17 tokens 7.8 -> 6.9 ms, Q5_0 12.2 -> 8.7; 2 -> 6: Q4_K 10.3 -> 7.9, Q5_K 15.8 -> 10.5 (4-8
// tokens 1.15-1.45x too); flat beyond. The 16-element pairs (Q6_K, Q3_K, Q2_K) once took 2 a pass; since
// their scales go through VPMADDWD instead of VPMULLD, more pay: 1.5B pp128 on AVX2, 2 -> 4 -> 6 -> 9
// tokens, Q6_K 90 -> 113 -> 120 -> 125 tok/s, Q3_K 78 -> 99 -> 106 -> 125, Q2_K 119 -> 139 -> 148 -> 123
// (7: 136, 8: 125; BENCHMARKS.md, Thirty-eighth session).
template <typename W>
struct R8 {
    template <int T>
    struct K {
        static constexpr auto run = group_r8<W, T>;
    };
};
template <typename L>
struct KR8 {
    template <int T>
    struct K {
        static constexpr auto run = group_q45kr8<L, T>;
    };
};
struct IQ4XSR8 {
    template <int T>
    struct K {
        static constexpr auto run = group_iq4xsr8<T>;
    };
};
template <typename U>
struct K16PairsR8 {
    template <int T>
    struct K {
        static constexpr auto run = group_k16_pairs_r8<U, T>;
    };
};

// ---- activation quantizers (bit-identical to the scalar ones: same scale, same rounding) ----------

__m256i pack_to_i8(__m256 v0, __m256 v1, __m256 v2, __m256 v3) {
    // cvtps rounds to nearest even like nearbyint; packs interleave 128-bit lanes, the permute undoes it.
    const __m256i a = _mm256_packs_epi32(_mm256_cvtps_epi32(v0), _mm256_cvtps_epi32(v1));
    const __m256i b = _mm256_packs_epi32(_mm256_cvtps_epi32(v2), _mm256_cvtps_epi32(v3));
    const __m256i c = _mm256_packs_epi16(a, b);
    return _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

float max_abs(const float* x, int n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Clamped to +-127 as the references do: a Q8_0 block whose fp16 scale is subnormal can reach -128 otherwise.
void quantize_32(const float* x, float id, int8_t* out) {
    const __m256 vid = _mm256_set1_ps(id), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    auto level = [&](int i) { return _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vid), lo), hi); };
    const __m256i q = pack_to_i8(level(0), level(8), level(16), level(24));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), q);
}

void quantize_q8_0_avx2(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        y[b].d = fp32_to_fp16(max_abs(x, QK) / 127.0f);
        const float d = half(y[b].d);
        quantize_32(x, d != 0 ? 1.0f / d : 0.0f, y[b].qs);
    }
}

void quantize_q8_0s_avx2(const float* x, BlockQ8_0S* y, int64_t n) { quantize_q8_0s_via(quantize_q8_0_avx2, x, y, n); }

void quantize_q8_k_avx2(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        const float d = max_abs(x, QK_K) / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = d;
        for (int c = 0; c < 8; ++c) quantize_32(x + 32 * c, id, y[b].qs + 32 * c);
        for (int g = 0; g < 16; ++g) {
            // Sum 16 int8: sign-extend to int16 and add horizontally.
            const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].qs + 16 * g)));
            __m128i s = _mm_add_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            s = _mm_add_epi16(s, _mm_unpackhi_epi64(s, s));
            s = _mm_add_epi16(s, _mm_shufflelo_epi16(s, 0x4e));
            s = _mm_add_epi16(s, _mm_shufflelo_epi16(s, 0xb1));
            y[b].bsums[g] = int16_t(_mm_extract_epi16(s, 0));
        }
    }
}

constexpr int id(DType t) { return static_cast<int>(t); }

}  // namespace

void fill_avx2(KernelSet& k) {
    fill_vec_avx2(k);
    k.tile[id(DType::F32)] = tile_f<F32W>;
    k.tile[id(DType::F16)] = tile_f<F16W>;
    k.tile[id(DType::BF16)] = tile_f<BF16W>;
    k.tile[id(DType::Q8_0)] = tile_q8<Q8_0W>;
    k.tile[id(DType::Q4_0)] = tile_q8<Q4_0W>;
    k.tile[id(DType::Q5_0)] = tile_q8<Q5_0W>;
    k.tile[id(DType::IQ4_NL)] = tile_q8<IQ4_NLW>;
    k.tile[id(DType::Q4_1)] = tile_q8<Q4_1W>;
    k.tile[id(DType::Q5_1)] = tile_q8<Q5_1W>;
    k.tile[id(DType::Q2_K)] = tile_k<BlockQ2_K, unpack_q2_k_avx2>;
    k.tile[id(DType::Q3_K)] = tile_k<BlockQ3_K, unpack_q3_k_avx2>;
    k.tile[id(DType::Q4_K)] = tile_k<BlockQ4_K, unpack_q4_k_avx2>;
    k.tile[id(DType::Q5_K)] = tile_k<BlockQ5_K, unpack_q5_k_avx2>;
    k.tile[id(DType::Q6_K)] = tile_k<BlockQ6_K, unpack_q6_k_avx2>;
    k.tile[id(DType::IQ4_XS)] = tile_k<BlockIQ4_XS, unpack_iq4_xs_avx2, dot_iq4xs_block>;
    k.quantize_q8_0 = quantize_q8_0_avx2;
    k.quantize_q8_k = quantize_q8_k_avx2;
    k.quantize_q8_0s = quantize_q8_0s_avx2;
    k.tile[id(DType::Q8_0_R8)] = tile_groups<kR8Rows, BlockQ8_0R8, SignedR8<Q8R8>::K, 6, QK, decode_tile_q8r8>;
    k.tile[id(DType::Q4_0_R8)] = tile_groups<kR8Rows, BlockQ4_0R8, R8<Q4R8>::K, 9, QK>;
    k.tile[id(DType::Q5_0_R8)] = tile_groups<kR8Rows, BlockQ5_0R8, R8<Q5R8>::K, 9, QK>;
    k.tile[id(DType::IQ4_NL_R8)] = tile_groups<kR8Rows, BlockIQ4_NLR8, SignedR8<IQ4NLR8>::K, 9, QK>;
    k.tile[id(DType::Q4_1_R8)] = tile_groups<kR8Rows, BlockQ4_1R8, R8<Q41R8>::K, 9, QK>;
    k.tile[id(DType::Q5_1_R8)] = tile_groups<kR8Rows, BlockQ5_1R8, R8<Q51R8>::K, 9, QK>;
    for (DType t : {DType::Q8_0_R8, DType::Q4_0_R8, DType::Q5_0_R8, DType::IQ4_NL_R8, DType::Q4_1_R8, DType::Q5_1_R8})
        k.stream_tokens[id(t)] = 255;  // every token count: tiles of kDecodeRows rows (two groups)
    k.repack[id(DType::Q8_0)] = DType::Q8_0_R8;
    k.repack[id(DType::Q4_0)] = DType::Q4_0_R8;
    k.repack[id(DType::Q5_0)] = DType::Q5_0_R8;
    k.repack[id(DType::IQ4_NL)] = DType::IQ4_NL_R8;
    k.repack[id(DType::Q4_1)] = DType::Q4_1_R8;
    k.repack[id(DType::Q5_1)] = DType::Q5_1_R8;
    k.tile[id(DType::Q4_K_R8)] = tile_groups<kR8Rows, BlockQ4_KR8, KR8<Q4KR8>::K, 6, QK_K>;
    k.tile[id(DType::Q5_K_R8)] = tile_groups<kR8Rows, BlockQ5_KR8, KR8<Q5KR8>::K, 6, QK_K>;
    k.tile[id(DType::IQ4_XS_R8)] = tile_groups<kR8Rows, BlockIQ4_XSR8, IQ4XSR8::K, 6, QK_K>;
    for (DType t : {DType::Q4_K_R8, DType::Q5_K_R8, DType::IQ4_XS_R8}) k.stream_tokens[id(t)] = 255;
    k.repack[id(DType::Q4_K)] = DType::Q4_K_R8;
    k.repack[id(DType::Q5_K)] = DType::Q5_K_R8;
    k.repack[id(DType::IQ4_XS)] = DType::IQ4_XS_R8;
    k.tile[id(DType::Q6_K_R8)] = tile_groups<kR8Rows, BlockQ6_KR8, K16PairsR8<Q6KPairsR8>::K, 9, QK_K>;
    k.tile[id(DType::Q3_K_R8)] = tile_groups<kR8Rows, BlockQ3_KR8, K16PairsR8<Q3KPairsR8>::K, 9, QK_K>;
    k.tile[id(DType::Q2_K_R8)] = tile_groups<kR8Rows, BlockQ2_KR8, K16PairsR8<Q2KPairsR8>::K, 6, QK_K>;
    for (DType t : {DType::Q6_K_R8, DType::Q3_K_R8, DType::Q2_K_R8}) k.stream_tokens[id(t)] = 255;
    k.repack[id(DType::Q6_K)] = DType::Q6_K_R8;
    k.repack[id(DType::Q3_K)] = DType::Q3_K_R8;
    k.repack[id(DType::Q2_K)] = DType::Q2_K_R8;
}

}  // namespace flint::detail
