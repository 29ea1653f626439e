// flint/tensor/bandwidth.h — how fast this machine streams memory, the ceiling for decode speed.
#pragma once
#include <cstddef>

namespace flint {

class ThreadPool;

// Streams a `bytes` buffer (allocated and touched once here) with every thread of `pool` reading its
// own contiguous slice, `passes` times, and returns the best pass in GB/s (1e9 bytes/s).
// `pool` may be null (one thread). Compare matmul's achieved bytes/s against it.
double measure_read_bandwidth_gbs(ThreadPool* pool, size_t bytes = size_t(1) << 30, int passes = 5);

}  // namespace flint
