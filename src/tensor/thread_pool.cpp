// flint/tensor/thread_pool.cpp — persistent workers woken by an epoch counter.
//
// Protocol: run() publishes the job, sets pending_ = n - 1, then bumps epoch_. Share i (i >= 1) of an
// epoch is taken exactly once, by worker i or — when that worker has not got the CPU yet (more runnable
// threads than cores) — by the caller after its own share: whoever moves claimed_[i] up to the epoch
// with a compare-exchange runs it and decrements pending_. The caller returns when pending_ is 0, so a
// run cannot start before every share of the previous one is done, and a late worker's claim for an
// epoch that already ended fails. Workers spin on epoch_ for a while (a decode step issues matmuls every
// few µs, far below a futex wake-up), then sleep on cv_. A sleeper registers in sleepers_ under mu_ and
// re-checks epoch_ before waiting; run() bumps epoch_ before reading sleepers_ (both seq_cst), so either
// the worker sees the new epoch or run() sees the sleeper and notifies under mu_ — no lost wake-up.
// (An earlier version shared one claim counter across runs; a long runtime benchmark deadlocked in it
// with the caller waiting on a count no worker would decrement. Per-index claims keyed by the epoch
// make each share's owner unambiguous.)
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
// After this long spinning a worker yields its core between checks (someone else may be runnable). Not
// sooner: sched_yield costs 1.5 µs in the Zen 5 guest (PAUSE 22 ns), and a worker inside it when a region
// starts starts late — yielding every 256 spins, the caller's wait for the worker at a region's end was
// 16% of its kernel time in a 0.5B Q4_0 decode profile, 9% with this (BENCHMARKS.md, Twenty-first session).
constexpr auto kYieldAfter = std::chrono::microseconds(50);

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
    if (n_threads < 1) fail("thread pool needs at least one thread, got ", n_threads);
    claimed_ = std::make_unique<std::atomic<uint64_t>[]>(size_t(n_threads));
    for (int i = 0; i < n_threads; ++i) claimed_[i].store(0);
    threads_.reserve(size_t(n_threads - 1));
    for (int i = 1; i < n_threads; ++i) threads_.emplace_back([this, i] { worker(i); });
}

namespace {
// Takes share `slot` of epoch e unless someone already did: true for exactly one caller per epoch.
bool claim(std::atomic<uint64_t>& slot, uint64_t e) {
    uint64_t c = slot.load(std::memory_order_acquire);
    while (c < e)
        if (slot.compare_exchange_weak(c, e, std::memory_order_acq_rel)) return true;
    return false;
}
}  // namespace

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
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    const uint64_t e = epoch_.fetch_add(1) + 1;  // seq_cst: publishes job_ and pending_, ordered before the sleepers_ read
    if (sleepers_.load() > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        cv_.notify_all();
    }
    fn(0, n_threads_);
    for (int i = 1; i < n_threads_; ++i)  // shares whose worker has not started yet
        if (claim(claimed_[i], e)) {
            fn(i, n_threads_);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
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

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        // Spin on the epoch, then sleep.
        uint64_t e = epoch_.load(std::memory_order_acquire);
        if (e == seen) {
            const auto start = std::chrono::steady_clock::now();
            const auto deadline = start + kSpinTime, yield_after = start + kYieldAfter;
            int spins = 0;
            while ((e = epoch_.load(std::memory_order_acquire)) == seen) {
                FLINT_PAUSE();
                // Every so often: check the clock, and past kYieldAfter give the core away if someone
                // else is runnable.
                if (++spins % 256 == 0) {
                    const auto now = std::chrono::steady_clock::now();
                    if (now > deadline) break;
                    if (now > yield_after) std::this_thread::yield();
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
        // The share may have been taken by the caller already (then this epoch may even be over).
        if (claim(claimed_[index], e)) {
            (*job_)(index, n_threads_);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }
}

}  // namespace flint
