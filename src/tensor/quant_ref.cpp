// flint/tensor/quant_ref.cpp — scalar reference conversions for the plain and 32-element block
// formats (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and Q8_K activations, plus the row-level dispatch.
// Layouts follow GGUF: within a 32-block of Q4_0/Q4_1/Q5_0/Q5_1, byte j holds element j in its low nibble
// and element j+16 in its high nibble; Q5_0's and Q5_1's fifth bits are a little-endian 32-bit mask.
// Q4_1 and Q5_1 add a minimum: x = d * q + m with unsigned levels q. IQ4_NL's nibbles index a fixed
// non-linear table of levels (kIq4nlValues) scaled by d; IQ4_XS keeps them in 256-element super-blocks with
// a 6-bit scale per 32 (times the super-block's d).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "tensor/quant.h"
#include "tensor/quant_internal.h"
#include "util/error.h"

namespace flint::detail {
namespace {

// Largest |x| in the block, returned with its sign (symmetric formats put it at -8 / -16 so the
// other side gets the extra level).
float signed_absmax(const float* x, int n) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); max = x[i]; }
    return max;
}

// Quantize with the scale the block will actually store (fp16-rounded), so the dequantized error
// is bounded by half a step of the stored scale rather than of the unrounded one.
float stored_scale(float d, uint16_t& d_half) {
    d_half = fp32_to_fp16(d);
    return fp16_to_fp32(d_half);
}

}  // namespace

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        float amax = 0;
        for (int i = 0; i < QK; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = stored_scale(amax / 127.0f, y[b].d);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        for (int i = 0; i < QK; ++i)
            y[b].qs[i] = int8_t(std::clamp(std::nearbyint(x[i] * id), -127.0f, 127.0f));
    }
}

void widen_q8_0s(const BlockQ8_0* x, BlockQ8_0S* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        int32_t sum = 0;
        for (int i = 0; i < QK; ++i) sum += x[b].qs[i];
        std::memcpy(y[b].qs, x[b].qs, QK);
        y[b].d = fp16_to_fp32(x[b].d);
        y[b].ofs = -128 * sum;
    }
}

void quantize_q8_0s_via(void (*quantize)(const float* x, BlockQ8_0* y, int64_t n), const float* x, BlockQ8_0S* y,
                        int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b) {
        BlockQ8_0 q;
        quantize(x + b * QK, &q, QK);
        widen_q8_0s(&q, y + b, 1);
    }
}

void quantize_q8_0s(const float* x, BlockQ8_0S* y, int64_t n) { quantize_q8_0s_via(quantize_q8_0, x, y, n); }

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        const float d = stored_scale(signed_absmax(x, QK) / -8.0f, y[b].d);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = std::clamp(int(std::nearbyint(x[j] * id)) + 8, 0, 15);
            const int hi = std::clamp(int(std::nearbyint(x[j + QK / 2] * id)) + 8, 0, 15);
            y[b].qs[j] = uint8_t(lo | (hi << 4));
        }
    }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        const float d = stored_scale(signed_absmax(x, QK) / -16.0f, y[b].d);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = std::clamp(int(std::nearbyint(x[j] * id)) + 16, 0, 31);
            const int hi = std::clamp(int(std::nearbyint(x[j + QK / 2] * id)) + 16, 0, 31);
            y[b].qs[j] = uint8_t((lo & 0xf) | ((hi & 0xf) << 4));
            qh |= uint32_t(lo >> 4) << j;
            qh |= uint32_t(hi >> 4) << (j + QK / 2);
        }
        std::memcpy(y[b].qh, &qh, 4);
    }
}

namespace {

// Q4_1 / Q5_1: levels 0..nmax spread from the block's minimum to its maximum, with the fp16 scale and
// minimum the block stores. Packs the levels as Q4_0 / Q5_0 do; returns the fifth bits (Q5_1).
template <int kMax>
uint32_t quantize_min_block(const float* x, uint16_t& d_out, uint16_t& m_out, uint8_t* qs) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < QK; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    m_out = fp32_to_fp16(lo);
    const float m = fp16_to_fp32(m_out);
    const float d = stored_scale((hi - m) / kMax, d_out);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    uint32_t qh = 0;
    for (int j = 0; j < QK / 2; ++j) {
        const int a = std::clamp(int(std::nearbyint((x[j] - m) * id)), 0, kMax);
        const int b = std::clamp(int(std::nearbyint((x[j + QK / 2] - m) * id)), 0, kMax);
        qs[j] = uint8_t((a & 0xf) | ((b & 0xf) << 4));
        qh |= uint32_t(a >> 4) << j;
        qh |= uint32_t(b >> 4) << (j + QK / 2);
    }
    return qh;
}

}  // namespace

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) quantize_min_block<15>(x, y[b].d, y[b].m, y[b].qs);
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) {
        const uint32_t qh = quantize_min_block<31>(x, y[b].d, y[b].m, y[b].qs);
        std::memcpy(y[b].qh, &qh, 4);
    }
}

namespace {

// The IQ4_NL table entry nearest to v: the number of midpoints between neighbouring entries below v (the
// table is sorted; a tie goes to the lower entry).
int nearest_iq4nl(float v) {
    static constexpr auto kMid = [] {
        std::array<float, 15> m{};
        for (int k = 0; k < 15; ++k) m[size_t(k)] = 0.5f * (kIq4nlValues[k] + kIq4nlValues[k + 1]);
        return m;
    }();
    int k = 0;
    for (float m : kMid) k += v > m;
    return k;
}

// The IQ4_NL scale for a block of n elements: a search over scales that put the block's extreme at or near the
// table's end (-127), each followed by the least-squares scale for the indices it picked. 0 for a zero block.
float iq4nl_best_scale(const float* x, int n) {
    const float max = signed_absmax(x, n);
    float d = 0;
    if (max == 0) return d;
    float best = -1;
    for (int k = -8; k <= 8; ++k) {
        const float id = (kIq4nlValues[0] + k) / max;
        float sxv = 0, svv = 0;
        for (int i = 0; i < n; ++i) {
            const float v = kIq4nlValues[nearest_iq4nl(x[i] * id)];
            sxv += x[i] * v;
            svv += v * v;
        }
        // For fixed indices the best scale is sxv / svv, and the squared error drops by sxv^2 / svv.
        if (svv > 0 && sxv * sxv / svv > best) best = sxv * sxv / svv, d = sxv / svv;
    }
    return d;
}

// One block's indices at scale d (Q4_0's nibble order: element j low, j + 16 high).
void iq4nl_indices(const float* x, float d, uint8_t* qs) {
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK / 2; ++j) qs[j] = uint8_t(nearest_iq4nl(x[j] * id) | (nearest_iq4nl(x[j + QK / 2] * id) << 4));
}

}  // namespace

// IQ4_NL: the searched scale, rounded to the fp16 the block stores, then the indices chosen again with it.
void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, x += QK) iq4nl_indices(x, stored_scale(iq4nl_best_scale(x, QK), y[b].d), y[b].qs);
}

// IQ4_XS: each sub-block's IQ4_NL scale, then one super-block scale d that puts the largest of them (by
// magnitude, with its sign) at -32, each sub-block's as the nearest of d * (-32..31), and the indices chosen
// again with the scale the sub-block will decode with (d rounded to fp16, times its integer).
void quantize_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        y[b] = BlockIQ4_XS{};
        float sub[8], max = 0;
        for (int j = 0; j < 8; ++j) {
            sub[j] = iq4nl_best_scale(x + QK * j, QK);
            if (std::fabs(sub[j]) > std::fabs(max)) max = sub[j];
        }
        const float d = stored_scale(max / -32.0f, y[b].d);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        for (int j = 0; j < 8; ++j) {
            const int l = int(std::clamp(std::nearbyint(sub[j] * id), -32.0f, 31.0f));
            iq4xs_set_scale(y[b], j, l + 32);
            iq4nl_indices(x + QK * j, d * float(l), y[b].qs + 16 * j);
        }
    }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float amax = 0;
        for (int i = 0; i < QK_K; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;  // Q8_K keeps its scale in f32
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = d;
        for (int i = 0; i < QK_K; ++i)
            y[b].qs[i] = int8_t(std::clamp(std::nearbyint(x[i] * id), -127.0f, 127.0f));
        for (int g = 0; g < QK_K / 16; ++g) {
            int s = 0;
            for (int i = 0; i < 16; ++i) s += y[b].qs[g * 16 + i];
            y[b].bsums[g] = int16_t(s);
        }
    }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, y += QK) {
        const float d = fp16_to_fp32(x[b].d);
        for (int i = 0; i < QK; ++i) y[i] = d * x[b].qs[i];
    }
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, y += QK) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = d * ((x[b].qs[j] & 0xf) - 8);
            y[j + QK / 2] = d * ((x[b].qs[j] >> 4) - 8);
        }
    }
}

void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, y += QK) {
        const float d = fp16_to_fp32(x[b].d);
        const uint32_t qh = q5_high_bits(x[b].qh);
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = (x[b].qs[j] & 0xf) | int(((qh >> j) & 1) << 4);
            const int hi = (x[b].qs[j] >> 4) | int(((qh >> (j + QK / 2)) & 1) << 4);
            y[j] = d * (lo - 16);
            y[j + QK / 2] = d * (hi - 16);
        }
    }
}

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, y += QK) {
        const float d = fp16_to_fp32(x[b].d), m = fp16_to_fp32(x[b].m);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = d * (x[b].qs[j] & 0xf) + m;
            y[j + QK / 2] = d * (x[b].qs[j] >> 4) + m;
        }
    }
}

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, y += QK) {
        const float d = fp16_to_fp32(x[b].d), m = fp16_to_fp32(x[b].m);
        const uint32_t qh = q5_high_bits(x[b].qh);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = d * ((x[b].qs[j] & 0xf) | int(((qh >> j) & 1) << 4)) + m;
            y[j + QK / 2] = d * ((x[b].qs[j] >> 4) | int(((qh >> (j + QK / 2)) & 1) << 4)) + m;
        }
    }
}

namespace {
// One IQ4_NL block's 16 index bytes at scale d into 32 floats.
void iq4nl_decode(const uint8_t* qs, float d, float* y) {
    for (int j = 0; j < QK / 2; ++j) {
        y[j] = d * kIq4nlValues[qs[j] & 0xf];
        y[j + QK / 2] = d * kIq4nlValues[qs[j] >> 4];
    }
}
}  // namespace

void dequantize_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK; ++b, y += QK) iq4nl_decode(x[b].qs, fp16_to_fp32(x[b].d), y);
}

void dequantize_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < 8; ++j, y += QK) iq4nl_decode(x[b].qs + 16 * j, d * float(iq4xs_scale(x[b], j) - 32), y);
    }
}

void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b, y += QK_K)
        for (int i = 0; i < QK_K; ++i) y[i] = x[b].d * x[b].qs[i];
}

}  // namespace flint::detail

namespace flint {

using namespace detail;

namespace {
void check_multiple(DType t, int64_t n) {
    const int64_t be = traits(t).block_elems;
    if (n < 0 || n % be != 0) fail("row of ", n, " elements is not a multiple of the ", dtype_name(t), " block (", be, ")");
}
}  // namespace

bool can_quantize(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0:
        case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K:
        case DType::Q6_K: case DType::Q8_K: case DType::IQ4_NL: case DType::IQ4_XS:
            return true;
        default:
            return false;
    }
}

bool can_dequantize(DType t) { return can_quantize(t); }

void quantize_row_ref(DType t, const float* x, void* out, int64_t n) {
    if (!can_quantize(t)) fail("cannot quantize to ", dtype_name(t));
    check_multiple(t, n);
    switch (t) {
        case DType::F32: std::memcpy(out, x, size_t(n) * 4); break;
        case DType::F16: for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(out)[i] = fp32_to_fp16(x[i]); break;
        case DType::BF16: for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(out)[i] = fp32_to_bf16(x[i]); break;
        case DType::Q4_0: quantize_q4_0(x, static_cast<BlockQ4_0*>(out), n); break;
        case DType::Q4_1: quantize_q4_1(x, static_cast<BlockQ4_1*>(out), n); break;
        case DType::Q5_0: quantize_q5_0(x, static_cast<BlockQ5_0*>(out), n); break;
        case DType::Q5_1: quantize_q5_1(x, static_cast<BlockQ5_1*>(out), n); break;
        case DType::IQ4_NL: quantize_iq4_nl(x, static_cast<BlockIQ4_NL*>(out), n); break;
        case DType::IQ4_XS: quantize_iq4_xs(x, static_cast<BlockIQ4_XS*>(out), n); break;
        case DType::Q2_K: quantize_q2_k(x, static_cast<BlockQ2_K*>(out), n); break;
        case DType::Q3_K: quantize_q3_k(x, static_cast<BlockQ3_K*>(out), n); break;
        case DType::Q8_0: quantize_q8_0(x, static_cast<BlockQ8_0*>(out), n); break;
        case DType::Q4_K: quantize_q4_k(x, static_cast<BlockQ4_K*>(out), n); break;
        case DType::Q5_K: quantize_q5_k(x, static_cast<BlockQ5_K*>(out), n); break;
        case DType::Q6_K: quantize_q6_k(x, static_cast<BlockQ6_K*>(out), n); break;
        case DType::Q8_K: quantize_q8_k(x, static_cast<BlockQ8_K*>(out), n); break;
        default: break;
    }
}

void dequantize_row_ref(DType t, const void* in, float* out, int64_t n) {
    if (!can_dequantize(t)) fail("cannot dequantize ", dtype_name(t));
    check_multiple(t, n);
    switch (t) {
        case DType::F32: std::memcpy(out, in, size_t(n) * 4); break;
        case DType::F16: for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(static_cast<const uint16_t*>(in)[i]); break;
        case DType::BF16: for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_fp32(static_cast<const uint16_t*>(in)[i]); break;
        case DType::Q4_0: dequantize_q4_0(static_cast<const BlockQ4_0*>(in), out, n); break;
        case DType::Q4_1: dequantize_q4_1(static_cast<const BlockQ4_1*>(in), out, n); break;
        case DType::Q5_0: dequantize_q5_0(static_cast<const BlockQ5_0*>(in), out, n); break;
        case DType::Q5_1: dequantize_q5_1(static_cast<const BlockQ5_1*>(in), out, n); break;
        case DType::IQ4_NL: dequantize_iq4_nl(static_cast<const BlockIQ4_NL*>(in), out, n); break;
        case DType::IQ4_XS: dequantize_iq4_xs(static_cast<const BlockIQ4_XS*>(in), out, n); break;
        case DType::Q2_K: dequantize_q2_k(static_cast<const BlockQ2_K*>(in), out, n); break;
        case DType::Q3_K: dequantize_q3_k(static_cast<const BlockQ3_K*>(in), out, n); break;
        case DType::Q8_0: dequantize_q8_0(static_cast<const BlockQ8_0*>(in), out, n); break;
        case DType::Q4_K: dequantize_q4_k(static_cast<const BlockQ4_K*>(in), out, n); break;
        case DType::Q5_K: dequantize_q5_k(static_cast<const BlockQ5_K*>(in), out, n); break;
        case DType::Q6_K: dequantize_q6_k(static_cast<const BlockQ6_K*>(in), out, n); break;
        case DType::Q8_K: dequantize_q8_k(static_cast<const BlockQ8_K*>(in), out, n); break;
        default: break;
    }
}

}  // namespace flint
