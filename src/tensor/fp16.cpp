// flint/tensor/fp16.cpp — scalar IEEE half and bfloat16 conversions (the reference every SIMD row
// conversion is tested against). Bit manipulation rather than F16C so the scalar build runs anywhere.
#include <cstring>

#include "tensor/quant.h"

namespace flint {
namespace {

uint32_t bits_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
float float_of(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

}  // namespace

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    const uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13));  // inf / nan
    if (exp != 0) return float_of(sign | ((exp + 112) << 23) | (man << 13));
    if (man == 0) return float_of(sign);
    // Subnormal half: value = man * 2^-24, exact in f32.
    float v = float(man) * 0x1p-24f;
    return sign ? -v : v;
}

uint16_t fp32_to_fp16(float f) {
    const uint32_t u = bits_of(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));  // inf / nan
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds past 65504: overflow to inf
    if (abs < 0x38800000u) {
        // Result is subnormal (or zero): the value in units of 2^-24, rounded to nearest even.
        // Adding 0.5f shifts the mantissa so f32's own rounding does the work.
        float a = float_of(abs);
        uint32_t r = bits_of(a + 0.5f) - bits_of(0.5f);
        return uint16_t(sign | r);
    }
    // Normal: rebias exponent (127 -> 15) and round the 13 dropped bits to nearest even.
    uint32_t m = abs + ((uint32_t(15 - 127)) << 23);
    m += 0xfff + ((m >> 13) & 1);
    return uint16_t(sign | (m >> 13));
}

uint16_t fp32_to_bf16(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // keep nan a quiet nan
    u += 0x7fff + ((u >> 16) & 1);
    return uint16_t(u >> 16);
}

}  // namespace flint
