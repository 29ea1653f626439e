#include "tensor/repack.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "tensor/kernels.h"
#include "tensor/quant.h"
#include "tensor/quant_internal.h"
#include "util/error.h"

namespace flint {
namespace {

// G rows of nb blocks each (`rows`, back to back as in the file) -> nb repacked blocks: G = 16
// (BlockQ8_0R16, levels + 128 as unsigned bytes) or 8 (BlockQ8_0R8, signed); see q8_0_group_level.
template <typename B>
void pack_q8_0(const BlockQ8_0* rows, int64_t nb, B* out) {
    using Q = std::remove_extent_t<decltype(B::qs)>;
    constexpr int G = int(sizeof(B::qs)) / QK;
    constexpr uint8_t kFlip = std::is_unsigned_v<Q> ? 0x80 : 0;
    for (int64_t b = 0; b < nb; ++b) {
        for (int i = 0; i < G; ++i) {
            const BlockQ8_0& src = rows[i * nb + b];
            for (int e = 0; e < QK; ++e) out[b].qs[4 * G * (e / 4) + 4 * i + e % 4] = Q(uint8_t(src.qs[e]) ^ kFlip);
            out[b].d[i] = src.d;
        }
    }
}

// Q4_0, IQ4_NL, Q4_1, Q5_0 or Q5_1 rows (Src) in G-row groups (16 or 8): row i's nibble byte j at quad j / 4,
// 4 G bytes per quad, its scale and (Q4_1, Q5_1) its minimum.
template <int G, typename Src, typename B>
void pack_nibble_rows(const Src* rows, int64_t nb, B* out) {
    for (int64_t b = 0; b < nb; ++b) {
        for (int i = 0; i < G; ++i) {
            const Src& src = rows[i * nb + b];
            for (int j = 0; j < QK / 2; ++j) out[b].qs[4 * G * (j / 4) + 4 * i + j % 4] = src.qs[j];
            out[b].d[i] = src.d;
            if constexpr (requires { src.m; }) out[b].m[i] = src.m;
        }
    }
}

// Row i's fifth bit of element e (of a Q5_0 block or a Q5_K sub-block) set in the repacked masks: register
// e / 4, bit 4i + e % 4 (sixteen rows: 64-bit masks as bytes; eight rows: 32-bit masks).
void set_fifth_bit(uint8_t (&qh)[8][8], int i, int e) {
    const int bit = 4 * i + e % 4;
    qh[e / 4][bit / 8] |= uint8_t(1u << (bit % 8));
}
void set_fifth_bit(uint32_t (&qh)[8], int i, int e) { qh[e / 4] |= 1u << (4 * i + e % 4); }
void set_fifth_bit(uint8_t (&hb)[32], int i, int e) { hb[4 * i + e % 4] |= uint8_t(1u << (e / 4)); }  // Q3_K_R8's plane

// Q5_0 or Q5_1 (Src): the nibbles as above, the fifth bits into the group's masks.
template <int G, typename Src, typename B>
void pack_q5(const Src* rows, int64_t nb, B* out) {
    pack_nibble_rows<G>(rows, nb, out);
    for (int64_t b = 0; b < nb; ++b) {
        std::memset(out[b].qh, 0, sizeof(out[b].qh));
        for (int i = 0; i < G; ++i) {
            const uint32_t qh = detail::q5_high_bits(rows[i * nb + b].qh);
            for (int e = 0; e < QK; ++e)
                if ((qh >> e) & 1) set_fifth_bit(out[b].qh, i, e);
        }
    }
}

// Row i of a Q4_K / Q5_K super-block into a sixteen-row block: its d, dmin and scale words, and each
// sub-block j's nibbles (elements e and 16 + e share a byte, as Q4_0_R16's do) into nib(j).
template <int G = kR16Rows, typename Src, typename Dst, typename Nib>
void pack_k4_row(const Src& src, int i, Dst& out, Nib nib) {
    out.d[i] = src.d;
    out.dmin[i] = src.dmin;
    for (int w = 0; w < 3; ++w) std::memcpy(&out.sc[w][i], src.scales + 4 * w, 4);
    for (int j = 0; j < 8; ++j) {
        const uint8_t* q = src.qs + 32 * (j / 2);
        const int shift = (j % 2) * 4;
        for (int e = 0; e < 16; ++e) {
            const uint8_t lo = (q[e] >> shift) & 0xf, hi = (q[e + 16] >> shift) & 0xf;
            nib(j)[4 * G * (e / 4) + 4 * i + e % 4] = uint8_t(lo | (hi << 4));
        }
    }
}

template <int G, typename B>
void pack_q4_k(const BlockQ4_K* rows, int64_t nb, B* out) {
    for (int64_t b = 0; b < nb; ++b)
        for (int i = 0; i < G; ++i) pack_k4_row<G>(rows[i * nb + b], i, out[b], [&](int j) { return out[b].qs[j]; });
}

template <int G, typename B>
void pack_q5_k(const BlockQ5_K* rows, int64_t nb, B* out) {
    for (int64_t b = 0; b < nb; ++b) {
        std::memset(&out[b], 0, sizeof(B));
        for (int i = 0; i < G; ++i) {
            const BlockQ5_K& src = rows[i * nb + b];
            pack_k4_row<G>(src, i, out[b], [&](int j) { return out[b].s[j].nib; });
            for (int j = 0; j < 8; ++j)
                for (int e = 0; e < 32; ++e)  // element e's fifth bit is bit j of qh[e]
                    if ((src.qh[e] >> j) & 1) set_fifth_bit(out[b].s[j].qh, i, e);
        }
    }
}

// Q6_K in G-row groups (BlockQ6_KR16, or BlockQ6_KR8 with G = 8).
template <int G, typename B>
void pack_q6_k(const BlockQ6_K* rows, int64_t nb, B* out) {
    for (int64_t b = 0; b < nb; ++b) {
        std::memset(&out[b], 0, sizeof(B));
        for (int i = 0; i < G; ++i) {
            const BlockQ6_K& src = rows[i * nb + b];
            out[b].d[i] = src.d;
            uint8_t level_of[QK_K];  // all levels first, a byte of ql / qh at a time
            for (int h = 0; h < 2; ++h)
                for (int l = 0; l < 32; ++l) {
                    const uint8_t a = src.ql[64 * h + l], b2 = src.ql[64 * h + l + 32], q = src.qh[32 * h + l];
                    level_of[128 * h + l] = uint8_t((a & 0xf) | ((q & 3) << 4));
                    level_of[128 * h + l + 32] = uint8_t((b2 & 0xf) | (((q >> 2) & 3) << 4));
                    level_of[128 * h + l + 64] = uint8_t((a >> 4) | (((q >> 4) & 3) << 4));
                    level_of[128 * h + l + 96] = uint8_t((b2 >> 4) | (((q >> 6) & 3) << 4));
                }
            for (int P = 0; P < 8; ++P) {
                out[b].p[P].sc[2 * i] = src.scales[2 * P];
                out[b].p[P].sc[2 * i + 1] = src.scales[2 * P + 1];
                for (int idx = 0; idx < 32; ++idx) {
                    const int level = level_of[32 * P + idx], k = idx / 4, c = idx % 4;
                    out[b].p[P].nib[4 * G * (k % 4) + 4 * i + c] |= uint8_t(k < 4 ? (level & 0xf) : ((level & 0xf) << 4));
                    out[b].p[P].hi[k / 4][4 * i + c] |= uint8_t((level >> 4) << (2 * (k % 4)));
                }
            }
        }
    }
}

// Q3_K in G-row groups (BlockQ3_KR16, BlockQ3_KR8): each level's low bits and high bit into its pair's planes.
template <int G, typename B>
void pack_q3_k(const BlockQ3_K* rows, int64_t nb, B* out) {
    for (int64_t b = 0; b < nb; ++b) {
        std::memset(&out[b], 0, sizeof(B));
        for (int i = 0; i < G; ++i) {
            const BlockQ3_K& src = rows[i * nb + b];
            out[b].d[i] = src.d;
            for (int w = 0; w < 3; ++w) std::memcpy(&out[b].sc[w][i], src.scales + 4 * w, 4);
            for (int e = 0; e < QK_K; ++e) {
                auto& p = out[b].p[e / 32];
                const int idx = e % 32, k = idx / 4, c = idx % 4;
                p.lo[k / 4][4 * i + c] |= uint8_t(detail::k2_level(src.qs, e) << (2 * (k % 4)));
                if (detail::q3k_high_bit(src.hmask, e)) set_fifth_bit(p.hb, i, idx);
            }
        }
    }
}

// Q2_K in G-row groups (BlockQ2_KR16, BlockQ2_KR8): the levels as Q3_K's low bits, each pair's scale bytes
// beside them.
template <int G, typename B>
void pack_q2_k(const BlockQ2_K* rows, int64_t nb, B* out) {
    for (int64_t b = 0; b < nb; ++b) {
        std::memset(&out[b], 0, sizeof(B));
        for (int i = 0; i < G; ++i) {
            const BlockQ2_K& src = rows[i * nb + b];
            out[b].d[i] = src.d;
            out[b].dmin[i] = src.dmin;
            for (int P = 0; P < 8; ++P) {
                out[b].p[P].sc[2 * i] = src.scales[2 * P];
                out[b].p[P].sc[2 * i + 1] = src.scales[2 * P + 1];
            }
            for (int e = 0; e < QK_K; ++e) {
                const int idx = e % 32, k = idx / 4, c = idx % 4;
                out[b].p[e / 32].lo[k / 4][4 * i + c] |= uint8_t(detail::k2_level(src.qs, e) << (2 * (k % 4)));
            }
        }
    }
}

// IQ4_XS in G-row groups (BlockIQ4_XSR16, BlockIQ4_XSR8): each sub-block's index bytes as Q4_0's in its group
// layout, the eight 6-bit scales rearranged into sa / sb (quant.h), d as it is.
template <int G>
void pack_iq4_xs(const BlockIQ4_XS* rows, int64_t nb, BlockIQ4_XSG<G>* out) {
    for (int64_t b = 0; b < nb; ++b) {
        for (int i = 0; i < G; ++i) {
            const BlockIQ4_XS& src = rows[i * nb + b];
            uint32_t sa = 0;
            uint16_t sb = 0;
            for (int j = 0; j < 8; ++j) {
                const uint32_t s = uint32_t(iq4xs_scale(src, j));
                if (j < 4) sa |= s << (8 * j);
                else sa |= (s >> 4) << (8 * (j - 4) + 6), sb = uint16_t(sb | ((s & 0xf) << (4 * (j - 4))));
                for (int e = 0; e < QK / 2; ++e) out[b].qs[j][4 * G * (e / 4) + 4 * i + e % 4] = src.qs[16 * j + e];
            }
            out[b].sa[i] = sa;
            out[b].sb[i] = sb;
            out[b].d[i] = src.d;
        }
    }
}

// Every layout repack_rows makes, the file type it is made from, and its packer (sixteen / eight rows of nb
// blocks in, nb interleaved blocks out).
struct Packer {
    DType from, to;
    void (*pack)(const uint8_t* rows, int64_t nb, uint8_t* out);
};
template <typename Src, typename Dst, void (*F)(const Src*, int64_t, Dst*)>
void pack_bytes(const uint8_t* rows, int64_t nb, uint8_t* out) {
    F(reinterpret_cast<const Src*>(rows), nb, reinterpret_cast<Dst*>(out));
}
constexpr Packer kPackers[] = {
    {DType::Q8_0, DType::Q8_0_R16, pack_bytes<BlockQ8_0, BlockQ8_0R16, pack_q8_0<BlockQ8_0R16>>},
    {DType::Q4_0, DType::Q4_0_R16, pack_bytes<BlockQ4_0, BlockQ4_0R16, pack_nibble_rows<kR16Rows>>},
    {DType::Q5_0, DType::Q5_0_R16, pack_bytes<BlockQ5_0, BlockQ5_0R16, pack_q5<kR16Rows>>},
    {DType::Q4_K, DType::Q4_K_R16, pack_bytes<BlockQ4_K, BlockQ4_KR16, pack_q4_k<kR16Rows>>},
    {DType::Q5_K, DType::Q5_K_R16, pack_bytes<BlockQ5_K, BlockQ5_KR16, pack_q5_k<kR16Rows>>},
    {DType::Q6_K, DType::Q6_K_R16, pack_bytes<BlockQ6_K, BlockQ6_KR16, pack_q6_k<kR16Rows>>},
    {DType::Q8_0, DType::Q8_0_R8, pack_bytes<BlockQ8_0, BlockQ8_0R8, pack_q8_0<BlockQ8_0R8>>},
    {DType::Q4_0, DType::Q4_0_R8, pack_bytes<BlockQ4_0, BlockQ4_0R8, pack_nibble_rows<kR8Rows>>},
    {DType::Q5_0, DType::Q5_0_R8, pack_bytes<BlockQ5_0, BlockQ5_0R8, pack_q5<kR8Rows>>},
    {DType::Q4_K, DType::Q4_K_R8, pack_bytes<BlockQ4_K, BlockQ4_KR8, pack_q4_k<kR8Rows>>},
    {DType::Q5_K, DType::Q5_K_R8, pack_bytes<BlockQ5_K, BlockQ5_KR8, pack_q5_k<kR8Rows>>},
    {DType::Q6_K, DType::Q6_K_R8, pack_bytes<BlockQ6_K, BlockQ6_KR8, pack_q6_k<kR8Rows>>},
    {DType::IQ4_NL, DType::IQ4_NL_R16, pack_bytes<BlockIQ4_NL, BlockIQ4_NLR16, pack_nibble_rows<kR16Rows>>},
    {DType::Q4_1, DType::Q4_1_R16, pack_bytes<BlockQ4_1, BlockQ4_1R16, pack_nibble_rows<kR16Rows>>},
    {DType::Q5_1, DType::Q5_1_R16, pack_bytes<BlockQ5_1, BlockQ5_1R16, pack_q5<kR16Rows>>},
    {DType::IQ4_NL, DType::IQ4_NL_R8, pack_bytes<BlockIQ4_NL, BlockIQ4_NLR8, pack_nibble_rows<kR8Rows>>},
    {DType::Q4_1, DType::Q4_1_R8, pack_bytes<BlockQ4_1, BlockQ4_1R8, pack_nibble_rows<kR8Rows>>},
    {DType::Q5_1, DType::Q5_1_R8, pack_bytes<BlockQ5_1, BlockQ5_1R8, pack_q5<kR8Rows>>},
    {DType::Q3_K, DType::Q3_K_R16, pack_bytes<BlockQ3_K, BlockQ3_KR16, pack_q3_k<kR16Rows>>},
    {DType::Q2_K, DType::Q2_K_R16, pack_bytes<BlockQ2_K, BlockQ2_KR16, pack_q2_k<kR16Rows>>},
    {DType::Q3_K, DType::Q3_K_R8, pack_bytes<BlockQ3_K, BlockQ3_KR8, pack_q3_k<kR8Rows>>},
    {DType::Q2_K, DType::Q2_K_R8, pack_bytes<BlockQ2_K, BlockQ2_KR8, pack_q2_k<kR8Rows>>},
    {DType::IQ4_XS, DType::IQ4_XS_R16, pack_bytes<BlockIQ4_XS, BlockIQ4_XSR16, pack_iq4_xs<kR16Rows>>},
    {DType::IQ4_XS, DType::IQ4_XS_R8, pack_bytes<BlockIQ4_XS, BlockIQ4_XSR8, pack_iq4_xs<kR8Rows>>},
};

// Row i of a group of a repacked layout P, made from file type `file`: each block back in the file's block F
// (row), then the file's dequantizer, so a row reads back exactly as the file's does.
template <typename F, typename P>
void dequantize_blocks(DType file, F (*row)(const P&, int), const uint8_t* group, int i, int64_t cols, float* out) {
    const auto* blk = reinterpret_cast<const P*>(group);
    const int64_t n = traits(file).block_elems;
    for (int64_t b = 0; b < cols / n; ++b) {
        const F r = row(blk[b], i);
        dequantize_row_ref(file, &r, out + b * n, n);
    }
}

}  // namespace

std::optional<DType> repack_target(DType t, int64_t rows, int64_t cols) {
    if (static_cast<uint32_t>(t) >= kMaxDTypeId) return std::nullopt;
    if (const auto tr = dtype_traits(static_cast<uint32_t>(t)); !tr || cols % tr->block_elems != 0) return std::nullopt;
    const DType to = detail::active_kernels().repack[static_cast<int>(t)];
    if (to == DType::F32 || rows % interleaved_rows(to) != 0) return std::nullopt;
    return to;
}

int interleaved_rows(DType t) {
    switch (t) {
        case DType::Q8_0_R16: case DType::Q4_0_R16: case DType::Q5_0_R16: case DType::Q4_K_R16: case DType::Q5_K_R16:
        case DType::Q6_K_R16: case DType::IQ4_NL_R16: case DType::Q4_1_R16: case DType::Q5_1_R16: case DType::Q3_K_R16:
        case DType::Q2_K_R16: case DType::IQ4_XS_R16:
            return kR16Rows;
        case DType::Q8_0_R8: case DType::Q4_0_R8: case DType::Q5_0_R8: case DType::Q4_K_R8: case DType::Q5_K_R8:
        case DType::Q6_K_R8: case DType::IQ4_NL_R8: case DType::Q4_1_R8: case DType::Q5_1_R8: case DType::Q3_K_R8:
        case DType::Q2_K_R8: case DType::IQ4_XS_R8:
            return kR8Rows;
        default: return 1;
    }
}

namespace {
// A group's bytes plus the activation row's at most half of a 48 KB L1, in at most kMaxPanels panels. The 0.5B
// decode's FFN down (896 x 4864) in three panels: 7-10% less time in Q4_0, 4-7% in Q8_0 (in four); two Q4_0
// panels (a 32 KB limit) measured no better, three Q8_0 ones (40 KB) a little worse (BENCHMARKS.md, Twenty-second
// session).
constexpr size_t kPanelBytes = 24 * 1024;
constexpr int kMaxPanels = 8;
}  // namespace

int layout_panels(DType t, int64_t cols) {
    const int g = interleaved_rows(t);
    if (g == 1) return 1;  // first: every matmul call asks, and most layouts do not interleave
    const int64_t block = traits(t).block_elems, nb = cols / block;
    if (nb < 2) return 1;
    const DType a = detail::activation_type(t);
    const size_t act = a == DType::F32 ? size_t(cols) * sizeof(float) : row_bytes(a, size_t(cols));
    const size_t bytes = size_t(g) * row_bytes(t, size_t(cols)) + act;
    return int(std::min<int64_t>({int64_t((bytes + kPanelBytes - 1) / kPanelBytes), kMaxPanels, nb}));
}

Panel layout_panel(DType t, int64_t rows, int64_t cols, int p) {
    const int n = layout_panels(t, cols);
    const int64_t block = traits(t).block_elems, nb = cols / block;
    Panel q;
    q.c0 = nb * p / n * block;
    q.c1 = nb * (p + 1) / n * block;
    q.offset = size_t(rows) * row_bytes(t, size_t(q.c0));
    return q;
}

namespace {

// A wide matrix, panel by panel: each group's blocks [b0, b1) of panel p, group after group, panel after panel.
// Both orders are sequences of equal units (one interleaved block: G rows by one block of columns), so the
// move is a permutation of units, done in place by following its cycles: two units of scratch and a bit
// per unit. A copy of the matrix was the transient cost before: a 151936 x 3584 Q8_0 head (579 MB, three
// panels) repacked in 2.1 s at 1.13 GB peak RSS, now in 0.4-0.5 s at 568 MB (a scratch program, this host).
void permute_into_panels(uint8_t* base, int64_t n_groups, int64_t nb, size_t unit, DType t, int64_t rows,
                         int64_t cols, int n_panels) {
    std::vector<int64_t> panel_of(static_cast<size_t>(nb)), first(static_cast<size_t>(n_panels)), width(static_cast<size_t>(n_panels));
    const int64_t block = traits(t).block_elems;
    for (int p = 0; p < n_panels; ++p) {
        const Panel q = layout_panel(t, rows, cols, p);
        first[p] = q.c0 / block;
        width[p] = (q.c1 - q.c0) / block;
        for (int64_t b = first[p]; b < first[p] + width[p]; ++b) panel_of[size_t(b)] = p;
    }
    // Unit g * nb + b (block b of group g) goes to n_groups * first + g * width + (b - first) of its panel.
    auto dest = [&](int64_t i) {
        const int64_t g = i / nb, b = i % nb;
        const int64_t p = panel_of[size_t(b)];
        return n_groups * first[p] + g * width[p] + (b - first[p]);
    };
    const int64_t n = n_groups * nb;
    std::vector<bool> placed(static_cast<size_t>(n));
    std::vector<uint8_t> carry(unit), next(unit);
    for (int64_t start = 0; start < n; ++start) {
        if (placed[size_t(start)]) continue;
        // Carry the unit at `start` along its cycle: each step drops it at its destination and picks up
        // the unit that was there, until the cycle closes at `start`.
        std::memcpy(carry.data(), base + size_t(start) * unit, unit);
        for (int64_t i = start;;) {
            const int64_t d = dest(i);
            placed[size_t(d)] = true;
            if (d == start) {
                std::memcpy(base + size_t(d) * unit, carry.data(), unit);
                break;
            }
            std::memcpy(next.data(), base + size_t(d) * unit, unit);
            std::memcpy(base + size_t(d) * unit, carry.data(), unit);
            carry.swap(next);
            i = d;
        }
    }
}

}  // namespace

void repack_rows(DType from, DType to, void* data, int64_t rows, int64_t cols) {
    const Packer* packer = nullptr;
    for (const Packer& p : kPackers)
        if (p.from == from && p.to == to) packer = &p;
    if (!packer) fail("repack: no layout ", dtype_name(to), " for ", dtype_name(from));
    const int64_t block = traits(from).block_elems;
    const int g_rows = interleaved_rows(to);
    if (rows % g_rows != 0 || cols % block != 0)
        fail("repack: ", dtype_name(from), " [", rows, ", ", cols, "]: rows must be a multiple of ", g_rows, ", cols of ", block);
    const int64_t nb = cols / block;
    const size_t group_bytes = g_rows * row_bytes(from, size_t(cols));
    auto* base = static_cast<uint8_t*>(data);
    auto pack_groups = [&](int64_t g0, int64_t g1) {
        std::vector<uint8_t> tmp(group_bytes);
        for (int64_t g = g0; g < g1; ++g) {
            uint8_t* p = base + size_t(g) * group_bytes;
            std::memcpy(tmp.data(), p, group_bytes);
            packer->pack(tmp.data(), nb, p);
        }
    };
    // Groups are independent: a large matrix is shared out over the cores (a 1.2 GB Q6_K model took 2.3 s
    // to repack on one thread). Small ones are not worth a thread.
    const int64_t n_groups = rows / g_rows;
    const int64_t bytes = n_groups * int64_t(group_bytes);
    const int n_threads = int(std::clamp<int64_t>(std::min<int64_t>(std::thread::hardware_concurrency(), bytes >> 22), 1, n_groups));
    if (n_threads <= 1) {
        pack_groups(0, n_groups);
    } else {
        std::vector<std::thread> threads;
        for (int i = 1; i < n_threads; ++i)
            threads.emplace_back(pack_groups, n_groups * i / n_threads, n_groups * (i + 1) / n_threads);
        pack_groups(0, n_groups / n_threads);
        for (std::thread& t : threads) t.join();
    }
    const int n_panels = layout_panels(to, cols);
    if (n_panels > 1) permute_into_panels(base, n_groups, nb, group_bytes / size_t(nb), to, rows, cols, n_panels);
}

namespace {

// Row i of one group of a repacked layout, `cols` wide, as f32.
void dequantize_group_row(DType t, const uint8_t* group, int i, int64_t cols, float* out) {
    const auto from = [&](DType file, auto row) { dequantize_blocks(file, row, group, i, cols, out); };
    switch (t) {
        case DType::Q8_0_R16: return from(DType::Q8_0, q8_0_group_row<BlockQ8_0R16>);
        case DType::Q8_0_R8: return from(DType::Q8_0, q8_0_group_row<BlockQ8_0R8>);
        case DType::Q4_0_R16: return from(DType::Q4_0, nibble_group_row<BlockQ4_0, BlockQ4_0R16>);
        case DType::Q4_0_R8: return from(DType::Q4_0, nibble_group_row<BlockQ4_0, BlockQ4_0R8>);
        case DType::Q5_0_R16: return from(DType::Q5_0, nibble_group_row<BlockQ5_0, BlockQ5_0R16>);
        case DType::Q5_0_R8: return from(DType::Q5_0, nibble_group_row<BlockQ5_0, BlockQ5_0R8>);
        case DType::IQ4_NL_R16: return from(DType::IQ4_NL, nibble_group_row<BlockIQ4_NL, BlockIQ4_NLR16>);
        case DType::IQ4_NL_R8: return from(DType::IQ4_NL, nibble_group_row<BlockIQ4_NL, BlockIQ4_NLR8>);
        case DType::Q4_1_R16: return from(DType::Q4_1, nibble_group_row<BlockQ4_1, BlockQ4_1R16>);
        case DType::Q4_1_R8: return from(DType::Q4_1, nibble_group_row<BlockQ4_1, BlockQ4_1R8>);
        case DType::Q5_1_R16: return from(DType::Q5_1, nibble_group_row<BlockQ5_1, BlockQ5_1R16>);
        case DType::Q5_1_R8: return from(DType::Q5_1, nibble_group_row<BlockQ5_1, BlockQ5_1R8>);
        case DType::Q4_K_R16: return from(DType::Q4_K, q4kr16_row);
        case DType::Q4_K_R8: return from(DType::Q4_K, q4kr8_row);
        case DType::Q5_K_R16: return from(DType::Q5_K, q5kr16_row);
        case DType::Q5_K_R8: return from(DType::Q5_K, q5kr8_row);
        case DType::Q6_K_R16: return from(DType::Q6_K, q6kr16_row);
        case DType::Q6_K_R8: return from(DType::Q6_K, q6kr8_row);
        case DType::Q3_K_R16: return from(DType::Q3_K, q3kr16_row);
        case DType::Q3_K_R8: return from(DType::Q3_K, q3kr8_row);
        case DType::Q2_K_R16: return from(DType::Q2_K, q2kr16_row);
        case DType::Q2_K_R8: return from(DType::Q2_K, q2kr8_row);
        case DType::IQ4_XS_R16: return from(DType::IQ4_XS, iq4xsr16_row);
        case DType::IQ4_XS_R8: return from(DType::IQ4_XS, iq4xsr8_row);
        default: fail("dequantize: ", dtype_name(t), " is not an interleaved layout");
    }
}

}  // namespace

void dequantize_matrix_row(DType t, const void* data, int64_t rows, int64_t row, int64_t cols, float* out) {
    const auto* base = static_cast<const uint8_t*>(data);
    const int g_rows = interleaved_rows(t);
    if (g_rows == 1) {
        dequantize_row_ref(t, base + size_t(row) * row_bytes(t, size_t(cols)), out, cols);
        return;
    }
    for (int p = 0, n = layout_panels(t, cols); p < n; ++p) {
        const Panel q = layout_panel(t, rows, cols, p);
        const size_t group_bytes = g_rows * row_bytes(t, size_t(q.c1 - q.c0));
        dequantize_group_row(t, base + q.offset + size_t(row / g_rows) * group_bytes, int(row % g_rows), q.c1 - q.c0, out + q.c0);
    }
}

}  // namespace flint
