// flint/tensor/thread_pool.cpp — persistent workers woken by an epoch counter.
//
// Protocol: run() publishes the job, sets pending_ = n and next_index_ = 1 (index 0 is the
// caller's), then bumps epoch_. Workers spin on epoch_ for a while (a decode step issues matmuls
// every few µs, far below a futex wake-up), then sleep on cv_. A sleeper registers in sleepers_
// under mu_ and re-checks epoch_ before waiting; run() bumps epoch_ before reading sleepers_ (both
// seq_cst), so either the worker sees the new epoch or run() sees the sleeper and notifies under
// mu_ — no lost wake-up.
//
// Indices are claimed from next_index_, by workers and, after its own share, by the caller: on a
// machine with more runnable threads than cores a worker may not get the CPU for milliseconds, and
// the caller then simply runs that share itself instead of waiting. Claiming is what makes stale
// wake-ups safe: a worker that wakes late can only claim an index of the run in progress (next_index_
// is reset only after the previous run finished, and job_ is published before that reset).
// pending_ reaching 0 ends the run: a full barrier, with nothing allocated per call.
#include "tensor/thread_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FLINT_PAUSE() _mm_pause()
#else
#define FLINT_PAUSE() ((void)0)
#endif

#include "util/error.h"

namespace flint {
namespace {

// How long a worker keeps spinning after its last job before sleeping. Long enough to cover the gap
// between consecutive matmuls of one forward pass (norms, attention on the calling thread), short
// enough not to burn a core when the engine is idle.
constexpr auto kSpinTime = std::chrono::microseconds(200);

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
    if (n_threads < 1) fail("thread pool needs at least one thread, got ", n_threads);
    next_index_.store(n_threads);  // nothing to claim before the first run
    threads_.reserve(size_t(n_threads - 1));
    for (int i = 1; i < n_threads; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_.store(true);
        epoch_.fetch_add(1);
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
    if (n_threads_ == 1) {
        fn(0, 1);
        return;
    }
    job_ = &fn;
    pending_.store(n_threads_, std::memory_order_relaxed);
    next_index_.store(1, std::memory_order_release);  // publishes job_ to whoever claims an index
    epoch_.fetch_add(1);  // seq_cst: ordered before the sleepers_ read below
    if (sleepers_.load() > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
    }
    fn(0, n_threads_);
    int done = 1;
    for (int i; (i = next_index_.fetch_add(1, std::memory_order_acq_rel)) < n_threads_; ++done) fn(i, n_threads_);
    if (pending_.fetch_sub(done, std::memory_order_acq_rel) == done) return;
    // Workers are finishing their shares, which take about as long as ours: spin, and past a few µs
    // yield between checks (a worker holding a share may need this core to finish it).
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
        if (spins < 2000) FLINT_PAUSE();
        else std::this_thread::yield();
    }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    run([&](int i, int nth) {
        const int64_t begin = n * i / nth, end = n * (i + 1) / nth;
        if (begin < end) fn(begin, end);
    });
}

void ThreadPool::worker(int) {
    uint64_t seen = 0;
    for (;;) {
        // Spin on the epoch, then sleep.
        uint64_t e = epoch_.load(std::memory_order_acquire);
        if (e == seen) {
            const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
            int spins = 0;
            while ((e = epoch_.load(std::memory_order_acquire)) == seen) {
                FLINT_PAUSE();
                // Every so often: give the core away if someone else is runnable (cheap when nobody
                // is), and check the clock.
                if (++spins % 256 == 0) {
                    std::this_thread::yield();
                    if (std::chrono::steady_clock::now() > deadline) break;
                }
            }
            if (e == seen) {
                std::unique_lock<std::mutex> lock(mu_);
                sleepers_.fetch_add(1);
                while ((e = epoch_.load()) == seen) cv_.wait(lock);
                sleepers_.fetch_sub(1);
            }
        }
        seen = e;
        if (stop_.load()) return;
        int done = 0;
        for (int i; (i = next_index_.fetch_add(1, std::memory_order_acq_rel)) < n_threads_; ++done)
            (*job_)(i, n_threads_);
        if (done) pending_.fetch_sub(done, std::memory_order_acq_rel);
    }
}

}  // namespace flint
