// flint/tensor/quant.h — GGUF block formats: conversion to and from f32.
// Block layouts are GGUF's (ggml's), so real files load without conversion. `*_ref` functions are the
// scalar reference every SIMD kernel is tested against.
#pragma once
#include <cstdint>
#include <cstddef>
#include <type_traits>

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
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[QK / 2]; };  // x = d * q + m, q = 0..15
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; };
// IQ4_NL: x = d * kIq4nlValues[index], the indices as Q4_0's nibbles (element j low nibble of qs[j], j + 16 high).
struct BlockIQ4_NL { uint16_t d; uint8_t qs[QK / 2]; };
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK / 2]; };  // x = d * q + m, q = 0..31
struct BlockQ8_0 { uint16_t d; int8_t qs[QK]; };
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; };
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
// Q2_K: sixteen 16-element sub-blocks, x = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4), q = 0..3;
// element 128 h + 32 k + l (h = 0..1, k = 0..3, l = 0..31) is bits 2k, 2k + 1 of qs[32 h + l].
struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
// Q3_K: sixteen 16-element sub-blocks, x = d * (s - 32) * (q - 4 * !high), s a 6-bit scale packed into 12
// bytes (q3k_scale), q = 0..3 placed in qs as Q2_K's levels, the high bit of element 128 h + 32 k + l bit 4 h + k
// of hmask[l].
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
// IQ4_XS: eight 32-element sub-blocks of IQ4_NL's indices (sub-block j in qs[16 j .. 16 j + 15] as one IQ4_NL
// block's), x = d * (s_j - 32) * kIq4nlValues[index], s_j a 6-bit scale: its low four bits nibble j % 2 of
// scales_l[j / 2], its top two bits 2 j, 2 j + 1 of scales_h (iq4xs_scale).
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
    return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xf) | (((b.scales_h >> (2 * j)) & 3) << 4);
}
inline void iq4xs_set_scale(BlockIQ4_XS& b, int j, int s) {  // the block's bits for j start cleared
    b.scales_l[j / 2] |= uint8_t((s & 0xf) << (4 * (j % 2)));
    b.scales_h |= uint16_t((s >> 4) << (2 * j));
}
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };  // activations for K-quant dots
// Sixteen rows' block b side by side (tensor/repack.h), in 4-element quads so that 32-bit lane i of a
// 512-bit register holds row i: qs[64 k + 4 i + j] is row i's element 4k + j (Q8_0, k = 0..7, made
// unsigned: level + 128) or row i's Q4_0 byte 4k + j (k = 0..3; low nibble element 4k + j, high nibble
// element 16 + 4k + j, levels + 8 as Q4_0 stores them). Then the sixteen rows' scales. Q5_0: Q4_0's
// nibbles, then per register k (elements 4k + j, k = 0..7) a 64-bit mask whose bit 4i + j is row i's fifth
// bit of that element (levels + 16 as Q5_0 stores them).
constexpr int kR16Rows = 16;  // rows per repacked group
struct BlockQ8_0R16 { uint8_t qs[kR16Rows * QK]; uint16_t d[kR16Rows]; };
struct BlockQ4_0R16 { uint8_t qs[kR16Rows * QK / 2]; uint16_t d[kR16Rows]; };
struct BlockQ5_0R16 { uint8_t qs[kR16Rows * QK / 2]; uint8_t qh[8][8]; uint16_t d[kR16Rows]; };
// Row i's fifth bit of element e (0..31) in a group's fifth-bit masks: per register e / 4, bit 4i + e % 4 of a
// 64-bit mask stored as bytes (sixteen rows) or of a 32-bit one (eight rows).
inline int group_fifth_bit(const uint8_t (&qh)[8][8], int i, int e) {
    const int bit = 4 * i + e % 4;
    return (qh[e / 4][bit / 8] >> (bit % 8)) & 1;
}
inline int group_fifth_bit(const uint32_t (&qh)[8], int i, int e) { return int((qh[e / 4] >> (4 * i + e % 4)) & 1); }
// Q4_0 for 256-bit registers (the AVX2 kernels): eight rows' block b, 32-bit lane i of a register = row i,
// qs[32 k + 4 i + c] = row i's Q4_0 byte 4k + c (k = 0..3: low nibble element 4k + c, high nibble element
// 16 + 4k + c), then the eight rows' scales.
constexpr int kR8Rows = 8;
struct BlockQ4_0R8 { uint8_t qs[kR8Rows * QK / 2]; uint16_t d[kR8Rows]; };
// Q5_0 likewise, Q4_0_R8's nibbles plus per register k (elements 4k + c, k = 0..7) a 32-bit mask whose bit
// 4 i + c is row i's fifth bit of that element.
struct BlockQ5_0R8 { uint8_t qs[kR8Rows * QK / 2]; uint32_t qh[8]; uint16_t d[kR8Rows]; };
// Q8_0 likewise: qs[32 k + 4 i + c] = row i's level of element 4k + c (k = 0..7), signed as in the file
// (without VNNI there is no unsigned-by-signed dot that takes 8-bit levels up to 255 without saturating).
struct BlockQ8_0R8 { int8_t qs[kR8Rows * QK]; uint16_t d[kR8Rows]; };
// IQ4_NL in G-row groups: Q4_0_R16's / Q4_0_R8's bytes, the nibbles being indices into kIq4nlValues.
using BlockIQ4_NLR16 = BlockQ4_0R16;
using BlockIQ4_NLR8 = BlockQ4_0R8;
// Q4_1 / Q5_1 in G-row groups: Q4_0's / Q5_0's group layout (nibbles, fifth-bit masks, scales), then the
// rows' minima (x = d * q + m, q = 0..15 or 0..31 as stored).
struct BlockQ4_1R16 { uint8_t qs[kR16Rows * QK / 2]; uint16_t d[kR16Rows]; uint16_t m[kR16Rows]; };
struct BlockQ5_1R16 { uint8_t qs[kR16Rows * QK / 2]; uint8_t qh[8][8]; uint16_t d[kR16Rows]; uint16_t m[kR16Rows]; };
struct BlockQ4_1R8 { uint8_t qs[kR8Rows * QK / 2]; uint16_t d[kR8Rows]; uint16_t m[kR8Rows]; };
struct BlockQ5_1R8 { uint8_t qs[kR8Rows * QK / 2]; uint32_t qh[8]; uint16_t d[kR8Rows]; uint16_t m[kR8Rows]; };
// Row i of a 32-element nibble layout's group block B (G rows) back in the file's block F (BlockQ4_0,
// BlockIQ4_NL, BlockQ4_1, BlockQ5_0 or BlockQ5_1): its scale, minimum, nibble bytes and fifth bits.
template <typename F, typename B>
inline F nibble_group_row(const B& b, int i) {
    constexpr int G = int(sizeof(b.d) / sizeof(b.d[0]));
    F r{};
    r.d = b.d[i];
    if constexpr (requires { r.m; }) r.m = b.m[i];
    for (int j = 0; j < QK / 2; ++j) r.qs[j] = b.qs[4 * G * (j / 4) + 4 * i + j % 4];
    if constexpr (requires { r.qh; }) {
        uint32_t qh = 0;  // bit e = element e's fifth bit, stored little-endian as the file has it
        for (int e = 0; e < QK; ++e) qh |= uint32_t(group_fifth_bit(b.qh, i, e)) << e;
        for (int k = 0; k < 4; ++k) r.qh[k] = uint8_t(qh >> (8 * k));
    }
    return r;
}
// Row i's level of element e in a repacked Q8_0 block: quads 4 G bytes apart (G = the block's rows), stored
// + 128 as unsigned bytes in BlockQ8_0R16, as they are in BlockQ8_0R8.
template <typename B>
inline int q8_0_group_level(const B& b, int i, int e) {
    constexpr int G = int(sizeof(B::qs)) / QK;
    const int q = b.qs[4 * G * (e / 4) + 4 * i + e % 4];
    return std::is_unsigned_v<std::remove_extent_t<decltype(B::qs)>> ? q - 128 : q;
}
// Row i of a repacked Q8_0 block, back in the file's layout.
template <typename B>
inline BlockQ8_0 q8_0_group_row(const B& b, int i) {
    BlockQ8_0 r{};
    r.d = b.d[i];
    for (int e = 0; e < QK; ++e) r.qs[e] = int8_t(q8_0_group_level(b, i, e));
    return r;
}
// Row i's nibble of sub-block element e (0..31) in a Q4_K_R16 / Q5_K_R16 sub-block's 256 nibble bytes (or,
// with G = 8, a Q4_K_R8 sub-block's 128).
template <int G = 16>
inline uint8_t kr16_nibble(const uint8_t* nib, int i, int e) {
    const uint8_t q = nib[4 * G * ((e % 16) / 4) + 4 * i + e % 4];
    return e < 16 ? (q & 0xf) : (q >> 4);
}
// Q4_K: super-block b of sixteen rows. Sub-block j (32 elements) as Q4_0_R16's nibbles: qs[j][64 k + 4 i + c]
// holds row i's element 4k + c (low nibble) and 16 + 4k + c (high nibble), k = 0..3; then the rows' 12
// scale bytes as three 32-bit words, word w of row i at sc[w][i]; then the rows' d and dmin.
struct BlockQ4_KR16 { uint8_t qs[8][256]; uint32_t sc[3][kR16Rows]; uint16_t d[kR16Rows]; uint16_t dmin[kR16Rows]; };
// Row i of a repacked Q4_K / Q5_K block of G rows into the file's block r (BlockQ4_K or BlockQ5_K, cleared):
// d, dmin, the scale bytes and the nibbles, sub-block j's G-row nibble bytes being nib(j).
template <int G, typename B, typename R, typename Nib>
inline void k4_group_row(const B& b, int i, R& r, Nib nib) {
    r.d = b.d[i];
    r.dmin = b.dmin[i];
    for (int w = 0; w < 3; ++w) __builtin_memcpy(r.scales + 4 * w, &b.sc[w][i], 4);
    for (int j = 0; j < 8; ++j)      // file: sub-block j is the low (j even) or high (j odd) nibbles of
        for (int e = 0; e < 32; ++e) {  // qs[32 (j / 2) + e]
            const uint8_t v = kr16_nibble<G>(nib(j), i, e);
            uint8_t& dst = r.qs[32 * (j / 2) + e];
            dst = j % 2 == 0 ? uint8_t((dst & 0xf0) | v) : uint8_t((dst & 0x0f) | (v << 4));
        }
}
// Row i of a repacked Q4_K block (sixteen rows, or G = 8: BlockQ4_KR8 below), back in the file's layout.
template <int G, typename B>
inline BlockQ4_K q4k_group_row(const B& b, int i) {
    BlockQ4_K r{};
    k4_group_row<G>(b, i, r, [&](int j) { return b.qs[j]; });
    return r;
}
inline BlockQ4_K q4kr16_row(const BlockQ4_KR16& b, int i) { return q4k_group_row<16>(b, i); }
// Q4_K for 256-bit registers (the AVX2 kernels): Q4_K_R16 with eight rows, sub-block j's nibbles as
// Q4_0_R8's (qs[j][32 k + 4 i + c]), the scale words sc[w][i], then d and dmin.
struct BlockQ4_KR8 { uint8_t qs[8][128]; uint32_t sc[3][kR8Rows]; uint16_t d[kR8Rows]; uint16_t dmin[kR8Rows]; };
inline BlockQ4_K q4kr8_row(const BlockQ4_KR8& b, int i) { return q4k_group_row<kR8Rows>(b, i); }
// Q5_K likewise: per sub-block its nibbles as Q4_K_R8's and a 32-bit fifth-bit mask per register (bit 4 i + c
// = row i's fifth bit of sub-block element 4k + c, as Q5_0_R8 has them).
struct Q5KR8Sub { uint8_t nib[128]; uint32_t qh[8]; };
struct BlockQ5_KR8 { Q5KR8Sub s[8]; uint32_t sc[3][kR8Rows]; uint16_t d[kR8Rows]; uint16_t dmin[kR8Rows]; };
// Q5_K: Q4_K_R16's nibbles and scale words, each sub-block's fifth bits beside its nibbles as Q5_0_R16 has
// them: s[j].qh[k] is a 64-bit mask whose bit 4 i + c is row i's fifth bit of sub-block element 4k + c
// (the register k that load_nibbles makes from s[j].nib holds those elements).
struct Q5KR16Sub { uint8_t nib[256]; uint8_t qh[8][8]; };
struct BlockQ5_KR16 { Q5KR16Sub s[8]; uint32_t sc[3][kR16Rows]; uint16_t d[kR16Rows]; uint16_t dmin[kR16Rows]; };
// Row i's fifth bit of sub-block element e in a repacked Q5_K sub-block (sixteen rows: a 64-bit mask per
// register as bytes; eight: a 32-bit one).
inline int q5k_fifth_bit(const Q5KR16Sub& s, int i, int e) {
    const int bit = 4 * i + e % 4;
    return (s.qh[e / 4][bit / 8] >> (bit % 8)) & 1;
}
inline int q5k_fifth_bit(const Q5KR8Sub& s, int i, int e) { return int((s.qh[e / 4] >> (4 * i + e % 4)) & 1); }
// Row i of a repacked Q5_K block (G rows), back in the file's layout.
template <int G, typename B>
inline BlockQ5_K q5k_group_row(const B& b, int i) {
    BlockQ5_K r{};
    k4_group_row<G>(b, i, r, [&](int j) { return b.s[j].nib; });
    for (int j = 0; j < 8; ++j)  // file: as Q4_K, plus bit j of qh[e] for sub-block j's element e
        for (int e = 0; e < 32; ++e) r.qh[e] |= uint8_t(q5k_fifth_bit(b.s[j], i, e) << j);
    return r;
}
inline BlockQ5_K q5kr16_row(const BlockQ5_KR16& b, int i) { return q5k_group_row<kR16Rows>(b, i); }
inline BlockQ5_K q5kr8_row(const BlockQ5_KR8& b, int i) { return q5k_group_row<kR8Rows>(b, i); }
// Writes Q6_K's level (0..63, standing for level - 32) of element e (0..255) in the file's layout.
inline void q6k_set_level(BlockQ6_K& b, int e, int level) {  // the block's bits for e start cleared
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    b.ql[64 * h + l + ((k & 1) ? 32 : 0)] |= uint8_t((k < 2) ? (level & 0xf) : ((level & 0xf) << 4));
    b.qh[32 * h + l] |= uint8_t(((level >> 4) & 3) << (2 * k));
}
// Q6_K: super-block b of sixteen rows, per pair P of 16-element sub-blocks (elements 32P .. 32P + 31, register
// k = 0..7 holding elements 32P + 4k + c): the levels' low four bits as Q4_0_R16's nibbles (p[P].nib[64 (k % 4)
// + 4 i + c], low nibble for k < 4), their top two bits in p[P].hi[k / 4][4 i + c] at bit 2 (k % 4); the rows'
// int8 scales of sub-blocks 2P and 2P + 1 side by side (sc[P][2 i], sc[P][2 i + 1]); each pair's bytes
// together (one sequential stream: split into three arrays the hardware prefetcher lost track and decode
// ran at half speed); then the rows' d.
struct Q6KR16Pair { uint8_t nib[256]; uint8_t hi[2][64]; int8_t sc[32]; };
struct BlockQ6_KR16 { Q6KR16Pair p[8]; uint16_t d[kR16Rows]; };
// Q6_K for 256-bit registers (the AVX2 kernels): the same with eight rows, nib[32 (k % 4) + 4 i + c].
struct Q6KR8Pair { uint8_t nib[128]; uint8_t hi[2][32]; int8_t sc[16]; };
struct BlockQ6_KR8 { Q6KR8Pair p[8]; uint16_t d[kR8Rows]; };
// Row i of a repacked Q6_K block (G rows), back in the file's layout.
template <int G, typename B>
inline BlockQ6_K q6k_group_row(const B& b, int i) {
    BlockQ6_K r{};
    r.d = b.d[i];
    for (int P = 0; P < 8; ++P) {
        r.scales[2 * P] = b.p[P].sc[2 * i];
        r.scales[2 * P + 1] = b.p[P].sc[2 * i + 1];
        for (int idx = 0; idx < 32; ++idx) {
            const int k = idx / 4, c = idx % 4;
            const uint8_t n = b.p[P].nib[4 * G * (k % 4) + 4 * i + c];
            const int lo = k < 4 ? (n & 0xf) : (n >> 4);
            const int hi = (b.p[P].hi[k / 4][4 * i + c] >> (2 * (k % 4))) & 3;
            q6k_set_level(r, 32 * P + idx, lo | (hi << 4));
        }
    }
    return r;
}
inline BlockQ6_K q6kr16_row(const BlockQ6_KR16& b, int i) { return q6k_group_row<kR16Rows>(b, i); }
inline BlockQ6_K q6kr8_row(const BlockQ6_KR8& b, int i) { return q6k_group_row<kR8Rows>(b, i); }
// Row i's level (0..3) of pair element idx (0..31) in the two-bit fields of Q3_K's / Q2_K's group layouts:
// lo[k / 4][4 i + c] at bit 2 (k % 4) for element 4k + c (N = 4 G bytes: 64 for sixteen rows, 32 for eight).
template <size_t N>
inline int k16_two_bits(const uint8_t (&lo)[2][N], int i, int idx) {
    const int k = idx / 4, c = idx % 4;
    return (lo[k / 4][4 * i + c] >> (2 * (k % 4))) & 3;
}
// Q3_K: super-block b of sixteen rows, per pair P of 16-element sub-blocks (elements 32P .. 32P + 31, register
// k = 0..7 holding elements 32P + 4k + c): each level's two low bits in p[P].lo (k16_two_bits, as Q6_K_R16's
// top bits), its high bit (+4) in p[P].hb[k], a 64-bit mask whose bit 4 i + c is row i's (as Q5_0_R16's fifth
// bits); the level, 0..7, stands for level - 4. Then the rows' 12 scale bytes as three 32-bit words, word w of
// row i at sc[w][i] (Q4_K_R16's), and their d.
struct Q3KR16Pair { uint8_t lo[2][64]; uint8_t hb[8][8]; };
struct BlockQ3_KR16 { Q3KR16Pair p[8]; uint32_t sc[3][kR16Rows]; uint16_t d[kR16Rows]; };
// Q3_K for 256-bit registers (the AVX2 kernels): the same with eight rows, but the high bits as a byte plane,
// bit k of hb[4 i + c] for element 4k + c (a shift and an AND a register, where 32-bit masks took five).
struct Q3KR8Pair { uint8_t lo[2][32]; uint8_t hb[32]; };
inline int group_fifth_bit(const uint8_t (&hb)[32], int i, int e) { return (hb[4 * i + e % 4] >> (e / 4)) & 1; }
struct BlockQ3_KR8 { Q3KR8Pair p[8]; uint32_t sc[3][kR8Rows]; uint16_t d[kR8Rows]; };
// Q2_K: super-block b of sixteen rows, per pair P of 16-element sub-blocks: the levels (0..3) as Q3_K_R16's
// two-bit fields, then the rows' scale bytes of sub-blocks 2P and 2P + 1 side by side (sc[2 i], sc[2 i + 1]:
// scale in the low nibble, min in the high one, as the file has them); then the rows' d and dmin.
struct Q2KR16Pair { uint8_t lo[2][64]; uint8_t sc[32]; };
struct BlockQ2_KR16 { Q2KR16Pair p[8]; uint16_t d[kR16Rows]; uint16_t dmin[kR16Rows]; };
// Q2_K for 256-bit registers: the same with eight rows.
struct Q2KR8Pair { uint8_t lo[2][32]; uint8_t sc[16]; };
struct BlockQ2_KR8 { Q2KR8Pair p[8]; uint16_t d[kR8Rows]; uint16_t dmin[kR8Rows]; };
// Row i of a repacked Q2_K block (sixteen or eight rows), back in the file's layout.
template <typename B>
inline BlockQ2_K q2k_group_row(const B& b, int i) {
    BlockQ2_K r{};
    r.d = b.d[i];
    r.dmin = b.dmin[i];
    for (int e = 0; e < QK_K; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        r.qs[32 * h + l] |= uint8_t(k16_two_bits(b.p[e / 32].lo, i, e % 32) << (2 * k));
    }
    for (int P = 0; P < 8; ++P) {
        r.scales[2 * P] = b.p[P].sc[2 * i];
        r.scales[2 * P + 1] = b.p[P].sc[2 * i + 1];
    }
    return r;
}
inline BlockQ2_K q2kr16_row(const BlockQ2_KR16& b, int i) { return q2k_group_row(b, i); }
inline BlockQ2_K q2kr8_row(const BlockQ2_KR8& b, int i) { return q2k_group_row(b, i); }
// Row i of a repacked Q3_K block (sixteen or eight rows), back in the file's layout (level 0..7 = the two low
// bits in qs, the high bit in hmask, as quant_internal.h's k2_level and q3k_high_bit read them).
template <typename B>
inline BlockQ3_K q3k_group_row(const B& b, int i) {
    BlockQ3_K r{};
    r.d = b.d[i];
    for (int w = 0; w < 3; ++w) __builtin_memcpy(r.scales + 4 * w, &b.sc[w][i], 4);
    for (int e = 0; e < QK_K; ++e) {
        const auto& p = b.p[e / 32];
        const int level = k16_two_bits(p.lo, i, e % 32) | (group_fifth_bit(p.hb, i, e % 32) << 2);
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        r.qs[32 * h + l] |= uint8_t((level & 3) << (2 * k));
        r.hmask[l] |= uint8_t((level >> 2) << (4 * h + k));
    }
    return r;
}
inline BlockQ3_K q3kr16_row(const BlockQ3_KR16& b, int i) { return q3k_group_row(b, i); }
inline BlockQ3_K q3kr8_row(const BlockQ3_KR8& b, int i) { return q3k_group_row(b, i); }
// IQ4_XS: super-block b of G rows (sixteen, or eight for the AVX2 kernels). Sub-block j's indices as Q4_0_R16's /
// Q4_0_R8's nibbles (qs[j][4 G k + 4 i + c]: row i's elements 4k + c, low nibble, and 16 + 4k + c, high); then
// the rows' eight 6-bit scales in six bytes, arranged as Q4_K_R16 keeps its scales so that two registers of
// four bytes a lane hold all eight: sa[i] byte q = scale q (q < 4) in bits 0..5 and the top two bits of scale
// q + 4 in bits 6, 7; sb[i] nibble q = the low four bits of scale q + 4; then the rows' d.
template <int G>
struct BlockIQ4_XSG { uint8_t qs[8][G * QK / 2]; uint32_t sa[G]; uint16_t sb[G]; uint16_t d[G]; };
using BlockIQ4_XSR16 = BlockIQ4_XSG<kR16Rows>;
using BlockIQ4_XSR8 = BlockIQ4_XSG<kR8Rows>;
// Row i's scale j (0..63, standing for s - 32) in a repacked IQ4_XS block.
template <int G>
inline int iq4xs_group_scale(const BlockIQ4_XSG<G>& b, int i, int j) {
    const int byte = (b.sa[i] >> (8 * (j % 4))) & 0xff;
    return j < 4 ? (byte & 0x3f) : (((b.sb[i] >> (4 * (j - 4))) & 0xf) | ((byte >> 6) << 4));
}
// Row i of a repacked IQ4_XS block, back in the file's layout.
template <int G>
inline BlockIQ4_XS iq4xs_group_row(const BlockIQ4_XSG<G>& b, int i) {
    BlockIQ4_XS r{};
    r.d = b.d[i];
    for (int j = 0; j < 8; ++j) {
        iq4xs_set_scale(r, j, iq4xs_group_scale(b, i, j));
        for (int e = 0; e < QK / 2; ++e) r.qs[16 * j + e] = b.qs[j][4 * G * (e / 4) + 4 * i + e % 4];
    }
    return r;
}
inline BlockIQ4_XS iq4xsr16_row(const BlockIQ4_XSR16& b, int i) { return iq4xs_group_row(b, i); }
inline BlockIQ4_XS iq4xsr8_row(const BlockIQ4_XSR8& b, int i) { return iq4xs_group_row(b, i); }
// Activations for the _R16 kernels: Q8_0's levels and (fp16-rounded) scale, the scale as f32 and
// ofs = -128 * (sum of the levels): the unsigned Q8_0 weight levels' offset correction (Q4_0's, -8 * sum, is
// ofs / 16), once per block instead of per row.
struct BlockQ8_0S { int8_t qs[QK]; float d; int32_t ofs; };
static_assert(sizeof(BlockQ8_0R16) == 16 * 34 && sizeof(BlockQ4_0R16) == 16 * 18 && sizeof(BlockQ5_0R16) == 16 * 22 &&
              sizeof(BlockQ4_KR16) == 16 * 144 && sizeof(BlockQ6_KR16) == 16 * 210 &&
              sizeof(BlockQ5_KR16) == 16 * 176 && sizeof(BlockQ8_0S) == 40 && sizeof(BlockQ3_KR16) == 16 * 110 &&
              sizeof(BlockQ2_KR16) == 16 * 84 && sizeof(BlockQ3_KR8) == 8 * 110 && sizeof(BlockQ2_KR8) == 8 * 84);
static_assert(sizeof(BlockQ4_1R16) == 16 * 20 && sizeof(BlockQ5_1R16) == 16 * 24 && sizeof(BlockQ4_1R8) == 8 * 20 &&
              sizeof(BlockQ5_1R8) == 8 * 24);
static_assert(sizeof(BlockQ8_0R8) == 8 * 34 && sizeof(BlockQ4_0R8) == 8 * 18 && sizeof(BlockQ5_0R8) == 8 * 22 && sizeof(BlockQ4_KR8) == 8 * 144 &&
              sizeof(BlockQ5_KR8) == 8 * 176 && sizeof(BlockQ6_KR8) == 8 * 210);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 &&
              sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockIQ4_XSR16) == 16 * 136 && sizeof(BlockIQ4_XSR8) == 8 * 136);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// ---- whole rows ------------------------------------------------------------------------------------
// n must be a multiple of the type's block size. Types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL,
// IQ4_XS, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (and Q8_K for activations). Throws flint::Error for types it cannot convert.
void quantize_row_ref(DType t, const float* x, void* out, int64_t n);
void dequantize_row_ref(DType t, const void* in, float* out, int64_t n);
bool can_quantize(DType t);    // quantize_row_ref supports it
bool can_dequantize(DType t);  // dequantize_row_ref supports it

}  // namespace flint
