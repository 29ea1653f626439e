// flint/tensor/quant_k_ref.cpp — scalar reference conversions for the K-quant super-block formats
// (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; 256 elements each).
//
// Quantizing is a search, not a formula: for each sub-block we look for the (scale, min) — or the
// symmetric scale for Q6_K — that minimises a weighted squared error, trying a handful of candidate
// scales around max/range and solving the least-squares fit for each resulting level assignment.
// This is the approach of llama.cpp's reference quantizer (make_qkx2_quants / make_qx_quants);
// the code here is our own. The sub-block scales are then themselves quantized (6-bit or int8)
// against one fp16 super-block scale, and the levels recomputed with the scales actually stored.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/quant.h"
#include "tensor/quant_internal.h"

namespace flint::detail {
namespace {

int nearest(float v) { return int(std::nearbyint(v)); }

// Asymmetric fit x[i] ≈ scale * L[i] - min_out, L in [0, nmax], min_out >= 0; w are per-element
// weights. Tries nstep+1 candidate scales (nmax + rmin + rdelta*k) / (max - min) and keeps the one with
// the lowest weighted squared error after a least-squares refit of scale and offset. Returns scale.
float fit_scale_min(const float* x, const float* w, int n, int nmax, uint8_t* L, float& min_out,
                    float rmin, float rdelta, int nstep) {
    float lo = x[0], hi = x[0];
    float sum_w = 0, sum_x = 0;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    lo = std::min(lo, 0.0f);  // the format's offset only ever subtracts
    if (hi <= lo) {
        std::fill(L, L + n, uint8_t(0));
        min_out = -lo;
        return 0;
    }
    auto error_of = [&](float scale, float off) {
        float e = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = scale * L[i] + off - x[i];
            e += w[i] * diff * diff;
        }
        return e;
    };
    float scale = (hi - lo) / nmax;
    float off = lo;  // x ≈ scale * L + off, off <= 0
    for (int i = 0; i < n; ++i) L[i] = uint8_t(std::clamp(nearest((x[i] - off) / scale), 0, nmax));
    float best = error_of(scale, off);
    uint8_t trial[QK_K];
    for (int k = 0; k <= nstep; ++k) {
        const float iscale = (rmin + rdelta * k + nmax) / (hi - lo);
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
            trial[i] = uint8_t(l);
            sl += w[i] * l;
            sl2 += w[i] * l * l;
            sxl += w[i] * l * x[i];
        }
        const float det = sum_w * sl2 - sl * sl;
        if (det <= 0) continue;
        float s = (sum_w * sxl - sum_x * sl) / det;
        float o = (sl2 * sum_x - sl * sxl) / det;
        if (o > 0) {  // offset must not add: refit scale alone with offset 0
            o = 0;
            s = sxl / sl2;
        }
        float e = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = s * trial[i] + o - x[i];
            e += w[i] * diff * diff;
        }
        if (e < best) {
            best = e;
            scale = s;
            off = o;
            std::memcpy(L, trial, size_t(n));
        }
    }
    min_out = -off;
    return scale;
}

// Symmetric fit x[i] ≈ scale * (L[i] - nmax), L in [0, 2*nmax), weighted by x^2 (large values
// matter most). Tries scales around -nmax/max and keeps the best least-squares one. Returns scale.
float fit_scale_symmetric(const float* x, int n, int nmax, int8_t* L) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); max = x[i]; }
    if (amax < 1e-30f) {
        std::fill(L, L + n, int8_t(0));
        return 0;
    }
    float best_scale = 0, best = -1;
    for (int k = -9; k <= 9; ++k) {
        const float iscale = -(nmax + 0.1f * k) / max;
        float sxl = 0, sl2 = 0;
        int8_t trial[16];
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
            trial[i] = int8_t(l);
            const float w = x[i] * x[i];
            sxl += w * x[i] * l;
            sl2 += w * l * l;
        }
        // For a fixed assignment the best scale is sxl/sl2 and the error drops by sxl^2/sl2.
        if (sl2 > 0 && sxl * sxl / sl2 > best) {
            best = sxl * sxl / sl2;
            best_scale = sxl / sl2;
            std::memcpy(L, trial, size_t(n));
        }
    }
    return best_scale;
}

// Quantizes 8 sub-blocks of 32 to (6-bit scale, 6-bit min) pairs packed GGUF's way, and returns
// the 5- or 4-bit levels L[256] recomputed with the stored scales. nmax = 15 (Q4_K) or 31 (Q5_K).
void quantize_k_scales(const float* x, int nmax, float rmin, int nstep, uint16_t& d_out,
                       uint16_t& dmin_out, uint8_t* packed, uint8_t* L) {
    float sum_x2 = 0;
    for (int i = 0; i < QK_K; ++i) sum_x2 += x[i] * x[i];
    const float av_x = std::sqrt(sum_x2 / QK_K);
    float scales[8], mins[8], w[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        for (int i = 0; i < 32; ++i) w[i] = av_x + std::fabs(x[32 * j + i]);
        scales[j] = fit_scale_min(x + 32 * j, w, 32, nmax, L + 32 * j, mins[j], rmin, 0.1f, nstep);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    std::memset(packed, 0, 12);
    for (int j = 0; j < 8; ++j) {
        const uint8_t ls = uint8_t(std::min(63, nearest(inv_scale * scales[j])));
        const uint8_t lm = uint8_t(std::min(63, nearest(inv_min * mins[j])));
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = uint8_t((ls & 0xf) | ((lm & 0xf) << 4));
            packed[j - 4] |= uint8_t((ls >> 4) << 6);
            packed[j] |= uint8_t((lm >> 4) << 6);
        }
    }
    d_out = fp32_to_fp16(max_scale / 63.0f);
    dmin_out = fp32_to_fp16(max_min / 63.0f);
    const float d = fp16_to_fp32(d_out), dmin = fp16_to_fp32(dmin_out);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k4_scale_min(j, packed, sc, m);
        const float ds = d * sc, dm = dmin * m;
        for (int i = 0; i < 32; ++i)
            L[32 * j + i] = ds == 0 ? 0 : uint8_t(std::clamp(nearest((x[32 * j + i] + dm) / ds), 0, nmax));
    }
}

// Element e's level in Q2_K / Q3_K's two-bit layout (quant_internal.h k2_level), qs cleared first.
void set_k2_level(uint8_t* qs, int e, int level) { qs[32 * (e / 128) + e % 32] |= uint8_t(level << (2 * ((e % 128) / 32))); }

}  // namespace

void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t n) {
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        // Sixteen (scale, min) fits of 16 elements to levels 0..3, then both quantized to 4 bits against
        // the super-block's d and dmin, and the levels recomputed with what is stored.
        float scales[16], mins[16], w[16], max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int i = 0; i < 16; ++i) w[i] = std::fabs(x[16 * j + i]);
            scales[j] = fit_scale_min(x + 16 * j, w, 16, 3, L + 16 * j, mins[j], -0.5f, 0.1f, 15);
            max_scale = std::max(max_scale, scales[j]);
            max_min = std::max(max_min, mins[j]);
        }
        y[b].d = fp32_to_fp16(max_scale / 15.0f);
        y[b].dmin = fp32_to_fp16(max_min / 15.0f);
        const float d = fp16_to_fp32(y[b].d), dmin = fp16_to_fp32(y[b].dmin);
        std::memset(y[b].qs, 0, sizeof y[b].qs);
        for (int j = 0; j < 16; ++j) {
            const int ls = d > 0 ? std::clamp(nearest(scales[j] / d), 0, 15) : 0;
            const int lm = dmin > 0 ? std::clamp(nearest(mins[j] / dmin), 0, 15) : 0;
            y[b].scales[j] = uint8_t(ls | (lm << 4));
            const float ds = d * ls, dm = dmin * lm;
            for (int i = 0; i < 16; ++i) {
                const int e = 16 * j + i;
                set_k2_level(y[b].qs, e, ds == 0 ? 0 : std::clamp(nearest((x[e] + dm) / ds), 0, 3));
            }
        }
    }
}

void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t n) {
    int8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        // Sixteen symmetric fits of 16 elements to levels -4..3, the scales quantized to 6 bits (-32..31)
        // against the super-block's d, the levels recomputed with the stored scales.
        float scales[16], max_scale = 0, amax_scale = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = fit_scale_symmetric(x + 16 * j, 16, 4, L + 16 * j);
            if (std::fabs(scales[j]) > amax_scale) { amax_scale = std::fabs(scales[j]); max_scale = scales[j]; }
        }
        std::memset(&y[b], 0, sizeof y[b]);
        int ls[16] = {};
        float d = 0;
        if (amax_scale > 0) {
            const float iscale = -32.0f / max_scale;
            y[b].d = fp32_to_fp16(1.0f / iscale);
            d = fp16_to_fp32(y[b].d);
            for (int j = 0; j < 16; ++j) ls[j] = std::clamp(nearest(iscale * scales[j]), -32, 31);
        }
        for (int j = 0; j < 16; ++j) {
            const int s = ls[j] + 32;  // low four bits: nibble j / 8 of byte j % 8; top two: byte 8 + j % 4
            y[b].scales[j % 8] |= uint8_t((s & 15) << (4 * (j / 8)));
            y[b].scales[8 + j % 4] |= uint8_t((s >> 4) << (2 * (j / 4)));
            const float ds = d * ls[j];
            for (int i = 0; i < 16; ++i) {
                const int e = 16 * j + i;
                const int level = (ds == 0 ? 0 : std::clamp(nearest(x[e] / ds), -4, 3)) + 4;  // 0..7
                set_k2_level(y[b].qs, e, level & 3);
                y[b].hmask[e % 32] |= uint8_t((level >> 2) << (4 * (e / 128) + (e % 128) / 32));
            }
        }
    }
}

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n) {
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        quantize_k_scales(x, 15, -1.0f, 20, y[b].d, y[b].dmin, y[b].scales, L);
        // Each 64-element chunk: 32 bytes, first 32 elements in the low nibbles, next 32 in the high.
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                y[b].qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n) {
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        quantize_k_scales(x, 31, -0.5f, 15, y[b].d, y[b].dmin, y[b].scales, L);
        // Low 4 bits as Q4_K; the fifth bit of element l of chunk c (64 elements) is bit 2c (first
        // half) or 2c+1 (second half) of qh[l].
        std::memset(y[b].qh, 0, sizeof y[b].qh);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const int a = L[64 * c + l], h = L[64 * c + 32 + l];
                y[b].qs[32 * c + l] = uint8_t((a & 0xf) | ((h & 0xf) << 4));
                y[b].qh[l] |= uint8_t(((a >> 4) << (2 * c)) | ((h >> 4) << (2 * c + 1)));
            }
    }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n) {
    int8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float scales[16], max_scale = 0, amax_scale = 0;
        for (int g = 0; g < 16; ++g) {
            scales[g] = fit_scale_symmetric(x + 16 * g, 16, 32, L + 16 * g);
            if (std::fabs(scales[g]) > amax_scale) { amax_scale = std::fabs(scales[g]); max_scale = scales[g]; }
        }
        if (amax_scale == 0) {
            std::memset(&y[b], 0, sizeof y[b]);  // d = 0: every element decodes to 0
            for (int i = 0; i < QK_K; ++i) L[i] = 32;
        } else {
            const float iscale = -128.0f / max_scale;
            y[b].d = fp32_to_fp16(1.0f / iscale);
            const float d = fp16_to_fp32(y[b].d);
            for (int g = 0; g < 16; ++g) {
                y[b].scales[g] = int8_t(std::min(127, nearest(iscale * scales[g])));
                const float ds = d * y[b].scales[g];
                for (int i = 0; i < 16; ++i)
                    L[16 * g + i] = ds == 0 ? 32 : int8_t(std::clamp(nearest(x[16 * g + i] / ds), -32, 31) + 32);
            }
        }
        // Per 128 elements: 64 bytes of low nibbles (elements l and l+64 share ql[l], l+32 and l+96
        // share ql[l+32]) and 32 bytes of high 2-bit pairs (element l+32k in bits 2k..2k+1 of qh[l]).
        for (int h = 0; h < 2; ++h) {
            uint8_t* ql = y[b].ql + 64 * h;
            uint8_t* qh = y[b].qh + 32 * h;
            const int8_t* q = L + 128 * h;
            for (int l = 0; l < 32; ++l) {
                ql[l] = uint8_t((q[l] & 0xf) | ((q[l + 64] & 0xf) << 4));
                ql[l + 32] = uint8_t((q[l + 32] & 0xf) | ((q[l + 96] & 0xf) << 4));
                qh[l] = uint8_t((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
            }
        }
    }
}

void dequantize_q2_k(const BlockQ2_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b, y += QK_K) {
        const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
        for (int e = 0; e < QK_K; ++e) {
            const uint8_t sc = x[b].scales[e / 16];
            y[e] = d * (sc & 15) * k2_level(x[b].qs, e) - dmin * (sc >> 4);
        }
    }
}

void dequantize_q3_k(const BlockQ3_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b, y += QK_K) {
        const float d = fp16_to_fp32(x[b].d);
        for (int e = 0; e < QK_K; ++e) {
            const int level = k2_level(x[b].qs, e) - (q3k_high_bit(x[b].hmask, e) ? 0 : 4);
            y[e] = d * (q3k_scale(x[b].scales, e / 16) - 32) * level;
        }
    }
}

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
        for (int c = 0; c < 4; ++c) {
            uint8_t sc0, m0, sc1, m1;
            k4_scale_min(2 * c, x[b].scales, sc0, m0);
            k4_scale_min(2 * c + 1, x[b].scales, sc1, m1);
            const uint8_t* q = x[b].qs + 32 * c;
            for (int l = 0; l < 32; ++l) *y++ = d * sc0 * (q[l] & 0xf) - dmin * m0;
            for (int l = 0; l < 32; ++l) *y++ = d * sc1 * (q[l] >> 4) - dmin * m1;
        }
    }
}

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
        for (int c = 0; c < 4; ++c) {
            uint8_t sc0, m0, sc1, m1;
            k4_scale_min(2 * c, x[b].scales, sc0, m0);
            k4_scale_min(2 * c + 1, x[b].scales, sc1, m1);
            const uint8_t* q = x[b].qs + 32 * c;
            for (int l = 0; l < 32; ++l)
                *y++ = d * sc0 * ((q[l] & 0xf) | (((x[b].qh[l] >> (2 * c)) & 1) << 4)) - dmin * m0;
            for (int l = 0; l < 32; ++l)
                *y++ = d * sc1 * ((q[l] >> 4) | (((x[b].qh[l] >> (2 * c + 1)) & 1) << 4)) - dmin * m1;
        }
    }
}

void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        for (int h = 0; h < 2; ++h, y += 128) {
            const uint8_t* ql = x[b].ql + 64 * h;
            const uint8_t* qh = x[b].qh + 32 * h;
            const int8_t* sc = x[b].scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int g = l / 16;
                y[l] = d * sc[g] * (((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32);
                y[l + 32] = d * sc[g + 2] * (((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
                y[l + 64] = d * sc[g + 4] * (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                y[l + 96] = d * sc[g + 6] * (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
    }
}

}  // namespace flint::detail
