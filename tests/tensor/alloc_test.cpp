// matmul and the pool allocate nothing per call once warmed up (the decode loop runs ~100 matmuls
// per token). Counts operator new calls in this test binary.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tensor/matmul.h"
#include "tensor/thread_pool.h"
#include "tensor_test_util.h"

namespace {
std::atomic<long> g_news{0};
}

void* operator new(size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace flint {
namespace {

TEST(NoAllocation, MatmulAndPoolAfterWarmUp) {
    ThreadPool pool(2);
    const int64_t rows = 256, cols = 512, nt = 5;
    for (DType t : {DType::Q8_0, DType::Q4_K, DType::F16}) {
        const auto wq = test::quantize_matrix(t, test::random_floats(size_t(rows * cols), 1), rows, cols);
        const WeightView w{t, wq.data(), rows, cols};
        const auto x = test::random_floats(size_t(nt * cols), 2);
        std::vector<float> y(size_t(rows * nt));
        matmul(w, x.data(), nt, y.data(), &pool);  // warm-up: grows the activation scratch
        const long before = g_news.load();
        for (int i = 0; i < 50; ++i) {
            matmul(w, x.data(), 1, y.data(), &pool);
            matmul(w, x.data(), nt, y.data(), &pool);
            pool.parallel_for(100, [&](int64_t, int64_t) {});
        }
        EXPECT_EQ(g_news.load() - before, 0) << dtype_name(t);
    }
}

}  // namespace
}  // namespace flint
