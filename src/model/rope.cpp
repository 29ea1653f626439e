#include "model/rope.h"

#include <algorithm>
#include <cmath>

namespace flint {
namespace {

// YaRN (Peng et al. 2023): dimensions that rotate fewer than beta_slow times over the original context are
// interpolated, those rotating more than beta_fast times extrapolate, with a linear ramp between.
float corr_dim(int n_rot, int orig_ctx, float n_rotations, float base) {
    return n_rot * std::log(orig_ctx / (n_rotations * 2 * static_cast<float>(M_PI))) / (2 * std::log(base));
}

}  // namespace

void rope_cos_sin(const RopeConfig& r, int pos, float* out) {
    const float theta_scale = std::pow(r.freq_base, -2.0f / r.n_rot);
    float freq_scale = 1.0f, ext_factor = 0.0f, mscale = 1.0f, lo = 0.0f, hi = 0.0f;
    if (r.scaling == RopeScaling::Linear) freq_scale = 1.0f / r.scale_factor;
    if (r.scaling == RopeScaling::Yarn) {
        freq_scale = 1.0f / r.scale_factor;
        ext_factor = r.ext_factor;
        mscale = r.attn_factor;
        lo = std::max(0.0f, std::floor(corr_dim(r.n_rot, r.orig_ctx, r.beta_fast, r.freq_base)));
        hi = std::min(static_cast<float>(r.n_rot - 1), std::ceil(corr_dim(r.n_rot, r.orig_ctx, r.beta_slow, r.freq_base)));
        if (ext_factor != 0.0f) mscale *= 1.0f + 0.1f * std::log(1.0f / freq_scale);
    }
    float theta_extrap = static_cast<float>(pos);
    for (int i0 = 0; i0 < r.n_rot; i0 += 2) {
        float theta = freq_scale * theta_extrap;
        if (ext_factor != 0.0f) {
            float y = (i0 / 2 - lo) / std::max(0.001f, hi - lo);
            float ramp = (1.0f - std::min(1.0f, std::max(0.0f, y))) * ext_factor;
            theta = theta * (1 - ramp) + theta_extrap * ramp;
        }
        out[i0] = std::cos(theta) * mscale;
        out[i0 + 1] = std::sin(theta) * mscale;
        theta_extrap *= theta_scale;
    }
}

void rope_apply(const RopeConfig& r, const float* cs, float* x, int n_heads, int head_dim) {
    const int half = r.n_rot / 2;
    for (int h = 0; h < n_heads; ++h) {
        float* v = x + static_cast<int64_t>(h) * head_dim;
        if (r.style == RopeStyle::Normal) {
            for (int i0 = 0; i0 < r.n_rot; i0 += 2) {
                float c = cs[i0], s = cs[i0 + 1];
                float a = v[i0], b = v[i0 + 1];
                v[i0] = a * c - b * s;
                v[i0 + 1] = a * s + b * c;
            }
        } else {
            for (int i = 0; i < half; ++i) {
                float c = cs[2 * i], s = cs[2 * i + 1];
                float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = a * s + b * c;
            }
        }
    }
}

}  // namespace flint
