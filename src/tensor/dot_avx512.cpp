// flint/tensor/dot_avx512.cpp — AVX-512 (VNNI) matmul tiles (placeholder: inherits AVX2).
#include <immintrin.h>

#include "tensor/kernels.h"

namespace flint::detail {

void fill_avx512(KernelSet&) {}

}  // namespace flint::detail
