// flint/tensor/shares.h — items [0, n) dealt out to a pool's threads as contiguous shares, with stealing.
//
// Each thread claims items from the front of its own share, so it streams its own stretch of memory; once
// that is empty it claims what is left of the others', so a thread that lost its core (the cores here are
// shared) does not stall the whole region. Each share's cursor is on a cache line of its own: one shared
// counter moved a line between the cores on every claim (1.4% of a decode step in the lock xadd, perf) and
// interleaved the threads' rows in memory. The matmuls (tensor/matmul.cpp) and the read probe
// (tensor/bandwidth.cpp) balance their work this way, so the probe is a ceiling the matmuls can be held to.
#pragma once
#include <atomic>
#include <cstdint>

namespace flint {

struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
};

// Share i of nth = [n * i / nth, n * (i + 1) / nth). Not concurrent with claims.
inline void split_shares(Share* shares, int nth, int64_t n) {
    for (int i = 0; i < nth; ++i) {
        shares[i].next.store(n * i / nth, std::memory_order_relaxed);
        shares[i].end = n * (i + 1) / nth;
    }
}

// Thread `self` (0 <= self < nth) calls f(item) for each item it claims, one at a time: its own share first,
// then the others' in turn, until none are left. Every item goes to exactly one thread.
template <typename F>
void claim_shares(Share* shares, int nth, int self, F&& f) {
    for (int k = 0; k < nth; ++k) {
        Share& s = shares[(self + k) % nth];
        for (int64_t c; (c = s.next.fetch_add(1, std::memory_order_relaxed)) < s.end;) f(c);
    }
}

}  // namespace flint
