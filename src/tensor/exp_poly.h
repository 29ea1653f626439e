// flint/tensor/exp_poly.h — the constants of the vector exp used by the SIMD silu_mul kernels.
//
// exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 in [-ln2/2, ln2/2]; ln 2 is split in a
// high part exact in a float and a low correction so r loses nothing; e^r is the degree-6 minimax
// polynomial of the Cephes library's expf (about 1 ulp on that interval). Inputs are clamped to where
// 2^n stays a normal float.
#pragma once

namespace flint::detail::exp_poly {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kMin = -87.3f;  // 2^n >= 2^-126
constexpr float kMax = 88.3f;   // 2^n <= 2^127
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

}  // namespace flint::detail::exp_poly
