// matmul against a double-precision reference, and every SIMD kernel against the scalar one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "tensor/kernels.h"
#include "tensor/matmul.h"
#include "tensor/quant.h"
#include "tensor/quant_internal.h"
#include "tensor/thread_pool.h"
#include "tensor/vec.h"
#include "tensor_test_util.h"
#include "util/error.h"

namespace flint {
namespace {

using test::available_isas;
using test::IsaGuard;
using test::kWeightTypes;
using test::quantize_matrix;
using test::random_floats;

int64_t block_of(DType t) { return traits(t).block_elems == 1 ? 32 : traits(t).block_elems; }

// Column counts to try: block multiples, plus widths that are no multiple of 8 for float weights
// (stories260K's FFN is 172 wide).
std::vector<int64_t> widths(DType t, std::initializer_list<int64_t> blocks) {
    const int64_t bs = block_of(t);
    std::vector<int64_t> v;
    for (int64_t b : blocks) v.push_back(b * bs);
    if (traits(t).block_elems == 1) v.insert(v.end(), {1, 7, 13, 172});
    return v;
}

// Reference: dequantized weights times the activations, in double. The kernels see the activations
// after their own quantization (Q8_0 / Q8_K), so the allowed error is exactly what that costs,
// sum_c |W[r,c]| * |x[c] - xq[c]|, plus f32 rounding of the sums.
struct Reference {
    std::vector<double> y;
    std::vector<double> bound;
};

Reference reference(DType t, const std::vector<uint8_t>& wq, int64_t rows, int64_t cols, const std::vector<float>& x,
                    int64_t nt) {
    Reference ref{std::vector<double>(size_t(rows * nt)), std::vector<double>(size_t(rows * nt))};
    const DType at = detail::activation_type(t);
    std::vector<float> xq(x.size());
    for (int64_t k = 0; k < nt; ++k) {
        std::vector<uint8_t> q(row_bytes(at, size_t(cols)));
        quantize_row_ref(at, x.data() + k * cols, q.data(), cols);
        dequantize_row_ref(at, q.data(), xq.data() + k * cols, cols);
    }
    std::vector<float> wr(static_cast<size_t>(cols));
    const size_t rb = row_bytes(t, size_t(cols));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row_ref(t, wq.data() + size_t(r) * rb, wr.data(), cols);
        for (int64_t k = 0; k < nt; ++k) {
            double s = 0, act_err = 0, mag = 0;
            for (int64_t c = 0; c < cols; ++c) {
                const double w = wr[size_t(c)], xv = x[size_t(k * cols + c)];
                s += w * xv;
                act_err += std::fabs(w) * std::fabs(xv - xq[size_t(k * cols + c)]);
                mag += std::fabs(w * xv);
            }
            ref.y[size_t(k * rows + r)] = s;
            ref.bound[size_t(k * rows + r)] = act_err * 1.0001 + 2e-6 * mag + 1e-6;
        }
    }
    return ref;
}

TEST(Matmul, MatchesDoublePrecisionReferenceForEveryTypeAndIsa) {
    IsaGuard guard;
    ThreadPool pool(3);
    for (DType t : kWeightTypes) {
        for (int64_t cols : widths(t, {1, 3, 8})) {
            for (int64_t rows : {1, 5, 13}) {
                const auto wf = random_floats(size_t(rows * cols), uint32_t(rows * 7 + cols));
                const auto wq = quantize_matrix(t, wf, rows, cols);
                const WeightView w{t, wq.data(), rows, cols};
                for (int64_t nt : {1, 2, 5, 9}) {
                    const auto x = random_floats(size_t(nt * cols), uint32_t(nt + 100));
                    const Reference ref = reference(t, wq, rows, cols, x, nt);
                    for (Isa isa : available_isas()) {
                        set_isa(isa);
                        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
                            std::vector<float> y(size_t(rows * nt), NAN);
                            matmul(w, x.data(), nt, y.data(), p);
                            for (size_t i = 0; i < y.size(); ++i)
                                ASSERT_NEAR(y[i], ref.y[i], ref.bound[i])
                                    << dtype_name(t) << " " << isa_name(isa) << " rows " << rows << " cols " << cols
                                    << " nt " << nt << " i " << i;
                        }
                    }
                }
            }
        }
    }
}

// SIMD kernels against the scalar reference: identical integer block sums, so the only difference
// is the order of f32 additions; tolerance is relative to the sum of |terms|.
TEST(Matmul, SimdMatchesScalarOnManyShapes) {
    IsaGuard guard;
    if (available_isas().size() == 1) GTEST_SKIP() << "no SIMD instruction set on this CPU";
    ThreadPool pool(2);
    for (DType t : kWeightTypes) {
        for (int64_t cols : widths(t, {1, 2, 7, block_of(t) == 32 ? 28 : 4})) {
            for (int64_t rows : {1, 2, 3, 4, 6, 11, 64 + 3}) {
                const auto wf = random_floats(size_t(rows * cols), uint32_t(rows * 31 + cols));
                const auto wq = quantize_matrix(t, wf, rows, cols);
                const WeightView w{t, wq.data(), rows, cols};
                for (int64_t nt = 1; nt <= 9; ++nt) {
                    const auto x = random_floats(size_t(nt * cols), uint32_t(nt * 3 + 7));
                    set_isa(Isa::Scalar);
                    std::vector<float> want(size_t(rows * nt));
                    matmul(w, x.data(), nt, want.data(), nullptr);
                    // Magnitude of the terms, for the rounding-order tolerance.
                    std::vector<float> wr(static_cast<size_t>(cols));
                    std::vector<double> mag(size_t(rows * nt));
                    for (int64_t r = 0; r < rows; ++r) {
                        get_row(w, r, wr.data());
                        for (int64_t k = 0; k < nt; ++k)
                            for (int64_t c = 0; c < cols; ++c)
                                mag[size_t(k * rows + r)] += std::fabs(wr[size_t(c)] * x[size_t(k * cols + c)]);
                    }
                    for (Isa isa : available_isas()) {
                        if (isa == Isa::Scalar) continue;
                        set_isa(isa);
                        std::vector<float> got(size_t(rows * nt), NAN);
                        matmul(w, x.data(), nt, got.data(), nt % 2 ? &pool : nullptr);
                        for (size_t i = 0; i < got.size(); ++i)
                            ASSERT_NEAR(got[i], want[i], 1e-5 * mag[i] + 1e-6)
                                << dtype_name(t) << " " << isa_name(isa) << " rows " << rows << " cols " << cols
                                << " nt " << nt << " i " << i;
                    }
                }
            }
        }
    }
}

TEST(Matmul, LongRowsCrossTheDecodeActivationChunks) {
    // The AVX-512 decode path prepares the activation 64 block pairs (4096 columns) at a time; an odd
    // block count puts the half pair at the end of the second chunk.
    IsaGuard guard;
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0}) {
        for (int64_t cols : {int64_t(4864), int64_t(129 * 32)}) {
            const int64_t rows = 19;
            const auto wq = quantize_matrix(t, random_floats(size_t(rows * cols), 41), rows, cols);
            const WeightView w{t, wq.data(), rows, cols};
            for (int64_t nt : {1, 3}) {
                const auto x = random_floats(size_t(nt * cols), 42);
                const Reference ref = reference(t, wq, rows, cols, x, nt);
                for (Isa isa : available_isas()) {
                    set_isa(isa);
                    std::vector<float> y(size_t(rows * nt));
                    matmul(w, x.data(), nt, y.data(), nullptr);
                    for (size_t i = 0; i < y.size(); ++i)
                        ASSERT_NEAR(y[i], ref.y[i], ref.bound[i]) << dtype_name(t) << " " << isa_name(isa) << " cols " << cols;
                }
            }
        }
    }
}

TEST(Matmul, LargeBatchUsesEveryTokenBlock) {
    // More tokens than one token block (64) and enough work to go parallel.
    IsaGuard guard;
    ThreadPool pool(2);
    const int64_t rows = 37, cols = 512, nt = 131;
    for (DType t : {DType::Q8_0, DType::Q4_K, DType::F16}) {
        const auto wq = quantize_matrix(t, random_floats(size_t(rows * cols), 9), rows, cols);
        const WeightView w{t, wq.data(), rows, cols};
        const auto x = random_floats(size_t(nt * cols), 10);
        const Reference ref = reference(t, wq, rows, cols, x, nt);
        std::vector<float> y(size_t(rows * nt));
        matmul(w, x.data(), nt, y.data(), &pool);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref.y[i], ref.bound[i]) << dtype_name(t) << " i " << i;
    }
}

// matmul_many (Q, K, V) and matmul_swiglu (gate, up) give the bits of separate matmul calls (plus silu_mul),
// for decode, draft-sized and prompt-sized batches, one or two threads, every ISA, the fused region and the
// fallback for mixed types (a Q4_K_M file's V is Q6_K).
TEST(Matmul, FusedCallsEqualSeparateCalls) {
    IsaGuard guard;
    ThreadPool pool(2);
    const int64_t cols = 256, rq = 96, rkv = 32, rf = 176;
    auto weight = [&](DType t, int64_t rows, uint32_t seed) { return quantize_matrix(t, random_floats(size_t(rows * cols), seed), rows, cols); };
    for (Isa isa : available_isas()) {
        set_isa(isa);
        for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::F16}) {
            const DType tv = t == DType::Q4_K ? DType::Q6_K : t;  // mixed types: one call each
            const auto wq = weight(t, rq, 1), wk = weight(t, rkv, 2), wv = weight(tv, rkv, 3);
            const auto wg = weight(t, rf, 4), wu = weight(tv, rf, 5);
            const WeightView Q{t, wq.data(), rq, cols}, K{t, wk.data(), rkv, cols}, V{tv, wv.data(), rkv, cols};
            const WeightView G{t, wg.data(), rf, cols}, U{tv, wu.data(), rf, cols};
            for (int64_t nt : {1, 3, 17, 70}) {
                const auto x = random_floats(size_t(nt * cols), uint32_t(nt));
                for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
                    std::vector<float> q(size_t(nt * rq)), k(size_t(nt * rkv)), v(size_t(nt * rkv));
                    std::vector<float> q2 = q, k2 = k, v2 = v;
                    matmul(Q, x.data(), nt, q.data(), p);
                    matmul(K, x.data(), nt, k.data(), p);
                    matmul(V, x.data(), nt, v.data(), p);
                    const MatmulOut outs[3] = {{Q, q2.data()}, {K, k2.data()}, {V, v2.data()}};
                    matmul_many(outs, x.data(), nt, p);
                    const std::string at = std::string(dtype_name(t)) + " " + isa_name(isa) + " nt " + std::to_string(nt);
                    EXPECT_EQ(q, q2) << at;
                    EXPECT_EQ(k, k2) << at;
                    EXPECT_EQ(v, v2) << at;

                    std::vector<float> g(size_t(nt * rf)), u(g.size()), h(g.size()), u2(g.size());
                    matmul(G, x.data(), nt, g.data(), p);
                    matmul(U, x.data(), nt, u.data(), p);
                    silu_mul(g.data(), u.data(), nt * rf);
                    matmul_swiglu(G, U, x.data(), nt, h.data(), u2.data(), p);
                    EXPECT_EQ(u, u2) << at;
                    EXPECT_EQ(g, h) << at;
                }
            }
        }
    }
    std::vector<uint8_t> buf(1 << 16);
    std::vector<float> x(256), y(4096);
    EXPECT_THROW(matmul_swiglu(WeightView{DType::F32, buf.data(), 8, 256}, WeightView{DType::F32, buf.data(), 16, 256},
                               x.data(), 1, y.data(), y.data() + 2048, nullptr),
                 Error);
}

TEST(Matmul, GetRowDequantizesOneRow) {
    const int64_t rows = 5, cols = 256;
    const auto wf = random_floats(size_t(rows * cols), 11);
    for (DType t : kWeightTypes) {
        const auto wq = quantize_matrix(t, wf, rows, cols);
        std::vector<float> got(static_cast<size_t>(cols)), want(static_cast<size_t>(cols));
        get_row(WeightView{t, wq.data(), rows, cols}, 3, got.data());
        dequantize_row_ref(t, wq.data() + 3 * row_bytes(t, size_t(cols)), want.data(), cols);
        EXPECT_EQ(got, want) << dtype_name(t);
    }
}

TEST(Matmul, RejectsBadShapesAndTypes) {
    std::vector<uint8_t> buf(4096);
    std::vector<float> x(256), y(256);
    EXPECT_THROW(matmul(WeightView{DType::Q8_0, buf.data(), 2, 48}, x.data(), 1, y.data(), nullptr), Error);
    EXPECT_THROW(matmul(WeightView{DType::Q8_1, buf.data(), 2, 256}, x.data(), 1, y.data(), nullptr), Error);
    EXPECT_THROW(get_row(WeightView{DType::F32, buf.data(), 2, 16}, 2, y.data()), Error);
}

TEST(Isa, SetIsaRejectsWhatTheCpuLacksAndRestores) {
    IsaGuard guard;
    EXPECT_EQ(active_isa(), best_isa());
    set_isa(Isa::Scalar);
    EXPECT_EQ(active_isa(), Isa::Scalar);
    if (best_isa() != Isa::AVX512) {
        EXPECT_THROW(set_isa(Isa::AVX512), Error);
    }
}

// The one-token weight prefetch is a choice of table for AVX-512 only: forcing it keeps the instruction set,
// an instruction set chosen later keeps it, and Auto goes back to the CPU's choice (with AVX-512: on for Intel
// and for AMD from Zen 5, CPU family 26; off for Zen 4).
bool auto_decode_prefetch() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (best_isa() != Isa::AVX512) return false;
    if (__builtin_cpu_is("intel")) return true;
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid(1, &a, &b, &c, &d);
    const unsigned base = (a >> 8) & 0xf, ext = (a >> 20) & 0xff;
    return __builtin_cpu_is("amd") && base == 0xf && base + ext >= 26;
#else
    return false;
#endif
}

TEST(Isa, DecodePrefetchSwitchesTheTableNotTheIsa) {
    IsaGuard guard;
    EXPECT_EQ(decode_prefetch(), auto_decode_prefetch());
    set_isa(Isa::Scalar);
    set_decode_prefetch(DecodePrefetch::On);
    EXPECT_TRUE(decode_prefetch());
    EXPECT_EQ(active_isa(), Isa::Scalar);
    set_isa(best_isa());
    EXPECT_EQ(active_isa(), best_isa());
    EXPECT_TRUE(decode_prefetch());
    set_decode_prefetch(DecodePrefetch::Off);
    EXPECT_FALSE(decode_prefetch());
    EXPECT_EQ(active_isa(), best_isa());
    if (best_isa() == Isa::AVX512) {  // the kernels themselves change with it
        const DType takes[] = {DType::Q4_0_R16, DType::Q8_0_R16, DType::Q4_K_R16, DType::Q5_K_R16, DType::IQ4_XS_R16};
        std::vector<detail::TileFn> off;
        for (DType t : takes) off.push_back(detail::active_kernels().tile[int(t)]);
        const detail::TileFn off6 = detail::active_kernels().tile[int(DType::Q6_K_R16)];
        set_decode_prefetch(DecodePrefetch::On);
        for (size_t i = 0; i < off.size(); ++i) EXPECT_NE(off[i], detail::active_kernels().tile[int(takes[i])]) << dtype_name(takes[i]);
        EXPECT_EQ(off6, detail::active_kernels().tile[int(DType::Q6_K_R16)]);  // Q6_K's kernel does not take the choice
    }
    set_decode_prefetch(DecodePrefetch::Auto);
    EXPECT_EQ(decode_prefetch(), auto_decode_prefetch());
}

}  // namespace
}  // namespace flint

namespace flint {
namespace {

// The SIMD activation quantizers must produce the very bytes the scalar ones do (same scale, same
// round-to-nearest-even), so the integer block sums of SIMD and scalar matmul agree exactly.
TEST(ActivationQuant, SimdBytesEqualScalar) {
    test::IsaGuard guard;
    auto x = test::random_floats(256 * 12, 31);
    for (int i = 0; i < 256; ++i) x[i] = 0;  // zero blocks: scale 0
    std::vector<BlockQ8_0> s0(x.size() / 32), v0(x.size() / 32);
    std::vector<BlockQ8_K> sk(x.size() / 256), vk(x.size() / 256);
    set_isa(Isa::Scalar);
    detail::active_kernels().quantize_q8_0(x.data(), s0.data(), int64_t(x.size()));
    detail::active_kernels().quantize_q8_k(x.data(), sk.data(), int64_t(x.size()));
    for (Isa isa : test::available_isas()) {
        set_isa(isa);
        detail::active_kernels().quantize_q8_0(x.data(), v0.data(), int64_t(x.size()));
        detail::active_kernels().quantize_q8_k(x.data(), vk.data(), int64_t(x.size()));
        EXPECT_EQ(std::memcmp(s0.data(), v0.data(), s0.size() * sizeof(BlockQ8_0)), 0) << isa_name(isa);
        EXPECT_EQ(std::memcmp(sk.data(), vk.data(), sk.size() * sizeof(BlockQ8_K)), 0) << isa_name(isa);
    }
}

// Straight to the interleaved kernels' Q8_0S blocks: every ISA gives the bytes of the scalar quantize_q8_0
// then widen_q8_0s — also for blocks whose fp16 scale is subnormal (the levels clamp at +-127 there), a block
// of one large value among small ones, and an all-zero block.
TEST(ActivationQuant, Q8_0SEqualsQuantizeThenWiden) {
    test::IsaGuard guard;
    auto x = test::random_floats(32 * 40, 32);
    for (int i = 0; i < 32; ++i) x[i] = 0;
    // amax / 127 below fp16's normal range, the largest levels past 127 before the clamp: at the start of
    // block 1, at the end of block 2.
    for (int j = 0; j < 32; ++j) {
        x[32 + j] = (j % 2 ? 1 : -1) * 1e-6f * float(63 - j);
        x[64 + j] = (j % 2 ? 1 : -1) * 1e-6f * float(32 + j);
    }
    for (int i = 96; i < 128; ++i) x[i] = (i % 3 ? -3e-6f : 5e-6f);
    x[140] = 3e4f;
    const int64_t n = int64_t(x.size());
    std::vector<BlockQ8_0> q(size_t(n / 32));
    std::vector<BlockQ8_0S> ref(size_t(n / 32)), got(size_t(n / 32));
    detail::quantize_q8_0(x.data(), q.data(), n);
    detail::widen_q8_0s(q.data(), ref.data(), n / 32);
    for (Isa isa : test::available_isas()) {
        set_isa(isa);
        std::memset(got.data(), 0x5a, got.size() * sizeof(BlockQ8_0S));
        detail::active_kernels().quantize_q8_0s(x.data(), got.data(), n);
        for (size_t b = 0; b < ref.size(); ++b)
            ASSERT_EQ(std::memcmp(&ref[b], &got[b], sizeof(BlockQ8_0S)), 0) << isa_name(isa) << " block " << b;
    }
}

}  // namespace
}  // namespace flint
