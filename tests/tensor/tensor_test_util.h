// Shared helpers for the tensor tests: deterministic random data and quantized matrices.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/matmul.h"
#include "tensor/quant.h"

namespace flint::test {

// Gaussian data with a few larger outliers, as real weights and activations have.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, scale);
    std::uniform_int_distribution<int> pick(0, 63);
    std::vector<float> v(n);
    for (float& f : v) f = nd(rng) * (pick(rng) == 0 ? 4.0f : 1.0f);
    return v;
}

// Rows x cols f32 data quantized row by row into `t`.
inline std::vector<uint8_t> quantize_matrix(DType t, const std::vector<float>& f, int64_t rows, int64_t cols) {
    const size_t rb = row_bytes(t, size_t(cols));
    std::vector<uint8_t> q(rb * size_t(rows));
    for (int64_t r = 0; r < rows; ++r) quantize_row_ref(t, f.data() + r * cols, q.data() + size_t(r) * rb, cols);
    return q;
}

// The instruction sets this CPU can run, scalar first.
inline std::vector<Isa> available_isas() {
    std::vector<Isa> v{Isa::Scalar};
    if (int(best_isa()) >= int(Isa::AVX2)) v.push_back(Isa::AVX2);
    if (int(best_isa()) >= int(Isa::AVX512)) v.push_back(Isa::AVX512);
    return v;
}

// Restores the best instruction set (and the default decode prefetch) when a test that forced one ends.
struct IsaGuard {
    ~IsaGuard() {
        set_isa(best_isa());
        set_decode_prefetch(DecodePrefetch::Auto);
    }
};

// Every kernel table this CPU can run: each instruction set, AVX-512 with and without the one-token
// weight prefetch (matmul.h DecodePrefetch), so both are tested whatever the vendor picks.
struct KernelPath {
    Isa isa;
    DecodePrefetch prefetch;
    void use() const {
        set_isa(isa);
        set_decode_prefetch(prefetch);
    }
    std::string name() const { return kernel_path_name(isa, prefetch == DecodePrefetch::On); }
};
inline std::vector<KernelPath> kernel_paths() {
    std::vector<KernelPath> v;
    for (Isa isa : available_isas()) v.push_back({isa, DecodePrefetch::Off});
    if (best_isa() == Isa::AVX512) v.push_back({Isa::AVX512, DecodePrefetch::On});
    return v;
}

inline const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                                     DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                                     DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

}  // namespace flint::test
