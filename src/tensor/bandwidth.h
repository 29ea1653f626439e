// flint/tensor/bandwidth.h — how fast this machine streams memory, the ceiling for decode speed.
#pragma once
#include <cstddef>

#include "util/huge_pages.h"

namespace flint {

class ThreadPool;

// Streams a `bytes` buffer (allocated and touched once here, on huge pages like the weights: see
// util/huge_pages.h) with every thread of `pool` reading, `passes` times, and returns the best pass in GB/s
// (1e9 bytes/s). Balanced: a thread that finishes its share reads what is left of the others'.
// `pool` may be null (one thread). Compare matmul's achieved bytes/s against it.
double measure_read_bandwidth_gbs(ThreadPool* pool, size_t bytes = size_t(1) << 30, int passes = 5);

// The same probe with its buffer kept, for measuring again and again (flint bench probes after every
// repetition, so each decode figure has a bandwidth figure from the same minutes of a shared machine).
class ReadProbe {
public:
    explicit ReadProbe(size_t bytes = size_t(1) << 30);  // allocates and touches the buffer
    double best_gbs(ThreadPool* pool, int passes) const;

private:
    HugeBuffer buf_;
};

// One multi-threaded streaming pass over `data` (each thread starts on its own contiguous slice, then helps
// the others in chunks of up to 1 MB); returns the seconds it took. For comparing a kernel against a plain
// read of the very same bytes, interleaved, so both see the same machine state (other load, caches).
double stream_read_seconds(ThreadPool* pool, const void* data, size_t bytes);

// The largest CPU cache level's size in bytes, as Linux reports it for CPU 0 (/sys/devices/system/cpu/cpu0/
// cache/index*/size), or 0 when it cannot be read. A read over fewer bytes than this is partly a cache read.
size_t last_level_cache_bytes();
// A sysfs cache size ("32768K", "1M", "512") in bytes; 0 when it is not one.
size_t parse_cache_size(const char* text);

}  // namespace flint
