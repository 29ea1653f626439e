// Vector kernels: every instruction set against the scalar reference, lengths 0..100 (tails included).
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/bandwidth.h"
#include "tensor/matmul.h"
#include "tensor/quant.h"
#include "tensor/thread_pool.h"
#include "tensor/vec.h"
#include "tensor_test_util.h"

namespace flint {
namespace {

TEST(Vec, EveryIsaMatchesScalar) {
    test::IsaGuard guard;
    for (int64_t n = 0; n <= 100; ++n) {
        const auto a = test::random_floats(size_t(n), uint32_t(n + 1)), b = test::random_floats(size_t(n), uint32_t(n + 500));
        std::vector<uint16_t> ah(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) ah[size_t(i)] = fp32_to_fp16(a[size_t(i)]);
        double mag = 1e-6, magh = 1e-6;
        for (int64_t i = 0; i < n; ++i) {
            mag += std::fabs(a[size_t(i)] * b[size_t(i)]);
            magh += std::fabs(fp16_to_fp32(ah[size_t(i)]) * b[size_t(i)]);
        }
        set_isa(Isa::Scalar);
        const float d = dot_f32(a.data(), b.data(), n), dh = dot_f16_f32(ah.data(), b.data(), n);
        std::vector<float> y1 = b, y2 = b;
        axpy_f32(0.37f, a.data(), y1.data(), n);
        axpy_f16(-1.25f, ah.data(), y2.data(), n);
        std::vector<uint16_t> h(static_cast<size_t>(n));
        std::vector<float> f(static_cast<size_t>(n));
        fp32_to_fp16_row(a.data(), h.data(), n);
        fp16_to_fp32_row(ah.data(), f.data(), n);
        for (Isa isa : test::available_isas()) {
            set_isa(isa);
            EXPECT_NEAR(dot_f32(a.data(), b.data(), n), d, 1e-6 * mag) << isa_name(isa) << " n " << n;
            EXPECT_NEAR(dot_f16_f32(ah.data(), b.data(), n), dh, 1e-6 * magh) << isa_name(isa) << " n " << n;
            std::vector<float> z1 = b, z2 = b;
            axpy_f32(0.37f, a.data(), z1.data(), n);
            axpy_f16(-1.25f, ah.data(), z2.data(), n);
            for (int64_t i = 0; i < n; ++i) {  // FMA vs mul+add: one rounding apart
                ASSERT_NEAR(z1[size_t(i)], y1[size_t(i)], 1e-6f * (std::fabs(y1[size_t(i)]) + 1));
                ASSERT_NEAR(z2[size_t(i)], y2[size_t(i)], 1e-6f * (std::fabs(y2[size_t(i)]) + 1));
            }
            std::vector<uint16_t> h2(static_cast<size_t>(n));
            std::vector<float> f2(static_cast<size_t>(n));
            fp32_to_fp16_row(a.data(), h2.data(), n);
            fp16_to_fp32_row(ah.data(), f2.data(), n);
            EXPECT_EQ(h2, h) << isa_name(isa);  // conversions are exact: round to nearest even both ways
            EXPECT_EQ(f2, f) << isa_name(isa);
        }
    }
}

TEST(Bandwidth, ProbeReportsAPlausibleRate) {
    ThreadPool pool(2);
    const double gbs = measure_read_bandwidth_gbs(&pool, size_t(64) << 20, 2);
    EXPECT_GT(gbs, 0.5);
    EXPECT_LT(gbs, 2000.0);
}

}  // namespace
}  // namespace flint
