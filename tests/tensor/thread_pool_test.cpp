// ThreadPool: barrier semantics, many back-to-back runs, sleeping workers, thread-count independence.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tensor/matmul.h"
#include "tensor/shares.h"
#include "tensor/thread_pool.h"
#include "tensor_test_util.h"

namespace flint {
namespace {

TEST(ThreadPool, EveryIndexRunsOncePerCall) {
    for (int n = 1; n <= 4; ++n) {
        ThreadPool pool(n);
        std::vector<int> hits(size_t(n), 0);
        for (int rep = 0; rep < 1000; ++rep)
            pool.run([&](int i, int nth) {
                ASSERT_EQ(nth, n);
                ++hits[size_t(i)];  // distinct slots; run() being a barrier makes the reads below safe
            });
        for (int h : hits) EXPECT_EQ(h, 1000);
    }
}

TEST(ThreadPool, ManyRunsInARowSeeEachOthersWrites) {
    // Each run reads what every thread wrote in the previous run: fails if run() returns early.
    ThreadPool pool(4);
    std::vector<int64_t> v(4, 0);
    for (int rep = 1; rep <= 5000; ++rep) {
        pool.run([&](int i, int) {
            int64_t sum = 0;
            for (int64_t x : v) sum += x;
            ASSERT_EQ(sum, int64_t(4) * (rep - 1) * rep / 2) << "run " << rep << " thread " << i;
        });
        pool.run([&](int i, int) { v[size_t(i)] += rep; });
    }
}

TEST(ThreadPool, WorkersTakeShares) {
    // The caller may run a share a worker has not claimed yet; with slow shares the workers must
    // still get some (otherwise the pool would be a serial loop).
    ThreadPool pool(2);
    const auto caller = std::this_thread::get_id();
    int on_worker = 0;
    for (int rep = 0; rep < 50 && on_worker == 0; ++rep) {
        std::thread::id ran_by[2];
        pool.run([&](int i, int) {
            ran_by[i] = std::this_thread::get_id();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        });
        EXPECT_EQ(ran_by[0], caller);  // the caller always runs index 0
        on_worker += ran_by[1] != caller;
    }
    EXPECT_GT(on_worker, 0);
}

TEST(ThreadPool, ParallelForCoversTheRangeOnce) {
    ThreadPool pool(3);
    for (int64_t n : {0, 1, 2, 3, 10, 1001}) {
        std::vector<int> seen(size_t(n), 0);
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) ++seen[size_t(i)];
        });
        for (int s : seen) ASSERT_EQ(s, 1);
    }
}

TEST(ThreadPool, WakesSleepingWorkersAndDestroysWhileTheySleep) {
    ThreadPool pool(3);
    std::atomic<int> count{0};
    for (int rep = 0; rep < 5; ++rep) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // longer than the spin: workers sleep
        pool.run([&](int, int) { count.fetch_add(1); });
    }
    EXPECT_EQ(count.load(), 15);
    {
        ThreadPool idle(4);
        idle.run([](int, int) {});
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }  // destroyed with every worker asleep: must not hang
    { ThreadPool never_used(2); }
}

TEST(ThreadPool, MatmulResultsIdenticalFor1To4Threads) {
    const int64_t rows = 301, cols = 1024, nt = 7;
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q6_K, DType::F32}) {
        const auto wq = test::quantize_matrix(t, test::random_floats(size_t(rows * cols), 21), rows, cols);
        const WeightView w{t, wq.data(), rows, cols};
        const auto x = test::random_floats(size_t(nt * cols), 22);
        for (int64_t k : {int64_t(1), nt}) {  // decode and batched paths
            std::vector<float> one(size_t(rows * k));
            matmul(w, x.data(), k, one.data(), nullptr);
            for (int n = 1; n <= 4; ++n) {
                ThreadPool pool(n);
                std::vector<float> y(size_t(rows * k));
                matmul(w, x.data(), k, y.data(), &pool);
                for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], one[i]) << dtype_name(t) << " threads " << n;
            }
        }
    }
}

TEST(Shares, AThreadAloneTakesItsOwnShareThenTheOthersInTurn) {
    // 10 items, 3 shares: [0, 3), [3, 6), [6, 10). Thread 1 alone: its own, then share 2's, then share 0's.
    std::vector<Share> shares(3);
    split_shares(shares.data(), 3, 10);
    std::vector<int64_t> order;
    claim_shares(shares.data(), 3, 1, [&](int64_t c) { order.push_back(c); });
    EXPECT_EQ(order, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 0, 1, 2}));
    // Nothing is left for anyone else.
    claim_shares(shares.data(), 3, 0, [&](int64_t c) { ADD_FAILURE() << "item " << c << " claimed twice"; });
}

TEST(Shares, EveryItemGoesToExactlyOneThread) {
    for (int nth = 1; nth <= 4; ++nth) {
        ThreadPool pool(nth);
        std::vector<Share> shares(static_cast<size_t>(nth));
        for (int64_t n : {0, 1, 3, 7, 64, 1001}) {
            for (int rep = 0; rep < 50; ++rep) {
                std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
                split_shares(shares.data(), nth, n);
                pool.run([&](int i, int) {
                    claim_shares(shares.data(), nth, i, [&](int64_t c) { hits[static_cast<size_t>(c)].fetch_add(1); });
                });
                for (int64_t c = 0; c < n; ++c)
                    ASSERT_EQ(hits[static_cast<size_t>(c)].load(), 1) << "item " << c << " of " << n << ", " << nth << " threads";
            }
        }
    }
}

}  // namespace
}  // namespace flint
