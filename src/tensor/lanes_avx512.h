// flint/tensor/lanes_avx512.h — the mask of a 16-lane register's first lanes, for the AVX-512 files' partial
// loads and stores (include only from *_avx512.cpp files, which are compiled with the instruction set enabled).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace flint::detail {
// Internal linkage on purpose: each includer gets its own copy compiled with its own ISA flags.
namespace {

// The first min(max(n, 0), 16) lanes.
inline __mmask16 first_lanes(int64_t n) {
    return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << unsigned(n > 0 ? n : 0)) - 1);
}

}  // namespace
}  // namespace flint::detail
