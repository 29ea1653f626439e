// A token's matmul output does not depend on the batch it is in: the decode path (one token) and the
// batched paths (prefill, draft verification, several sequences) give bit-identical rows. Speculative
// decoding relies on it to be lossless, and continuous batching to give each sequence what it would get
// alone.
#include <cstring>

#include <gtest/gtest.h>

#include "tensor/thread_pool.h"
#include "tensor_test_util.h"

using namespace flint;
using namespace flint::test;

TEST(BatchInvariance, EveryTokenOfABatchMatchesItsSingleTokenProduct) {
    IsaGuard guard;
    ThreadPool pool(2);
    for (Isa isa : available_isas()) {
        set_isa(isa);
        for (DType t : kWeightTypes) {
            for (int64_t cols : {int64_t(64), int64_t(172), int64_t(256), int64_t(896), int64_t(4864)}) {  // short rows: dot_avx2 decodes them four at a time
                if (cols % traits(t).block_elems != 0) continue;
                const int64_t rows = 37;
                auto wf = random_floats(size_t(rows * cols), 11);
                auto w = quantize_matrix(t, wf, rows, cols);
                WeightView wv{t, w.data(), rows, cols};
                for (int64_t n : {2, 3, 5, 8, 9, 17, 32, 33}) {
                    auto x = random_floats(size_t(n * cols), 12 + uint32_t(n));
                    std::vector<float> batched(size_t(n * rows));
                    std::vector<float> single(static_cast<size_t>(rows));
                    matmul(wv, x.data(), n, batched.data(), &pool);
                    for (int64_t k = 0; k < n; ++k) {
                        matmul(wv, x.data() + k * cols, 1, single.data(), &pool);
                        ASSERT_EQ(0, std::memcmp(single.data(), batched.data() + k * rows, sizeof(float) * rows))
                            << "isa " << isa_name(isa) << " type " << dtype_name(t) << " cols " << cols << " batch " << n
                            << " token " << k;
                    }
                }
            }
        }
    }
}
