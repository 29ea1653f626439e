// Vector kernels: every instruction set against the scalar reference, lengths 0..100 (tails included).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
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

// The SwiGLU gate over the whole range the clamp in the vector exp matters for: every ISA within a few
// ulp of the scalar reference (std::exp); where exp(-g) overflows a float the SIMD versions give 0 and the
// reference a value below 1e-30.
TEST(Vec, SiluMulMatchesScalarOverTheRange) {
    test::IsaGuard guard;
    std::vector<float> g;
    for (float x = -120.0f; x <= 120.0f; x += 0.0371f) g.push_back(x);
    for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 87.0f, -87.0f, 88.5f, -88.5f, 89.0f, -89.0f, 1e30f, -1e30f}) g.push_back(x);
    const auto noise = test::random_floats(g.size(), 7, 3.0f);
    std::vector<float> u(g.size());
    for (size_t i = 0; i < g.size(); ++i) u[i] = 0.5f + noise[i];
    set_isa(Isa::Scalar);
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(15), int64_t(17), static_cast<int64_t>(g.size())}) {
        std::vector<float> want = g;
        silu_mul(want.data(), u.data(), n);
        for (Isa isa : test::available_isas()) {
            set_isa(isa);
            std::vector<float> got = g;
            silu_mul(got.data(), u.data(), n);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(got[size_t(i)], want[size_t(i)], 4e-7f * std::fabs(want[size_t(i)]) + 1e-30f)
                    << isa_name(isa) << " g " << g[size_t(i)] << " u " << u[size_t(i)];
            if (size_t(n) < g.size()) {
                EXPECT_EQ(got[size_t(n)], g[size_t(n)]) << isa_name(isa) << ": wrote past n " << n;
            }
            set_isa(Isa::Scalar);
        }
    }
    // Exact values on every ISA: silu(0) = 0, silu(x) = x for large x, 0 for very negative x; NaN stays NaN.
    for (Isa isa : test::available_isas()) {
        set_isa(isa);
        std::vector<float> z = {0.0f, 100.0f, -200.0f, std::nanf("")}, one(4, 1.0f);
        silu_mul(z.data(), one.data(), 4);
        EXPECT_EQ(z[0], 0.0f) << isa_name(isa);
        EXPECT_EQ(z[1], 100.0f) << isa_name(isa);
        EXPECT_EQ(z[2], 0.0f) << isa_name(isa);
        EXPECT_TRUE(std::isnan(z[3])) << isa_name(isa);
    }
}

// The softmax numerators: every ISA close to the scalar reference per element (the SIMD argument x * scale -
// shift may be one fused rounding, so exp's argument can differ by half an ulp of |x * scale|: 1e-5 relative
// at |arguments| up to ~80), the same sum, 0 below exp's float range, tails of every length.
TEST(Vec, ExpSumMatchesScalar) {
    test::IsaGuard guard;
    auto x = test::random_floats(5000, 3, 20.0f);
    x[7] = -1e4f;  // far below the range: 0 (the reference gives 0 too)
    const float scale = 1.25f, shift = *std::max_element(x.begin(), x.end()) * scale;  // arguments <= 0
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(9), int64_t(17), int64_t(5000)}) {
        set_isa(Isa::Scalar);
        std::vector<float> want(size_t(n) + 1, -1.0f), got = want;
        const double s_want = exp_sum(x.data(), want.data(), n, scale, shift);
        for (Isa isa : test::available_isas()) {
            set_isa(isa);
            std::fill(got.begin(), got.end(), -1.0f);
            const double s_got = exp_sum(x.data(), got.data(), n, scale, shift);
            EXPECT_NEAR(s_got, s_want, 1e-5 * s_want + 1e-30) << isa_name(isa) << " n " << n;
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(got[size_t(i)], want[size_t(i)], 1e-5f * want[size_t(i)] + 1e-37f) << isa_name(isa) << " i " << i;
            EXPECT_EQ(got[size_t(n)], -1.0f) << isa_name(isa) << ": wrote past n " << n;
            if (n > 7) {
                EXPECT_EQ(got[7], 0.0f) << isa_name(isa);
            }
        }
    }
}

// argmax: the first index of the maximum on every ISA, on vocabulary-sized rows with ties, at every
// position and length (tails), and with NaNs, which are skipped unless they come first.
TEST(Vec, ArgmaxIsTheFirstMaximumOnEveryIsa) {
    test::IsaGuard guard;
    const auto base = test::random_floats(151936, 11);
    set_isa(Isa::Scalar);
    const int64_t want = argmax_f32(base.data(), int64_t(base.size()));
    for (Isa isa : test::available_isas()) {
        set_isa(isa);
        EXPECT_EQ(argmax_f32(base.data(), int64_t(base.size())), want) << isa_name(isa);
        for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 63, 100, 1000}) {
            for (int64_t at = 0; at < n; at += std::max<int64_t>(1, n / 7)) {
                std::vector<float> x(base.begin(), base.begin() + n);
                x[size_t(at)] = 50.0f;
                if (at + 3 < n) x[size_t(at + 3)] = 50.0f;  // a tie later: the first wins
                ASSERT_EQ(argmax_f32(x.data(), n), at) << isa_name(isa) << " n " << n;
                x[size_t(n - 1)] = std::nanf("");
                if (at != n - 1) {
                    ASSERT_EQ(argmax_f32(x.data(), n), at) << isa_name(isa) << " NaN at the end, n " << n;
                }
            }
        }
        std::vector<float> x(100, -INFINITY);
        EXPECT_EQ(argmax_f32(x.data(), 100), 0) << isa_name(isa);
        x[0] = std::nanf("");
        x[40] = 3.0f;
        EXPECT_EQ(argmax_f32(x.data(), 100), 0) << isa_name(isa) << " NaN first";
        x[0] = 1.0f;
        x[10] = std::nanf("");
        EXPECT_EQ(argmax_f32(x.data(), 100), 40) << isa_name(isa);
    }
}

// The balanced pass reads in chunks and lets a thread take the rest of another's share: every size, including
// ones that leave a short last chunk or fewer chunks than threads, stays inside the buffer. Each buffer ends
// right at a page mapped PROT_NONE, so a read past its end faults and the test dies.
TEST(Bandwidth, BalancedPassStaysInsideOddSizes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (size_t bytes : {size_t(0), size_t(8), size_t(16 << 10) + 8, size_t(3 << 20) + 24, size_t(5 << 20) - 8}) {
            const size_t body = (bytes + page - 1) / page * page;
            void* map = mmap(nullptr, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            ASSERT_NE(map, MAP_FAILED);
            ASSERT_EQ(0, mprotect(static_cast<char*>(map) + body, page, PROT_NONE));
            const char* data = static_cast<char*>(map) + (body - bytes);  // 8-byte aligned: bytes is a multiple of 8
            EXPECT_GE(stream_read_seconds(&pool, data, bytes), 0.0) << threads << " threads, " << bytes << " bytes";
            munmap(map, body + page);
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
