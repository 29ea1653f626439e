// flint/tensor/dtype.h — weight/activation element types, numbered as in GGUF (ggml_type),
// so a tensor's type id in a file maps to a DType with no table in between.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace flint {

enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ4_NL = 20,  // 32-element blocks of 4-bit indices into a fixed non-linear table (quant.h kIq4nlValues)
    IQ4_XS = 23,  // IQ4_NL's indices in 256-element super-blocks, a 6-bit scale per 32 elements (BlockIQ4_XS)
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    BF16 = 30,
    // flint's own layouts, never read from or written to a file (ids above GGUF's range; the GGUF
    // reader and writer refuse them, see is_file_type). Made at load time by tensor/repack.h.
    Q8_0_R16 = 100,  // Q8_0 rows repacked sixteen at a time (BlockQ8_0R16); the first internal id
    Q4_0_R16 = 101,  // Q4_0 rows repacked sixteen at a time (BlockQ4_0R16)
    Q8_0_S = 102,   // activations for the _R16 kernels: Q8_0 with an f32 scale and -128 * the levels' sum
    Q5_0_R16 = 103,  // Q5_0 rows repacked sixteen at a time (BlockQ5_0R16)
    Q4_K_R16 = 104,  // Q4_K rows repacked sixteen at a time (BlockQ4_KR16)
    Q6_K_R16 = 105,  // Q6_K rows repacked sixteen at a time (BlockQ6_KR16)
    Q5_K_R16 = 106,  // Q5_K rows repacked sixteen at a time (BlockQ5_KR16)
    Q4_0_R8 = 107,   // Q4_0 rows repacked eight at a time for the AVX2 kernels (BlockQ4_0R8)
    Q5_0_R8 = 108,   // Q5_0 rows repacked eight at a time for the AVX2 kernels (BlockQ5_0R8)
    Q4_K_R8 = 109,   // Q4_K rows repacked eight at a time for the AVX2 kernels (BlockQ4_KR8)
    Q5_K_R8 = 110,   // Q5_K rows repacked eight at a time for the AVX2 kernels (BlockQ5_KR8)
    Q6_K_R8 = 111,   // Q6_K rows repacked eight at a time for the AVX2 kernels (BlockQ6_KR8)
    Q8_0_R8 = 112,   // Q8_0 rows repacked eight at a time for the AVX2 kernels (BlockQ8_0R8)
    IQ4_NL_R16 = 113,  // IQ4_NL rows repacked sixteen at a time (BlockIQ4_NLR16)
    Q4_1_R16 = 114,    // Q4_1 rows repacked sixteen at a time (BlockQ4_1R16)
    Q5_1_R16 = 115,    // Q5_1 rows repacked sixteen at a time (BlockQ5_1R16)
    IQ4_NL_R8 = 116,   // IQ4_NL rows repacked eight at a time for the AVX2 kernels (BlockIQ4_NLR8)
    Q4_1_R8 = 117,     // Q4_1 rows repacked eight at a time for the AVX2 kernels (BlockQ4_1R8)
    Q5_1_R8 = 118,     // Q5_1 rows repacked eight at a time for the AVX2 kernels (BlockQ5_1R8)
    Q3_K_R16 = 119,    // Q3_K rows repacked sixteen at a time (BlockQ3_KR16)
    Q2_K_R16 = 120,    // Q2_K rows repacked sixteen at a time (BlockQ2_KR16)
    Q3_K_R8 = 121,     // Q3_K rows repacked eight at a time for the AVX2 kernels (BlockQ3_KR8)
    Q2_K_R8 = 122,     // Q2_K rows repacked eight at a time for the AVX2 kernels (BlockQ2_KR8)
    IQ4_XS_R16 = 123,  // IQ4_XS rows repacked sixteen at a time (BlockIQ4_XSR16)
    IQ4_XS_R8 = 124,   // IQ4_XS rows repacked eight at a time for the AVX2 kernels (BlockIQ4_XSR8)
};
// Every id is below this (the kernel tables are indexed by id up to it).
constexpr uint32_t kMaxDTypeId = 128;
// A type GGUF files may contain (internal layouts are not).
inline bool is_file_type(DType t) { return static_cast<uint32_t>(t) < static_cast<uint32_t>(DType::Q8_0_R16); }

struct DTypeTraits {
    std::string_view name;   // "q8_0"
    uint32_t block_elems;    // elements per block (1 for plain types)
    uint32_t block_bytes;    // bytes per block
};

// Traits for a known type id, or nullopt for ids flint does not know (reported as "unknown tensor type").
std::optional<DTypeTraits> dtype_traits(uint32_t type_id);
DTypeTraits traits(DType t);  // for a DType value known to be valid
std::string_view dtype_name(DType t);
// Parses "q8_0", "Q8_0", "f16"...; nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes for a row of n elements (for the _R16 layouts: a sixteenth of sixteen rows' bytes); n must be a
// multiple of block_elems (checked by callers).
inline size_t row_bytes(DType t, size_t n) {
    DTypeTraits tr = traits(t);
    return n / tr.block_elems * tr.block_bytes;
}

}  // namespace flint
