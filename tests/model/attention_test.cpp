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
            // heads); more than eight (read in quads, f16/Q8_0 converted per span first).
            for (const int nq : {1, 4, 5, 7, 8, 13}) {
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
