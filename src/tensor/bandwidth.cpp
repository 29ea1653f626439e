// flint/tensor/bandwidth.cpp — the memory read-bandwidth probe.
#include "tensor/bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tensor/shares.h"
#include "tensor/thread_pool.h"
#include "util/huge_pages.h"

namespace flint {
namespace {

// Eight independent accumulators so the sum is not one long dependency chain; the compiler
// vectorises this into full-width loads, and the result is used so the loads are not dropped.
// Cloned per instruction set (picked at load time): the probe must read as fast as the machine allows,
// so a kernel's fraction of it is not flattered by narrow SSE2 loads.
// Under ThreadSanitizer the clones are left out: GCC instruments the ifunc resolver, which the dynamic
// loader runs before the TSan runtime is up, and the process dies at startup.
#if defined(__SANITIZE_THREAD__)
#define FLINT_PROBE_CLONES
#else
#define FLINT_PROBE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
FLINT_PROBE_CLONES uint64_t sum_slice(const uint64_t* p, size_t n) {
    uint64_t s[8] = {};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) s[j] += p[i + j];
    for (; i < n; ++i) s[0] += p[i];
    uint64_t t = 0;
    for (uint64_t v : s) t += v;
    return t;
}

uint64_t g_sink;

}  // namespace

// Each thread starts on its own contiguous share and, when done, takes what is left of the others' in chunks
// of at most 1 MB (the matmuls balance their work the same way). With two fixed halves the pass waited for
// the slower vCPU: on the Zen 5 guest a balanced pass over 1 GiB read 3-17% faster than the halves in
// the same minutes (BENCHMARKS.md, Twenty-third session), and large Q8_0 matmuls "beat" the old probe.
double stream_read_seconds(ThreadPool* pool, const void* data, size_t bytes) {
    const auto* p = static_cast<const uint64_t*>(data);
    const size_t n = bytes / 8;
    const int nth = pool ? pool->size() : 1;
    constexpr size_t kMinChunk = size_t(16) << 10 >> 3, kMaxChunk = size_t(1) << 20 >> 3;  // in words
    const size_t chunk = std::clamp(n / (size_t(nth) * 32), kMinChunk, kMaxChunk);
    const size_t n_chunks = (n + chunk - 1) / chunk;
    std::vector<Share> shares(static_cast<size_t>(nth));
    split_shares(shares.data(), nth, int64_t(n_chunks));
    uint64_t sink[64] = {};
    const auto t0 = std::chrono::steady_clock::now();
    auto read = [&](int i, int) {
        uint64_t sum = 0;
        claim_shares(shares.data(), nth, i, [&](int64_t c) {
            sum += sum_slice(p + size_t(c) * chunk, std::min(chunk, n - size_t(c) * chunk));
        });
        sink[i % 64] += sum;
    };
    if (pool) pool->run(read);
    else read(0, 1);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (uint64_t v : sink) g_sink += v;
    return s;
}

ReadProbe::ReadProbe(size_t bytes) : buf_(std::max<size_t>(bytes / 8, 1024) * 8) {
    auto* p = reinterpret_cast<uint64_t*>(buf_.data());
    const size_t n = buf_.size() / 8;
    for (size_t i = 0; i < n; ++i) p[i] = i;  // touch every page so the probe measures DRAM, not faults
}

double ReadProbe::best_gbs(ThreadPool* pool, int passes) const {
    double best = 0;
    for (int p = 0; p < std::max(passes, 1); ++p)
        best = std::max(best, double(buf_.size()) / stream_read_seconds(pool, buf_.data(), buf_.size()) / 1e9);
    return best;
}

double measure_read_bandwidth_gbs(ThreadPool* pool, size_t bytes, int passes) {
    return ReadProbe(bytes).best_gbs(pool, passes);
}

size_t parse_cache_size(const char* text) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text, &end, 10);
    if (end == text) return 0;
    size_t unit = 1;
    if (*end == 'K') unit = size_t(1) << 10, ++end;
    else if (*end == 'M') unit = size_t(1) << 20, ++end;
    else if (*end == 'G') unit = size_t(1) << 30, ++end;
    while (*end == '\n' || *end == ' ') ++end;
    return *end == '\0' ? size_t(n) * unit : 0;
}

size_t last_level_cache_bytes() {
    int best_level = 0;
    size_t bytes = 0;
    for (int i = 0; i < 16; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        auto read = [&](const char* name) {
            char buf[64] = {};
            FILE* f = std::fopen((dir + name).c_str(), "r");
            if (!f) return std::string();
            const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
            std::fclose(f);
            return std::string(buf, n);
        };
        const std::string level = read("level");
        if (level.empty()) break;
        const int l = std::atoi(level.c_str());
        const size_t size = parse_cache_size(read("size").c_str());
        if (l > best_level && size > 0) best_level = l, bytes = size;
    }
    return bytes;
}

}  // namespace flint
