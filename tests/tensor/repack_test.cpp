// The sixteen-row layouts (tensor/repack.h): repacking keeps every value, the scalar kernel on the repacked
// bytes gives the file layout's scalar results bit for bit (a matrix in one column panel; a wider one sums its
// panels' products), the SIMD kernels agree with it within the
// format's rounding and give a token the same bits whatever batch it is in, and internal layouts never
// reach a file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"
#include "tensor/repack.h"
#include "tensor/thread_pool.h"
#include "tensor/vec.h"
#include "tensor_test_util.h"
#include "util/error.h"

using namespace flint;
using namespace flint::test;

namespace {

struct Pair { DType file, packed; };
const Pair kPairs[] = {{DType::Q8_0, DType::Q8_0_R16},
                       {DType::Q4_0, DType::Q4_0_R16},
                       {DType::Q5_0, DType::Q5_0_R16},
                       {DType::Q8_0, DType::Q8_0_R8},
                       {DType::Q4_0, DType::Q4_0_R8},
                       {DType::Q5_0, DType::Q5_0_R8},
                       {DType::Q4_K, DType::Q4_K_R8},
                       {DType::Q5_K, DType::Q5_K_R8},
                       {DType::Q6_K, DType::Q6_K_R8},
                       {DType::Q4_K, DType::Q4_K_R16},
                       {DType::Q5_K, DType::Q5_K_R16},
                       {DType::Q6_K, DType::Q6_K_R16},
                       {DType::IQ4_NL, DType::IQ4_NL_R16},
                       {DType::Q4_1, DType::Q4_1_R16},
                       {DType::Q5_1, DType::Q5_1_R16},
                       {DType::IQ4_NL, DType::IQ4_NL_R8},
                       {DType::Q4_1, DType::Q4_1_R8},
                       {DType::Q5_1, DType::Q5_1_R8},
                       {DType::Q3_K, DType::Q3_K_R16},
                       {DType::Q2_K, DType::Q2_K_R16},
                       {DType::Q3_K, DType::Q3_K_R8},
                       {DType::Q2_K, DType::Q2_K_R8},
                       {DType::IQ4_XS, DType::IQ4_XS_R16},
                       {DType::IQ4_XS, DType::IQ4_XS_R8}};

// A width the file type can hold: cols rounded up to its block (256 for Q4_K).
int64_t fit(Pair p, int64_t cols) {
    const int64_t b = traits(p.file).block_elems;
    return (cols + b - 1) / b * b;
}

struct Packed {
    std::vector<uint8_t> file, packed;
};

Packed make(Pair p, int64_t rows, int64_t cols, uint32_t seed) {
    Packed m;
    m.file = quantize_matrix(p.file, random_floats(size_t(rows * cols), seed), rows, cols);
    m.packed = m.file;
    repack_rows(p.file, p.packed, m.packed.data(), rows, cols);
    return m;
}

}  // namespace

TEST(Repack, EveryRowDequantizesToTheFileRow) {
    // One column panel; several (below); several with 13 groups of sixteen rows, so the in-place move into
    // panels follows long cycles.
    for (Pair p : kPairs)
        for (auto [rows, width] : {std::pair<int64_t, int64_t>{32, 96}, {32, 4864}, {208, 4864}}) {
            const int64_t cols = fit(p, width);
            Packed m = make(p, rows, cols, 1);
            EXPECT_NE(0, std::memcmp(m.file.data(), m.packed.data(), m.file.size())) << "the bytes did move";
            std::vector<float> a(cols), b(cols), c(cols);
            for (int64_t r = 0; r < rows; ++r) {
                dequantize_row_ref(p.file, m.file.data() + size_t(r) * row_bytes(p.file, cols), a.data(), cols);
                dequantize_matrix_row(p.packed, m.packed.data(), rows, r, cols, b.data());
                get_row(WeightView{p.packed, m.packed.data(), rows, cols}, r, c.data());
                ASSERT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(float) * cols)) << dtype_name(p.packed) << " row " << r;
                ASSERT_EQ(0, std::memcmp(a.data(), c.data(), sizeof(float) * cols)) << dtype_name(p.packed) << " row " << r;
            }
        }
}

// A wide matrix is stored as column panels, each a narrower matrix in the layout's groups, one after another.
TEST(Repack, WideMatricesAreStoredInColumnPanels) {
    EXPECT_EQ(1, layout_panels(DType::Q4_0_R16, 896));   // 16 x 504 bytes + 1120 of activations
    EXPECT_EQ(3, layout_panels(DType::Q4_0_R16, 4864));  // 16 x 2736 + 6080: FFN down of Qwen2.5-Coder-0.5B
    EXPECT_EQ(4, layout_panels(DType::Q8_0_R16, 4864));  // 16 x 5168 + 6080
    EXPECT_EQ(1, layout_panels(DType::Q4_0, 1 << 20));   // the file's layout: one row at a time, no panels
    EXPECT_EQ(1, layout_panels(DType::F32, 1 << 20));
    for (DType t : {DType::Q4_0_R16, DType::Q8_0_R16, DType::Q4_K_R16, DType::Q6_K_R8}) {
        const int64_t rows = 48, cols = 256 * 38;  // 9728
        const int n = layout_panels(t, cols);
        ASSERT_GT(n, 1) << dtype_name(t);
        ASSERT_LE(n, 8) << dtype_name(t);
        int64_t c = 0;
        size_t offset = 0;
        for (int p = 0; p < n; ++p) {  // panels tile the columns in whole blocks, each right after the last
            const Panel q = layout_panel(t, rows, cols, p);
            EXPECT_EQ(c, q.c0);
            EXPECT_EQ(offset, q.offset);
            EXPECT_GT(q.c1, q.c0);
            EXPECT_EQ(0, q.c0 % traits(t).block_elems);
            c = q.c1;
            offset += size_t(rows) * row_bytes(t, size_t(q.c1 - q.c0));
        }
        EXPECT_EQ(cols, c) << dtype_name(t);
        EXPECT_EQ(size_t(rows) * row_bytes(t, size_t(cols)), offset) << dtype_name(t);
    }
}

TEST(Repack, ScalarKernelGivesTheFileLayoutsBits) {
    IsaGuard guard;
    set_isa(Isa::Scalar);
    for (Pair p : kPairs) {
        const int64_t rows = 16, cols = fit(p, 256), n = 5;
        Packed m = make(p, rows, cols, 2);
        auto x = random_floats(size_t(n * cols), 3);
        std::vector<float> y_file(size_t(n * rows)), y_packed(size_t(n * rows));
        matmul(WeightView{p.file, m.file.data(), rows, cols}, x.data(), n, y_file.data(), nullptr);
        matmul(WeightView{p.packed, m.packed.data(), rows, cols}, x.data(), n, y_packed.data(), nullptr);
        EXPECT_EQ(0, std::memcmp(y_file.data(), y_packed.data(), sizeof(float) * y_file.size())) << dtype_name(p.packed);
    }
}

TEST(Repack, EveryIsaMatchesTheScalarReference) {
    IsaGuard guard;
    ThreadPool pool(2);
    for (Pair p : kPairs) {
        for (int64_t c : {int64_t(32), int64_t(96), int64_t(896), int64_t(4864)}) {
            const int64_t cols = fit(p, c);
            // Five groups: eight-row layouts decode tiles of two groups and of one (16 + 16 + 8 rows).
            const int64_t rows = 5 * interleaved_rows(p.packed);
            Packed m = make(p, rows, cols, 4 + uint32_t(cols));
            const WeightView wv{p.packed, m.packed.data(), rows, cols};
            for (int64_t n : {1, 3, 8, 9, 17, 64, 300}) {
                auto x = random_floats(size_t(n * cols), 5 + uint32_t(n));
                std::vector<float> ref(size_t(n * rows)), got(size_t(n * rows)), mag(size_t(n * rows));
                // Tolerance: the kernels differ only in the order of f32 additions, so relative to sum |terms|.
                std::vector<float> wr(cols);
                for (int64_t r = 0; r < rows; ++r) {
                    dequantize_matrix_row(p.packed, m.packed.data(), rows, r, cols, wr.data());
                    for (int64_t t = 0; t < n; ++t)
                        for (int64_t c = 0; c < cols; ++c) mag[t * rows + r] += std::fabs(wr[c] * x[t * cols + c]);
                }
                set_isa(Isa::Scalar);
                matmul(wv, x.data(), n, ref.data(), nullptr);
                for (KernelPath kp : kernel_paths()) {
                    kp.use();
                    std::fill(got.begin(), got.end(), std::nanf(""));  // a row a kernel skips cannot pass
                    matmul(wv, x.data(), n, got.data(), &pool);
                    for (size_t i = 0; i < ref.size(); ++i)
                        ASSERT_NEAR(ref[i], got[i], 1e-5f * mag[i] + 1e-6f)
                            << kp.name() << " " << dtype_name(p.packed) << " cols " << cols << " n " << n << " at " << i;
                }
            }
        }
    }
}

TEST(Repack, ATokenGetsTheSameBitsInAnyBatch) {
    IsaGuard guard;
    ThreadPool pool(2);
    for (KernelPath kp : kernel_paths()) {
        kp.use();
        for (Pair p : kPairs)
            // 3 and 28 blocks (the decode kernels' odd tail too), and a wide matrix in column panels.
            for (int64_t c : {int64_t(96), int64_t(896), int64_t(4864)}) {
                const int64_t rows = 5 * interleaved_rows(p.packed), cols = fit(p, c);  // as above
                Packed m = make(p, rows, cols, 6);
                const WeightView wv{p.packed, m.packed.data(), rows, cols};
                for (int64_t n : {2, 5, 8, 9, 17, 33, 300}) {
                    auto x = random_floats(size_t(n * cols), 7 + uint32_t(n));
                    std::vector<float> batched(size_t(n * rows)), single(static_cast<size_t>(rows));
                    matmul(wv, x.data(), n, batched.data(), &pool);
                    for (int64_t k = 0; k < n; ++k) {
                        matmul(wv, x.data() + k * cols, 1, single.data(), &pool);
                        ASSERT_EQ(0, std::memcmp(single.data(), batched.data() + k * rows, sizeof(float) * rows))
                            << kp.name() << " " << dtype_name(p.packed) << " cols " << cols << " batch " << n << " token " << k;
                    }
                }
            }
    }
}

// Wide matrices (column panels) through the fused calls: matmul_many and matmul_swiglu give the bits of
// separate matmul calls (plus silu_mul), for one token and a batch.
TEST(Repack, WideMatricesInFusedCallsEqualSeparateCalls) {
    IsaGuard guard;
    ThreadPool pool(2);
    for (KernelPath kp : kernel_paths()) {
        kp.use();
        for (Pair p : kPairs) {
            const int64_t rows = 2 * interleaved_rows(p.packed);
            int64_t cols = fit(p, 4864);
            if (layout_panels(p.packed, cols) == 1) cols = fit(p, 2 * 4864);  // Q2_K_R8's groups are small
            ASSERT_GT(layout_panels(p.packed, cols), 1) << dtype_name(p.packed);
            Packed a = make(p, rows, cols, 8), b = make(p, rows, cols, 9);
            const WeightView A{p.packed, a.packed.data(), rows, cols}, B{p.packed, b.packed.data(), rows, cols};
            for (int64_t n : {1, 5}) {
                const auto x = random_floats(size_t(n * cols), 10 + uint32_t(n));
                std::vector<float> ya(size_t(n * rows)), yb(ya.size()), h(ya.size()), u(ya.size());
                matmul(A, x.data(), n, ya.data(), &pool);
                matmul(B, x.data(), n, yb.data(), &pool);
                const std::string at = kp.name() + " " + std::string(dtype_name(p.packed)) + " n " + std::to_string(n);
                const MatmulOut outs[2] = {{A, h.data()}, {B, u.data()}};
                matmul_many(outs, x.data(), n, &pool);
                EXPECT_EQ(ya, h) << at;
                EXPECT_EQ(yb, u) << at;
                silu_mul(ya.data(), yb.data(), n * rows);
                matmul_swiglu(A, B, x.data(), n, h.data(), u.data(), &pool);
                EXPECT_EQ(ya, h) << at;
                EXPECT_EQ(yb, u) << at;
            }
        }
    }
}

TEST(Repack, TargetOnlyWhereTheKernelsHaveAFasterLayout) {
    IsaGuard guard;
    set_isa(Isa::Scalar);
    EXPECT_FALSE(repack_target(DType::Q8_0, 64, 64));  // the scalar kernels read the file's layout
    if (best_isa() != Isa::Scalar) {
        set_isa(Isa::AVX2);  // eight-row groups for 256-bit registers: every type with a sixteen-row layout
        EXPECT_EQ(std::optional(DType::Q8_0_R8), repack_target(DType::Q8_0, 24, 64));
        EXPECT_EQ(std::optional(DType::Q4_0_R8), repack_target(DType::Q4_0, 24, 64));
        EXPECT_EQ(std::optional(DType::Q5_0_R8), repack_target(DType::Q5_0, 24, 64));
        EXPECT_EQ(std::optional(DType::Q4_K_R8), repack_target(DType::Q4_K, 24, 256));
        EXPECT_EQ(std::optional(DType::Q5_K_R8), repack_target(DType::Q5_K, 24, 256));
        EXPECT_EQ(std::optional(DType::Q6_K_R8), repack_target(DType::Q6_K, 24, 256));
        EXPECT_EQ(std::optional(DType::IQ4_NL_R8), repack_target(DType::IQ4_NL, 24, 64));
        EXPECT_EQ(std::optional(DType::Q4_1_R8), repack_target(DType::Q4_1, 24, 64));
        EXPECT_EQ(std::optional(DType::Q5_1_R8), repack_target(DType::Q5_1, 24, 64));
        EXPECT_EQ(std::optional(DType::Q3_K_R8), repack_target(DType::Q3_K, 24, 256));
        EXPECT_EQ(std::optional(DType::Q2_K_R8), repack_target(DType::Q2_K, 24, 256));
        EXPECT_EQ(std::optional(DType::IQ4_XS_R8), repack_target(DType::IQ4_XS, 24, 256));
        EXPECT_FALSE(repack_target(DType::Q4_0, 20, 64));
        EXPECT_FALSE(repack_target(DType::Q8_0, 60, 64));  // not whole groups of eight rows
    }
    if (best_isa() == Isa::AVX512) {
        set_isa(Isa::AVX512);
        EXPECT_EQ(std::optional(DType::Q8_0_R16), repack_target(DType::Q8_0, 64, 64));
        EXPECT_EQ(std::optional(DType::Q4_0_R16), repack_target(DType::Q4_0, 64, 64));
        EXPECT_EQ(std::optional(DType::Q5_0_R16), repack_target(DType::Q5_0, 64, 64));
        EXPECT_EQ(std::optional(DType::Q4_K_R16), repack_target(DType::Q4_K, 64, 256));
        EXPECT_FALSE(repack_target(DType::Q8_0, 62, 64));  // not whole groups of sixteen rows
        EXPECT_EQ(std::optional(DType::Q5_K_R16), repack_target(DType::Q5_K, 64, 256));
        EXPECT_EQ(std::optional(DType::Q6_K_R16), repack_target(DType::Q6_K, 64, 256));
        EXPECT_EQ(std::optional(DType::IQ4_NL_R16), repack_target(DType::IQ4_NL, 64, 64));
        EXPECT_EQ(std::optional(DType::Q4_1_R16), repack_target(DType::Q4_1, 64, 64));
        EXPECT_EQ(std::optional(DType::Q5_1_R16), repack_target(DType::Q5_1, 64, 64));
        EXPECT_EQ(std::optional(DType::Q3_K_R16), repack_target(DType::Q3_K, 64, 256));
        EXPECT_EQ(std::optional(DType::Q2_K_R16), repack_target(DType::Q2_K, 64, 256));
        EXPECT_EQ(std::optional(DType::IQ4_XS_R16), repack_target(DType::IQ4_XS, 64, 256));
        EXPECT_FALSE(repack_target(DType::F16, 64, 64));
    }
}

TEST(Repack, RefusesWhatItCannotRepack) {
    std::vector<uint8_t> buf(row_bytes(DType::Q8_0, 64) * 8);
    EXPECT_THROW(repack_rows(DType::Q8_0, DType::Q4_0_R16, buf.data(), 8, 64), Error);
    EXPECT_THROW(repack_rows(DType::Q6_K, DType::Q8_0_R16, buf.data(), 1, 256), Error);
    EXPECT_THROW(repack_rows(DType::Q8_0, DType::Q8_0_R16, buf.data(), 6, 64), Error);
    std::vector<float> y(6 * 2), x(2 * 64);
    EXPECT_THROW(matmul(WeightView{DType::Q8_0_R16, buf.data(), 6, 64}, x.data(), 2, y.data(), nullptr), Error);
}

TEST(Repack, InternalLayoutsNeverReachAFile) {
    gguf::Writer w;
    std::vector<uint8_t> data(row_bytes(DType::Q8_0, 32) * 4);
    EXPECT_THROW(w.add_tensor("t", DType::Q8_0_R16, {32, 4}, data), Error);
}
