// flint/tensor/dot_avx2.cpp — AVX2 + FMA matmul tiles (placeholder: vector kernels only so far).
#include <immintrin.h>

#include "tensor/kernels.h"

namespace flint::detail {

void fill_avx2(KernelSet& k) { fill_vec_avx2(k); }

}  // namespace flint::detail
