// flint/tensor/vec.cpp — scalar references for the small vector kernels, and the public entry points
// that call through the active kernel table.
#include "tensor/vec.h"

#include <cmath>

#include "tensor/kernels.h"

namespace flint {
namespace detail {

float dot_f32_scalar(const float* a, const float* b, int64_t n) {
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

float dot_f16_f32_scalar(const uint16_t* a, const float* b, int64_t n) {
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += fp16_to_fp32(a[i]) * b[i];
    return sum;
}

void axpy_f32_scalar(float a, const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void axpy_f16_scalar(float a, const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

void fp32_to_fp16_row_scalar(const float* x, uint16_t* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void fp16_to_fp32_row_scalar(const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void silu_mul_scalar(float* g, const float* u, int64_t n) {
    for (int64_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

int64_t argmax_f32_scalar(const float* x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

double exp_sum_scalar(const float* x, float* y, int64_t n, float scale, float shift) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
        y[i] = std::exp(x[i] * scale - shift);
        sum += y[i];
    }
    return sum;
}

}  // namespace detail

float dot_f32(const float* a, const float* b, int64_t n) { return detail::active_kernels().dot_f32(a, b, n); }
float dot_f16_f32(const uint16_t* a_f16, const float* b, int64_t n) {
    return detail::active_kernels().dot_f16_f32(a_f16, b, n);
}
void axpy_f32(float a, const float* x, float* y, int64_t n) { detail::active_kernels().axpy_f32(a, x, y, n); }
void axpy_f16(float a, const uint16_t* x_f16, float* y, int64_t n) {
    detail::active_kernels().axpy_f16(a, x_f16, y, n);
}
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) { detail::active_kernels().fp32_to_fp16_row(x, y, n); }
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n) { detail::active_kernels().fp16_to_fp32_row(x, y, n); }
void silu_mul(float* g, const float* u, int64_t n) { detail::active_kernels().silu_mul(g, u, n); }
int64_t argmax_f32(const float* x, int64_t n) { return detail::active_kernels().argmax_f32(x, n); }
double exp_sum(const float* x, float* y, int64_t n, float scale, float shift) {
    return detail::active_kernels().exp_sum(x, y, n, scale, shift);
}

}  // namespace flint
