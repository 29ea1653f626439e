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
// g[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u: the SwiGLU gate. SIMD versions use a polynomial exp
// (within a few ulp of the scalar reference's std::exp).
void silu_mul(float* g, const float* u, int64_t n);
// y[i] = exp(x[i] * scale - shift) for arguments <= 0 (a softmax numerator: shift >= max(x) * scale);
// returns the sum of the y[i], accumulated in double. SIMD versions use a polynomial exp (a few ulp from
// the scalar reference) and give 0 below exp's float range (< -87.3), as the reference nearly does.
double exp_sum(const float* x, float* y, int64_t n, float scale, float shift);
// The index of the largest x[i], the first one on ties; NaNs are skipped (x[0] NaN: 0). n >= 1.
int64_t argmax_f32(const float* x, int64_t n);

}  // namespace flint
