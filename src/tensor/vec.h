// flint/tensor/vec.h — small vector kernels for attention and the elementwise parts of the forward pass.
// Each dispatches once (see matmul.h set_isa) between a scalar reference and a SIMD version.
#pragma once
#include <cstdint>

namespace flint {

float dot_f32(const float* a, const float* b, int64_t n);             // sum a[i]*b[i]
float dot_f16_f32(const uint16_t* a_f16, const float* b, int64_t n);  // a in IEEE half
void axpy_f32(float a, const float* x, float* y, int64_t n);          // y += a*x
void axpy_f16(float a, const uint16_t* x_f16, float* y, int64_t n);   // y += a*x, x in IEEE half
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n);

}  // namespace flint
