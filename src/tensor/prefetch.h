// flint/tensor/prefetch.h — software prefetch of a weight stream, for the interleaved-layout group kernels.
//
// Each block of the stream is requested twice ahead of its use: kFarPrefetchBytes ahead into the outer
// caches (the T2 hint: an L2 miss queue entry, of which a core has many) and kPrefetchBytes ahead into L1
// (T0: an L1 miss buffer, of which a core has few). With only the near request, a kernel that spends time
// on each block (several tokens per pass) held too few misses in flight and streamed at 14 GB/s per core
// where the core can read 30-45; with both it keeps the stream in flight while it computes.
// Measured (flint_kernels_bench Cpu1TFew, one thread, Q8_0 40000x896, AVX-512, two alternating rounds):
// 2 tokens 1343 -> 834 us, 4 tokens 1299 -> 970, 8 tokens 2843 -> 1723, 17 tokens 4130 -> 3714. For one
// token it depends on the core: slower with either request on Zen 4 (AVX-512 kernels), faster on Zen 3
// (AVX2 kernels) and much faster on Intel Emerald Rapids (AVX-512 kernels, where it is chosen per vendor):
// each kernel file says which it does.
//
// prefetch_line / prefetch_lines: one request into L2 (the T1 hint) for a line or a range (the attention
// kernels' next span). Into L1 (T0), the next span's lines (16 KB for one f16 KV head of the 0.5B) arrived
// while the current span's 16 KB was still being read, in a 32 KB L1; into L2, a 7-query decode group over
// 16,000 cold positions took 20-35% less time (AVX-512; 0-20% AVX2; f16, Q8_0 and f32 caches, Zen 4:
// BENCHMARKS.md, Twenty-seventh session). An asm statement: GCC 12 dropped __builtin_prefetch /
// _mm_prefetch from the AVX-512 attention kernel's key loops (checked in the assembly) while keeping the
// value loops' ones.
#pragma once
#include <cstddef>

#include "tensor/kernels.h"

namespace flint::detail {

constexpr int kFarPrefetchBytes = 16384;

// Prefetch the block `bytes` long at p + the two distances (every 64-byte line of it).
inline void prefetch_stream(const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (size_t off = 0; off < bytes; off += 64) {
        __builtin_prefetch(c + kPrefetchBytes + off, 0, 3);
        __builtin_prefetch(c + kFarPrefetchBytes + off, 0, 1);
    }
}

inline void prefetch_line(const void* p) { asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p))); }
// Every 64-byte line of [p, p + bytes).
inline void prefetch_lines(const void* p, int bytes) {
    for (int o = 0; o < bytes; o += 64) prefetch_line(static_cast<const char*>(p) + o);
}

}  // namespace flint::detail
