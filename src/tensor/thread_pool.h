// flint/tensor/thread_pool.h — a persistent pool of worker threads for the kernels.
// Threads are created once; each parallel region wakes them, they spin briefly on an atomic epoch
// (a decode step is ~100 µs on small models, far shorter than a futex round trip), then sleep on a
// condition variable when idle. The calling thread takes part as worker 0.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace flint {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);  // n_threads >= 1, including the caller
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    // Runs fn(index, n_threads) once for every index in [0, n_threads) and waits for all: a full
    // barrier. The caller runs index 0; the others go to whichever thread claims them first (the
    // caller too, once done with its own, if a worker has not started yet — so a descheduled worker
    // never stalls the call). Indices never run concurrently with themselves.
    // Not re-entrant: fn must not call run() on the same pool.
    void run(const std::function<void(int, int)>& fn);
    // Splits [0, n) into contiguous ranges, one per thread: fn(begin, end).
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

private:
    void worker(int index);

    int n_threads_;
    std::vector<std::thread> threads_;
    const std::function<void(int, int)>* job_ = nullptr;
    std::atomic<uint64_t> epoch_{0};
    std::atomic<int> pending_{0};     // shares (indices 1..n-1) of the current run not yet finished
    std::unique_ptr<std::atomic<uint64_t>[]> claimed_;  // per index: the last epoch whose share was taken
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<int> sleepers_{0};
};

}  // namespace flint
