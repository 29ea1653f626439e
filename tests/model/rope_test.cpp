#include <cmath>

#include <gtest/gtest.h>

#include "model/rope.h"

using namespace flint;

TEST(Rope, NormalRotatesAdjacentPairsNeoXRotatesHalves) {
    RopeConfig r{.style = RopeStyle::Normal, .n_rot = 4, .freq_base = 10000.0f};
    std::vector<float> cs(4);
    rope_cos_sin(r, 3, cs.data());
    EXPECT_NEAR(cs[0], std::cos(3.0), 1e-6);
    EXPECT_NEAR(cs[1], std::sin(3.0), 1e-6);
    EXPECT_NEAR(cs[2], std::cos(3.0 / 100.0), 1e-6);  // 10000^(-2/4) = 0.01
    std::vector<float> x = {1, 0, 1, 0};
    rope_apply(r, cs.data(), x.data(), 1, 4);
    EXPECT_NEAR(x[0], std::cos(3.0), 1e-6);
    EXPECT_NEAR(x[1], std::sin(3.0), 1e-6);
    r.style = RopeStyle::NeoX;
    std::vector<float> y = {1, 1, 0, 0};  // pairs are (0, 2) and (1, 3)
    rope_apply(r, cs.data(), y.data(), 1, 4);
    EXPECT_NEAR(y[0], std::cos(3.0), 1e-6);
    EXPECT_NEAR(y[2], std::sin(3.0), 1e-6);
    EXPECT_NEAR(y[1], std::cos(0.03), 1e-6);
    EXPECT_NEAR(y[3], std::sin(0.03), 1e-6);
}

TEST(Rope, LinearScalingDividesPositions) {
    RopeConfig lin{.n_rot = 8, .freq_base = 1e6f, .scaling = RopeScaling::Linear, .scale_factor = 4.0f};
    RopeConfig plain{.n_rot = 8, .freq_base = 1e6f};
    std::vector<float> a(8), b(8);
    rope_cos_sin(lin, 400, a.data());
    rope_cos_sin(plain, 100, b.data());
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(Rope, YarnExtrapolatesFastDimsInterpolatesSlowOnesAndScalesMagnitude) {
    // Qwen2.5-Coder's 128k recipe: factor 4 over a 32k original context.
    RopeConfig y{.style = RopeStyle::NeoX, .n_rot = 64, .freq_base = 1e6f, .scaling = RopeScaling::Yarn,
                 .scale_factor = 4.0f, .orig_ctx = 32768, .ext_factor = 1.0f};
    RopeConfig plain{.style = RopeStyle::NeoX, .n_rot = 64, .freq_base = 1e6f};
    const int pos = 100000;
    std::vector<float> a(64), b(64), c(64);
    rope_cos_sin(y, pos, a.data());
    rope_cos_sin(plain, pos, b.data());
    rope_cos_sin(plain, pos / 4, c.data());
    const float mscale = 1.0f + 0.1f * std::log(4.0f);
    // Pair 0 rotates fastest: pure extrapolation (same angle as unscaled), magnitude mscale.
    EXPECT_NEAR(a[0], b[0] * mscale, 1e-3);
    EXPECT_NEAR(a[1], b[1] * mscale, 1e-3);
    // The slowest pair is interpolated: angle of pos / factor.
    EXPECT_NEAR(a[62], c[62] * mscale, 1e-3);
    EXPECT_NEAR(a[63], c[63] * mscale, 1e-3);
    // Magnitude is mscale everywhere.
    for (int i = 0; i < 64; i += 2) EXPECT_NEAR(std::hypot(a[i], a[i + 1]), mscale, 1e-4);
}
