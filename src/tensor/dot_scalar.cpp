// flint/tensor/dot_scalar.cpp — scalar reference dot products of one weight row with one activation
// row, for every weight type, and the scalar kernel table. Integer formats accumulate exactly in
// int32 per block and scale once per block, the same arithmetic the SIMD kernels do, so SIMD and
// scalar differ only in the order of the f32 block sums.
#include <cstring>
#include <utility>

#include "tensor/kernels.h"
#include "tensor/quant_internal.h"

namespace flint::detail {
namespace {

float dot_q8_0(int64_t cols, const BlockQ8_0* w, const BlockQ8_0* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        int isum = 0;
        for (int i = 0; i < QK; ++i) isum += w[b].qs[i] * a[b].qs[i];
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * float(isum);
    }
    return sum;
}

float dot_q4_0(int64_t cols, const BlockQ4_0* w, const BlockQ8_0* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        int isum = 0;
        for (int j = 0; j < QK / 2; ++j)
            isum += ((w[b].qs[j] & 0xf) - 8) * a[b].qs[j] + ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + QK / 2];
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * float(isum);
    }
    return sum;
}

float dot_q5_0(int64_t cols, const BlockQ5_0* w, const BlockQ8_0* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        const uint32_t qh = q5_high_bits(w[b].qh);
        int isum = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = ((w[b].qs[j] & 0xf) | int(((qh >> j) & 1) << 4)) - 16;
            const int hi = ((w[b].qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4)) - 16;
            isum += lo * a[b].qs[j] + hi * a[b].qs[j + QK / 2];
        }
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * float(isum);
    }
    return sum;
}

// Q4_1 / Q5_1: x = d*q + m, so dot = d_a * (d * sum(q*a) + m * sum(a)).
template <bool kFifthBit, typename Block>
float dot_q45_1(int64_t cols, const Block* w, const BlockQ8_0* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        uint32_t qh = 0;
        if constexpr (kFifthBit) qh = q5_high_bits(w[b].qh);
        int isum = 0, asum = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = (w[b].qs[j] & 0xf) | int(((qh >> j) & 1) << 4);
            const int hi = (w[b].qs[j] >> 4) | int(((qh >> (j + QK / 2)) & 1) << 4);
            isum += lo * a[b].qs[j] + hi * a[b].qs[j + QK / 2];
            asum += a[b].qs[j] + a[b].qs[j + QK / 2];
        }
        const float da = fp16_to_fp32(a[b].d);
        sum += fp16_to_fp32(w[b].d) * da * float(isum) + fp16_to_fp32(w[b].m) * da * float(asum);
    }
    return sum;
}

float dot_q4_1(int64_t cols, const BlockQ4_1* w, const BlockQ8_0* a) { return dot_q45_1<false>(cols, w, a); }
float dot_q5_1(int64_t cols, const BlockQ5_1* w, const BlockQ8_0* a) { return dot_q45_1<true>(cols, w, a); }

// One IQ4_NL block's 16 index bytes (element j low nibble, j + 16 high) against 32 activation levels.
int iq4nl_block_dot(const uint8_t* qs, const int8_t* q8) {
    int isum = 0;
    for (int j = 0; j < QK / 2; ++j) isum += kIq4nlValues[qs[j] & 0xf] * q8[j] + kIq4nlValues[qs[j] >> 4] * q8[j + QK / 2];
    return isum;
}

float dot_iq4_nl(int64_t cols, const BlockIQ4_NL* w, const BlockQ8_0* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b)
        sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * float(iq4nl_block_dot(w[b].qs, a[b].qs));
    return sum;
}

// IQ4_XS: IQ4_NL's levels, x = d*(s_j - 32)*level per 32-element sub-block j, summed exactly in int32.
float dot_iq4_xs(int64_t cols, const BlockIQ4_XS* w, const BlockQ8_K* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK_K; ++b) {
        int qsum = 0;
        for (int j = 0; j < 8; ++j) qsum += (iq4xs_scale(w[b], j) - 32) * iq4nl_block_dot(w[b].qs + 16 * j, a[b].qs + QK * j);
        sum += a[b].d * fp16_to_fp32(w[b].d) * float(qsum);
    }
    return sum;
}

// Q2_K: x = d*sc_s*q - dmin*m_s per 16-element sub-block s; the mins meet Q8_K's per-16 sums (bsums).
float dot_q2_k(int64_t cols, const BlockQ2_K* w, const BlockQ8_K* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK_K; ++b) {
        int qsum = 0, msum = 0;
        for (int s = 0; s < 16; ++s) {
            int isum = 0;
            for (int e = 16 * s; e < 16 * s + 16; ++e) isum += k2_level(w[b].qs, e) * a[b].qs[e];
            qsum += (w[b].scales[s] & 15) * isum;
            msum += (w[b].scales[s] >> 4) * a[b].bsums[s];
        }
        sum += a[b].d * (fp16_to_fp32(w[b].d) * float(qsum) - fp16_to_fp32(w[b].dmin) * float(msum));
    }
    return sum;
}

// Q3_K: x = d*(s_j - 32)*level, level = q - 4 where the high bit is clear (-4..3).
float dot_q3_k(int64_t cols, const BlockQ3_K* w, const BlockQ8_K* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK_K; ++b) {
        int qsum = 0;
        for (int s = 0; s < 16; ++s) {
            int isum = 0;
            for (int e = 16 * s; e < 16 * s + 16; ++e)
                isum += (k2_level(w[b].qs, e) - (q3k_high_bit(w[b].hmask, e) ? 0 : 4)) * a[b].qs[e];
            qsum += (q3k_scale(w[b].scales, s) - 32) * isum;
        }
        sum += a[b].d * fp16_to_fp32(w[b].d) * float(qsum);
    }
    return sum;
}

// Q4_K / Q5_K: x = d*sc_j*q - dmin*m_j per 32-element sub-block j, so
// dot = d_a * (d * sum_j sc_j * sum(q*a) - dmin * sum_j m_j * sum(a)); sum(a) comes from bsums.
template <bool kFifthBit, typename Block>
float dot_q45_k(int64_t cols, const Block* w, const BlockQ8_K* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK_K; ++b) {
        int qsum = 0, msum = 0;
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            k4_scale_min(j, w[b].scales, sc, m);
            const uint8_t* q = w[b].qs + 32 * (j / 2);
            const int shift = (j & 1) * 4;
            int isum = 0;
            for (int l = 0; l < 32; ++l) {
                int v = (q[l] >> shift) & 0xf;
                if constexpr (kFifthBit) v |= ((w[b].qh[l] >> j) & 1) << 4;
                isum += v * a[b].qs[32 * j + l];
            }
            qsum += sc * isum;
            msum += m * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
        }
        sum += a[b].d * (fp16_to_fp32(w[b].d) * float(qsum) - fp16_to_fp32(w[b].dmin) * float(msum));
    }
    return sum;
}

float dot_q4_k(int64_t cols, const BlockQ4_K* w, const BlockQ8_K* a) { return dot_q45_k<false>(cols, w, a); }
float dot_q5_k(int64_t cols, const BlockQ5_K* w, const BlockQ8_K* a) { return dot_q45_k<true>(cols, w, a); }

float dot_q6_k(int64_t cols, const BlockQ6_K* w, const BlockQ8_K* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK_K; ++b) {
        int qsum = 0;
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = w[b].ql + 64 * h;
            const uint8_t* qh = w[b].qh + 32 * h;
            const int8_t* sc = w[b].scales + 8 * h;
            const int8_t* q8 = a[b].qs + 128 * h;
            for (int k = 0; k < 4; ++k) {  // element l + 32k of this half
                for (int g = 0; g < 2; ++g) {
                    int isum = 0;
                    for (int l = 16 * g; l < 16 * g + 16; ++l) {
                        const int lo = (k & 1) ? ql[l + 32] : ql[l];
                        const int v = (((k < 2) ? (lo & 0xf) : (lo >> 4)) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
                        isum += v * q8[32 * k + l];
                    }
                    qsum += sc[g + 2 * k] * isum;
                }
            }
        }
        sum += a[b].d * fp16_to_fp32(w[b].d) * float(qsum);
    }
    return sum;
}

float dot_f32_row(int64_t cols, const float* w, const float* a) { return dot_f32_scalar(w, a, cols); }
float dot_f16_row(int64_t cols, const uint16_t* w, const float* a) { return dot_f16_f32_scalar(w, a, cols); }
float dot_bf16_row(int64_t cols, const uint16_t* w, const float* a) {
    float sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += bf16_to_fp32(w[i]) * a[i];
    return sum;
}

// Every (row, token) pair independently: the reference needs no blocking.
template <typename W, typename A, float (*Dot)(int64_t, const W*, const A*)>
void tile_scalar(int64_t cols, const void* w, size_t w_stride, int nr, const void* a, size_t a_stride, int nt,
                 float* y, int64_t ldy) {
    for (int t = 0; t < nt; ++t)
        for (int r = 0; r < nr; ++r)
            y[t * ldy + r] = Dot(cols, reinterpret_cast<const W*>(static_cast<const char*>(w) + r * w_stride),
                                 reinterpret_cast<const A*>(static_cast<const char*>(a) + t * a_stride));
}

// Row i (0..kR16Rows-1) of a group of repacked rows: the same block dots and the same f32 products, in
// the same order, as dot_q8_0 / dot_q4_0 / dot_q5_0 on the file's layout (Q8_0S carries Q8_0's rounded scale).
// B: BlockQ8_0R16 or (eight rows, i < kR8Rows) BlockQ8_0R8.
template <typename B>
float dot_q8_0_rows(int64_t cols, const B* w, int i, const BlockQ8_0S* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        int isum = 0;
        for (int e = 0; e < QK; ++e) isum += q8_0_group_level(w[b], i, e) * a[b].qs[e];
        sum += fp16_to_fp32(w[b].d[i]) * a[b].d * float(isum);
    }
    return sum;
}

// Row i's stored levels of elements j and j + 16 (j < 16) in a 32-element nibble layout's G-row group block
// (quads 4 G bytes apart; with kFifthBit, Q5_0's / Q5_1's fifth bits added).
template <int G, bool kFifthBit, typename B>
std::pair<int, int> group_levels(const B& blk, int i, int j) {
    const uint8_t q = blk.qs[4 * G * (j / 4) + 4 * i + j % 4];
    int lo = q & 0xf, hi = q >> 4;
    if constexpr (kFifthBit) {
        lo |= group_fifth_bit(blk.qh, i, j) << 4;
        hi |= group_fifth_bit(blk.qh, i, j + QK / 2) << 4;
    }
    return {lo, hi};
}

// Q4_0 / Q5_0 in G-row groups (16: the AVX-512 layouts, 8: AVX2's).
template <typename B, int G, bool kFifthBit>
float dot_q45_0_rows(int64_t cols, const B* w, int i, const BlockQ8_0S* a) {
    constexpr int kOffset = kFifthBit ? 16 : 8;
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        int isum = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const auto [lo, hi] = group_levels<G, kFifthBit>(w[b], i, j);
            isum += (lo - kOffset) * a[b].qs[j] + (hi - kOffset) * a[b].qs[j + QK / 2];
        }
        sum += fp16_to_fp32(w[b].d[i]) * a[b].d * float(isum);
    }
    return sum;
}

// IQ4_NL in G-row groups: dot_iq4_nl's block dots and f32 products on Q4_0_R16's / Q4_0_R8's bytes.
template <typename B, int G>
float dot_iq4_nl_rows(int64_t cols, const B* w, int i, const BlockQ8_0S* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        int isum = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const auto [lo, hi] = group_levels<G, false>(w[b], i, j);
            isum += kIq4nlValues[lo] * a[b].qs[j] + kIq4nlValues[hi] * a[b].qs[j + QK / 2];
        }
        sum += fp16_to_fp32(w[b].d[i]) * a[b].d * float(isum);
    }
    return sum;
}

// Q4_1 / Q5_1 in G-row groups: dot_q45_1's sums and f32 products, in its order.
template <typename B, int G, bool kFifthBit>
float dot_q45_1_rows(int64_t cols, const B* w, int i, const BlockQ8_0S* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK; ++b) {
        int isum = 0, asum = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const auto [lo, hi] = group_levels<G, kFifthBit>(w[b], i, j);
            isum += lo * a[b].qs[j] + hi * a[b].qs[j + QK / 2];
            asum += a[b].qs[j] + a[b].qs[j + QK / 2];
        }
        const float da = a[b].d;
        sum += fp16_to_fp32(w[b].d[i]) * da * float(isum) + fp16_to_fp32(w[b].m[i]) * da * float(asum);
    }
    return sum;
}

// Row i of repacked K-quant blocks: each block unpacked to the file's layout, then the file's arithmetic.
template <typename P, typename F, F (*Row)(const P&, int), float (*Dot)(int64_t, const F*, const BlockQ8_K*)>
float dot_kr16(int64_t cols, const P* w, int i, const BlockQ8_K* a) {
    float sum = 0;
    for (int64_t b = 0; b < cols / QK_K; ++b) {
        const F r = Row(w[b], i);
        sum += Dot(QK_K, &r, a + b);
    }
    return sum;
}

// G: rows per interleaved group (16, or 8 for Q4_0_R8).
template <typename W, typename A, float (*Dot)(int64_t, const W*, int, const A*), int G = kR16Rows>
void tile_scalar_r16(int64_t cols, const void* w, size_t w_stride, int nr, const void* a, size_t a_stride, int nt,
                     float* y, int64_t ldy) {
    for (int t = 0; t < nt; ++t)
        for (int r = 0; r < nr; ++r)
            y[t * ldy + r] = Dot(cols, reinterpret_cast<const W*>(static_cast<const char*>(w) + (r / G) * G * w_stride),
                                 r % G, reinterpret_cast<const A*>(static_cast<const char*>(a) + t * a_stride));
}

constexpr int id(DType t) { return static_cast<int>(t); }

}  // namespace

DType activation_type(DType w) {
    switch (w) {
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::IQ4_NL:
            return DType::Q8_0;
        case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::Q4_K_R16: case DType::Q5_K_R16:
        case DType::Q3_K_R16: case DType::Q2_K_R16: case DType::Q3_K_R8: case DType::Q2_K_R8:
        case DType::IQ4_XS: case DType::IQ4_XS_R16: case DType::IQ4_XS_R8:
        case DType::Q6_K_R16: case DType::Q4_K_R8: case DType::Q5_K_R8: case DType::Q6_K_R8:
            return DType::Q8_K;
        case DType::Q8_0_R16: case DType::Q4_0_R16: case DType::Q5_0_R16: case DType::Q8_0_R8: case DType::Q4_0_R8:
        case DType::Q5_0_R8: case DType::IQ4_NL_R16: case DType::Q4_1_R16: case DType::Q5_1_R16: case DType::IQ4_NL_R8:
        case DType::Q4_1_R8: case DType::Q5_1_R8:
            return DType::Q8_0_S;
        default: return DType::F32;
    }
}

void fill_scalar(KernelSet& k) {
    k.tile[id(DType::F32)] = tile_scalar<float, float, dot_f32_row>;
    k.tile[id(DType::F16)] = tile_scalar<uint16_t, float, dot_f16_row>;
    k.tile[id(DType::BF16)] = tile_scalar<uint16_t, float, dot_bf16_row>;
    k.tile[id(DType::Q8_0)] = tile_scalar<BlockQ8_0, BlockQ8_0, dot_q8_0>;
    k.tile[id(DType::Q4_0)] = tile_scalar<BlockQ4_0, BlockQ8_0, dot_q4_0>;
    k.tile[id(DType::Q5_0)] = tile_scalar<BlockQ5_0, BlockQ8_0, dot_q5_0>;
    k.tile[id(DType::Q4_1)] = tile_scalar<BlockQ4_1, BlockQ8_0, dot_q4_1>;
    k.tile[id(DType::Q5_1)] = tile_scalar<BlockQ5_1, BlockQ8_0, dot_q5_1>;
    k.tile[id(DType::IQ4_NL)] = tile_scalar<BlockIQ4_NL, BlockQ8_0, dot_iq4_nl>;
    k.tile[id(DType::Q2_K)] = tile_scalar<BlockQ2_K, BlockQ8_K, dot_q2_k>;
    k.tile[id(DType::Q3_K)] = tile_scalar<BlockQ3_K, BlockQ8_K, dot_q3_k>;
    k.tile[id(DType::Q4_K)] = tile_scalar<BlockQ4_K, BlockQ8_K, dot_q4_k>;
    k.tile[id(DType::Q5_K)] = tile_scalar<BlockQ5_K, BlockQ8_K, dot_q5_k>;
    k.tile[id(DType::Q6_K)] = tile_scalar<BlockQ6_K, BlockQ8_K, dot_q6_k>;
    k.tile[id(DType::Q8_0_R16)] = tile_scalar_r16<BlockQ8_0R16, BlockQ8_0S, dot_q8_0_rows<BlockQ8_0R16>>;
    k.tile[id(DType::Q4_0_R16)] = tile_scalar_r16<BlockQ4_0R16, BlockQ8_0S, dot_q45_0_rows<BlockQ4_0R16, kR16Rows, false>>;
    k.tile[id(DType::Q5_0_R16)] = tile_scalar_r16<BlockQ5_0R16, BlockQ8_0S, dot_q45_0_rows<BlockQ5_0R16, kR16Rows, true>>;
    k.tile[id(DType::Q8_0_R8)] = tile_scalar_r16<BlockQ8_0R8, BlockQ8_0S, dot_q8_0_rows<BlockQ8_0R8>, kR8Rows>;
    k.tile[id(DType::Q4_0_R8)] = tile_scalar_r16<BlockQ4_0R8, BlockQ8_0S, dot_q45_0_rows<BlockQ4_0R8, kR8Rows, false>, kR8Rows>;
    k.tile[id(DType::Q5_0_R8)] = tile_scalar_r16<BlockQ5_0R8, BlockQ8_0S, dot_q45_0_rows<BlockQ5_0R8, kR8Rows, true>, kR8Rows>;
    k.tile[id(DType::IQ4_NL_R16)] = tile_scalar_r16<BlockIQ4_NLR16, BlockQ8_0S, dot_iq4_nl_rows<BlockIQ4_NLR16, kR16Rows>>;
    k.tile[id(DType::Q4_1_R16)] = tile_scalar_r16<BlockQ4_1R16, BlockQ8_0S, dot_q45_1_rows<BlockQ4_1R16, kR16Rows, false>>;
    k.tile[id(DType::Q5_1_R16)] = tile_scalar_r16<BlockQ5_1R16, BlockQ8_0S, dot_q45_1_rows<BlockQ5_1R16, kR16Rows, true>>;
    k.tile[id(DType::IQ4_NL_R8)] =
        tile_scalar_r16<BlockIQ4_NLR8, BlockQ8_0S, dot_iq4_nl_rows<BlockIQ4_NLR8, kR8Rows>, kR8Rows>;
    k.tile[id(DType::Q4_1_R8)] = tile_scalar_r16<BlockQ4_1R8, BlockQ8_0S, dot_q45_1_rows<BlockQ4_1R8, kR8Rows, false>, kR8Rows>;
    k.tile[id(DType::Q5_1_R8)] = tile_scalar_r16<BlockQ5_1R8, BlockQ8_0S, dot_q45_1_rows<BlockQ5_1R8, kR8Rows, true>, kR8Rows>;
    k.tile[id(DType::Q4_K_R16)] = tile_scalar_r16<BlockQ4_KR16, BlockQ8_K, dot_kr16<BlockQ4_KR16, BlockQ4_K, q4kr16_row, dot_q4_k>>;
    k.tile[id(DType::Q4_K_R8)] = tile_scalar_r16<BlockQ4_KR8, BlockQ8_K, dot_kr16<BlockQ4_KR8, BlockQ4_K, q4kr8_row, dot_q4_k>, kR8Rows>;
    k.tile[id(DType::Q5_K_R8)] = tile_scalar_r16<BlockQ5_KR8, BlockQ8_K, dot_kr16<BlockQ5_KR8, BlockQ5_K, q5kr8_row, dot_q5_k>, kR8Rows>;
    k.tile[id(DType::Q6_K_R8)] = tile_scalar_r16<BlockQ6_KR8, BlockQ8_K, dot_kr16<BlockQ6_KR8, BlockQ6_K, q6kr8_row, dot_q6_k>, kR8Rows>;
    k.tile[id(DType::Q5_K_R16)] = tile_scalar_r16<BlockQ5_KR16, BlockQ8_K, dot_kr16<BlockQ5_KR16, BlockQ5_K, q5kr16_row, dot_q5_k>>;
    k.tile[id(DType::Q6_K_R16)] = tile_scalar_r16<BlockQ6_KR16, BlockQ8_K, dot_kr16<BlockQ6_KR16, BlockQ6_K, q6kr16_row, dot_q6_k>>;
    k.tile[id(DType::Q3_K_R16)] = tile_scalar_r16<BlockQ3_KR16, BlockQ8_K, dot_kr16<BlockQ3_KR16, BlockQ3_K, q3kr16_row, dot_q3_k>>;
    k.tile[id(DType::Q2_K_R16)] = tile_scalar_r16<BlockQ2_KR16, BlockQ8_K, dot_kr16<BlockQ2_KR16, BlockQ2_K, q2kr16_row, dot_q2_k>>;
    k.tile[id(DType::Q3_K_R8)] = tile_scalar_r16<BlockQ3_KR8, BlockQ8_K, dot_kr16<BlockQ3_KR8, BlockQ3_K, q3kr8_row, dot_q3_k>, kR8Rows>;
    k.tile[id(DType::Q2_K_R8)] = tile_scalar_r16<BlockQ2_KR8, BlockQ8_K, dot_kr16<BlockQ2_KR8, BlockQ2_K, q2kr8_row, dot_q2_k>, kR8Rows>;
    k.tile[id(DType::IQ4_XS)] = tile_scalar<BlockIQ4_XS, BlockQ8_K, dot_iq4_xs>;
    k.tile[id(DType::IQ4_XS_R16)] =
        tile_scalar_r16<BlockIQ4_XSR16, BlockQ8_K, dot_kr16<BlockIQ4_XSR16, BlockIQ4_XS, iq4xsr16_row, dot_iq4_xs>>;
    k.tile[id(DType::IQ4_XS_R8)] =
        tile_scalar_r16<BlockIQ4_XSR8, BlockQ8_K, dot_kr16<BlockIQ4_XSR8, BlockIQ4_XS, iq4xsr8_row, dot_iq4_xs>, kR8Rows>;
    k.quantize_q8_0 = quantize_q8_0;
    k.quantize_q8_k = quantize_q8_k;
    k.quantize_q8_0s = quantize_q8_0s;
    k.dot_f32 = dot_f32_scalar;
    k.dot_f16_f32 = dot_f16_f32_scalar;
    k.axpy_f32 = axpy_f32_scalar;
    k.axpy_f16 = axpy_f16_scalar;
    k.fp32_to_fp16_row = fp32_to_fp16_row_scalar;
    k.fp16_to_fp32_row = fp16_to_fp32_row_scalar;
    k.silu_mul = silu_mul_scalar;
    k.argmax_f32 = argmax_f32_scalar;
    k.exp_sum = exp_sum_scalar;
}

}  // namespace flint::detail
