#include "tensor/dtype.h"

#include <array>
#include <cctype>
#include <string>

#include "util/error.h"

namespace flint {
namespace {

struct Entry {
    DType type;
    DTypeTraits tr;
};

constexpr std::array kTypes = {
    Entry{DType::F32, {"f32", 1, 4}},        Entry{DType::F16, {"f16", 1, 2}},
    Entry{DType::Q4_0, {"q4_0", 32, 18}},    Entry{DType::Q4_1, {"q4_1", 32, 20}},
    Entry{DType::Q5_0, {"q5_0", 32, 22}},    Entry{DType::Q5_1, {"q5_1", 32, 24}},
    Entry{DType::Q8_0, {"q8_0", 32, 34}},    Entry{DType::Q8_1, {"q8_1", 32, 36}},
    Entry{DType::Q2_K, {"q2_k", 256, 84}},   Entry{DType::Q3_K, {"q3_k", 256, 110}},
    Entry{DType::Q4_K, {"q4_k", 256, 144}},  Entry{DType::Q5_K, {"q5_k", 256, 176}},
    Entry{DType::Q6_K, {"q6_k", 256, 210}},  Entry{DType::Q8_K, {"q8_k", 256, 292}},
    Entry{DType::IQ4_NL, {"iq4_nl", 32, 18}}, Entry{DType::IQ4_XS, {"iq4_xs", 256, 136}},
    Entry{DType::I8, {"i8", 1, 1}},          Entry{DType::I16, {"i16", 1, 2}},
    Entry{DType::I32, {"i32", 1, 4}},        Entry{DType::I64, {"i64", 1, 8}},
    Entry{DType::F64, {"f64", 1, 8}},        Entry{DType::BF16, {"bf16", 1, 2}},
    Entry{DType::Q8_0_R16, {"q8_0_r16", 32, 34}}, Entry{DType::Q4_0_R16, {"q4_0_r16", 32, 18}},
    Entry{DType::Q5_0_R16, {"q5_0_r16", 32, 22}}, Entry{DType::Q4_K_R16, {"q4_k_r16", 256, 144}},
    Entry{DType::Q6_K_R16, {"q6_k_r16", 256, 210}}, Entry{DType::Q5_K_R16, {"q5_k_r16", 256, 176}},
    Entry{DType::Q4_0_R8, {"q4_0_r8", 32, 18}}, Entry{DType::Q5_0_R8, {"q5_0_r8", 32, 22}},
    Entry{DType::Q4_K_R8, {"q4_k_r8", 256, 144}}, Entry{DType::Q5_K_R8, {"q5_k_r8", 256, 176}},
    Entry{DType::Q6_K_R8, {"q6_k_r8", 256, 210}}, Entry{DType::Q8_0_R8, {"q8_0_r8", 32, 34}},
    Entry{DType::IQ4_NL_R16, {"iq4_nl_r16", 32, 18}}, Entry{DType::Q4_1_R16, {"q4_1_r16", 32, 20}},
    Entry{DType::Q5_1_R16, {"q5_1_r16", 32, 24}}, Entry{DType::IQ4_NL_R8, {"iq4_nl_r8", 32, 18}},
    Entry{DType::Q4_1_R8, {"q4_1_r8", 32, 20}}, Entry{DType::Q5_1_R8, {"q5_1_r8", 32, 24}},
    Entry{DType::Q3_K_R16, {"q3_k_r16", 256, 110}}, Entry{DType::Q2_K_R16, {"q2_k_r16", 256, 84}},
    Entry{DType::Q3_K_R8, {"q3_k_r8", 256, 110}}, Entry{DType::Q2_K_R8, {"q2_k_r8", 256, 84}},
    Entry{DType::IQ4_XS_R16, {"iq4_xs_r16", 256, 136}}, Entry{DType::IQ4_XS_R8, {"iq4_xs_r8", 256, 136}},
    Entry{DType::Q8_0_S, {"q8_0_s", 32, 40}},
};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t type_id) {
    for (const Entry& e : kTypes)
        if (static_cast<uint32_t>(e.type) == type_id) return e.tr;
    return std::nullopt;
}

DTypeTraits traits(DType t) {
    auto tr = dtype_traits(static_cast<uint32_t>(t));
    if (!tr) fail("unknown tensor type id ", static_cast<uint32_t>(t));
    return *tr;
}

std::string_view dtype_name(DType t) { return traits(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const Entry& e : kTypes)
        if (e.tr.name == lower) return e.type;
    return std::nullopt;
}

}  // namespace flint
