// The AVX2 and AVX-512 grouped attention kernels against the scalar reference, over f32, f16 and Q8_0 caches
// and odd lengths.
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "kv/kv_cache.h"
#include "model/attention.h"
#include "tensor/matmul.h"
#include "tensor/quant.h"

using namespace flint;

namespace {

using GroupKernel = bool (*)(const HeadAttention&, const QueryGroup&, float*);

// The grouped kernel: each query against the scalar reference, and bit-identical whether it is computed
// alone or with others (what makes batched verification lossless).
void check_grouped_kernel(GroupKernel kernel, std::initializer_list<int> head_dims, std::initializer_list<int> block_sizes) {
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_int_distribution<int> level(-127, 127);
    for (DType type : {DType::F32, DType::F16, DType::Q8_0})
        for (int hd : head_dims)
        for (int bs : block_sizes) {
            SCOPED_TRACE(testing::Message() << dtype_name(type) << " head dim " << hd << " block " << bs);
            // Two KV heads at least (Q8_0: kv_dim a multiple of 32, its 32-element blocks spanning heads when
            // they are narrower), the group reading the second.
            const int kv_dim = (2 * hd + QK - 1) / QK * QK, n_blocks = 10;
            KVCache kv({.n_layers = 1, .kv_dim = kv_dim, .block_size = bs, .type = type, .n_blocks = n_blocks});
            std::vector<int32_t> table;
            for (int b = 0; b < n_blocks; ++b) table.push_back(kv.alloc());
            std::shuffle(table.begin(), table.end(), rng);
            if (type == DType::Q8_0) {
                auto scale = [&] { return fp32_to_fp16(0.01f + 0.01f * std::fabs(nd(rng))); };
                for (int b = 0; b < n_blocks; ++b) {
                    auto* kq = reinterpret_cast<int8_t*>(kv.k(b, 0));
                    for (int i = 0; i < bs * kv_dim; ++i) kq[i] = int8_t(level(rng));
                    for (int i = 0; i < bs * kv_dim / QK; ++i) kv.k_scales(b, 0)[i] = scale();
                    for (int j = 0; j < bs; ++j) {
                        auto* row = reinterpret_cast<BlockQ8_0*>(kv.v(b, 0) + size_t(j) * kv.row_bytes());
                        for (int c = 0; c < kv_dim / QK; ++c) {
                            row[c].d = scale();
                            for (int e = 0; e < QK; ++e) row[c].qs[e] = int8_t(level(rng));
                        }
                    }
                }
            }
            for (int b = 0; b < n_blocks && type != DType::Q8_0; ++b)
                for (int i = 0; i < bs * kv_dim; ++i) {
                    float kx = nd(rng), vx = nd(rng);
                    if (type == DType::F16) {
                        reinterpret_cast<uint16_t*>(kv.k(b, 0))[i] = fp32_to_fp16(kx);
                        reinterpret_cast<uint16_t*>(kv.v(b, 0))[i] = fp32_to_fp16(vx);
                    } else {
                        reinterpret_cast<float*>(kv.k(b, 0))[i] = kx;
                        reinterpret_cast<float*>(kv.v(b, 0))[i] = vx;
                    }
                }
            // Group sizes: one query; a quad; a decode group read in one pass (5-8: a KV head's seven query
            // heads); more than eight (AVX-512: read in quads, f16/Q8_0 converted per span first); more than
            // sixteen (AVX2: f16 converted per span; up to sixteen it reads f16 in place, up to two Q8_0).
            for (const int nq : {1, 4, 5, 7, 8, 13, 21}) {
                SCOPED_TRACE(testing::Message() << nq << " queries");
                std::vector<float> q(static_cast<size_t>(nq) * hd), out(q.size()), alone(hd), ref(hd);
                for (float& x : q) x = nd(rng) * 2.0f;
                HeadAttention a{&kv, 0, table, 0, kv_dim / hd - 1, hd};
                QueryGroup g;
                g.n = nq;
                for (int i = 0; i < nq; ++i) {
                    g.q[i] = &q[static_cast<size_t>(i) * hd];
                    g.out[i] = &out[static_cast<size_t>(i) * hd];
                    g.n_pos[i] = 1 + (i * 37) % (n_blocks * bs);
                    a.n_pos = std::max(a.n_pos, g.n_pos[i]);
                }
                std::vector<float> scratch(attend_group_scratch(a));
                ASSERT_TRUE(kernel(a, g, scratch.data()));
                for (int i = 0; i < nq; ++i) {
                    HeadAttention one = a;
                    one.n_pos = g.n_pos[i];
                    std::vector<float> sc(static_cast<size_t>(one.n_pos));
                    detail::attend_head_scalar(one, g.q[i], sc.data(), ref.data());
                    for (int d = 0; d < hd; ++d) ASSERT_NEAR(out[static_cast<size_t>(i) * hd + d], ref[d], 2e-5f) << "query " << i;
                    QueryGroup single;
                    single.n = 1;
                    single.q[0] = g.q[i];
                    single.out[0] = alone.data();
                    single.n_pos[0] = g.n_pos[i];
                    ASSERT_TRUE(kernel(one, single, scratch.data()));
                    ASSERT_EQ(0, std::memcmp(alone.data(), &out[static_cast<size_t>(i) * hd], sizeof(float) * hd)) << "query " << i;
                }
            }
        }
}

}  // namespace

TEST(Attention, Avx2GroupedQueriesMatchReferenceAndAreBatchInvariant) {
    if (best_isa() == Isa::Scalar) GTEST_SKIP() << "this CPU has no AVX2";
    check_grouped_kernel(detail::attend_group_avx2, {8, 16, 24, 32, 48, 64, 80, 96, 128}, {8, 16, 32});
}

TEST(Attention, Avx512GroupedQueriesMatchReferenceAndAreBatchInvariant) {
    if (best_isa() != Isa::AVX512) GTEST_SKIP() << "this CPU has no AVX-512";
    check_grouped_kernel(detail::attend_group_avx512, {16, 48, 64, 80, 96, 128}, {16, 32});
}

// attention_isa() names the kernel attend_group() runs: each ISA's "fits" list agrees with what its
// dispatch accepts, for every head width a multiple of 8 up to 256 and each block size.
TEST(Attention, AttentionIsaNamesTheKernelThatRuns) {
    struct Path {
        Isa isa;
        GroupKernel kernel;
        bool (*fits)(int, int);
    };
    for (const Path& p : {Path{Isa::AVX2, detail::attend_group_avx2, detail::avx2_attention_fits},
                          Path{Isa::AVX512, detail::attend_group_avx512, detail::avx512_attention_fits}}) {
        if (best_isa() < p.isa) continue;
        set_isa(p.isa);
        for (int bs : {8, 16, 32})
            for (int hd = 8; hd <= 256; hd += 8) {
                SCOPED_TRACE(testing::Message() << isa_name(p.isa) << " head dim " << hd << " block " << bs);
                KVCache kv({.n_layers = 1, .kv_dim = (hd + QK - 1) / QK * QK, .block_size = bs, .type = DType::F32, .n_blocks = 1});
                std::vector<int32_t> table{kv.alloc()};
                HeadAttention a{&kv, 0, table, 1, 0, hd};
                std::vector<float> q(static_cast<size_t>(hd), 0.5f), out(q.size());
                QueryGroup g;
                g.n = 1;
                g.q[0] = q.data();
                g.out[0] = out.data();
                g.n_pos[0] = 1;
                std::vector<float> scratch(attend_group_scratch(a));
                EXPECT_EQ(p.fits(hd, bs), p.kernel(a, g, scratch.data()));
                EXPECT_EQ(p.fits(hd, bs), attention_isa(hd, bs) == p.isa);
            }
    }
    set_isa(Isa::Scalar);
    EXPECT_EQ(Isa::Scalar, attention_isa(64, 16));
    set_isa(best_isa());
    EXPECT_NE(Isa::Scalar, attention_isa(48, 16)) << "TinyStories 15M's heads";
    EXPECT_EQ(Isa::Scalar, attention_isa(36, 16)) << "no kernel is compiled for 36";
    // What run, bench and serve log at load.
    EXPECT_EQ("", attention_fallback_warning(48, 16));
    if (best_isa() != Isa::Scalar) {
        EXPECT_NE(std::string::npos, attention_fallback_warning(36, 16).find("heads 36 wide")) << attention_fallback_warning(36, 16);
    }
    set_isa(Isa::Scalar);
    EXPECT_EQ("", attention_fallback_warning(36, 16)) << "the scalar path was asked for: nothing to warn about";
    set_isa(best_isa());
}
