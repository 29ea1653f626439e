// Corrupt or mismatched weights give clear errors naming the tensor and what was expected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "model_test_util.h"
#include "tensor/quant.h"
#include "test_paths.h"
#include "util/error.h"

using namespace flint;

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replaces the first occurrence of `from` with `to` (same length) in the header region of the file bytes.
void patch(std::vector<uint8_t>& bytes, const std::string& from, const std::string& to) {
    ASSERT_EQ(from.size(), to.size());
    auto it = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
    ASSERT_NE(it, bytes.end()) << from;
    std::copy(to.begin(), to.end(), it);
}

std::string load_error(const std::vector<uint8_t>& bytes) {
    try {
        Model::from_file(gguf::File::parse(bytes.data(), bytes.size(), "patched.gguf"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(WeightErrors, MissingTensorIsNamed) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto bytes = read_all(test::shared_path("models/stories260K.gguf"));
    patch(bytes, "blk.3.ffn_up.weight", "blk.3.ffn_XX.weight");
    std::string e = load_error(bytes);
    EXPECT_NE(e.find("missing tensor blk.3.ffn_up.weight"), std::string::npos) << e;
}

TEST(WeightErrors, WrongShapeReportsExpectedAndFound) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto bytes = read_all(test::shared_path("models/stories260K.gguf"));
    // Swap the names of attn_q (64x64) and attn_k (64x32) in layer 2: both shapes now mismatch.
    patch(bytes, "blk.2.attn_q.weight", "blk.2.attn_T.weight");
    patch(bytes, "blk.2.attn_k.weight", "blk.2.attn_q.weight");
    patch(bytes, "blk.2.attn_T.weight", "blk.2.attn_k.weight");
    std::string e = load_error(bytes);
    EXPECT_NE(e.find("blk.2.attn_q.weight: expected shape [64, 64] got [64, 32]"), std::string::npos) << e;
}

TEST(WeightErrors, UnsupportedArchitecture) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto bytes = read_all(test::shared_path("models/stories260K.gguf"));
    patch(bytes, "llama.block_count", "llamX.block_count");
    std::string e = load_error(bytes);
    EXPECT_NE(e.find("missing required key 'llama.block_count'"), std::string::npos) << e;
}

namespace {

// The bytes of stories260K with one metadata key replaced, written through the writer.
std::vector<uint8_t> stories_with(const std::string& key, gguf::MetaValue v) {
    auto f = gguf::File::open(test::shared_path("models/stories260K.gguf"), Residency::Map);
    gguf::Writer w;
    w.copy_metadata(*f);
    w.set(key, std::move(v));
    for (const auto& t : f->tensors()) w.add_tensor_view(t.name, t.type, t.dims, t.data, t.n_bytes);
    return w.write_buffer();
}

// That file loaded: the error, or "" when it loads.
std::string load_error_with(const std::string& key, gguf::MetaValue v) { return load_error(stories_with(key, std::move(v))); }

}  // namespace

// Config numbers outside what a model can have are refused by name before any size is computed from them:
// a 2^31 head width once overflowed the kv width (found by fuzz/model_fuzz.cpp under UBSan).
TEST(WeightErrors, ConfigNumbersOutOfRangeAreRefusedByName) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    using gguf::MetaValue;
    const struct {
        std::string key;
        MetaValue value;
        std::string error;
    } cases[] = {
        {"llama.attention.key_length", MetaValue::u32(2130706176), "key 'llama.attention.key_length' = 2130706176 is out of range"},
        {"llama.attention.head_count_kv", MetaValue::u32(0), "key 'llama.attention.head_count_kv' = 0 is out of range (1..8)"},
        {"llama.attention.head_count_kv", MetaValue::u32(16), "key 'llama.attention.head_count_kv' = 16 is out of range (1..8)"},
        {"llama.context_length", MetaValue::u64(uint64_t(1) << 31), "key 'llama.context_length' = 2147483648 is out of range"},
        {"llama.embedding_length", MetaValue::u64(uint64_t(1) << 40), "key 'llama.embedding_length' = 1099511627776 is out of range"},
        {"llama.rope.dimension_count", MetaValue::i32(0), "key 'llama.rope.dimension_count' = 0 is out of range (2..8)"},
        {"llama.rope.dimension_count", MetaValue::u32(7), "rope.dimension_count 7 (expected an even number <= head dim 8)"},
        {"llama.rope.freq_base", MetaValue::f32(std::nanf("")), "key 'llama.rope.freq_base' = nan (expected a positive finite number)"},
        {"llama.attention.layer_norm_rms_epsilon", MetaValue::f32(-1e-5f), "(expected a positive finite number)"},
        {"llama.rope.scaling.factor", MetaValue::f32(INFINITY), "key 'llama.rope.scaling.factor' = inf (expected a finite number)"},
    };
    for (const auto& c : cases) {
        const std::string e = load_error_with(c.key, c.value);
        EXPECT_NE(e.find(c.error), std::string::npos) << c.key << ": " << e;
    }
    EXPECT_EQ(load_error_with("llama.attention.head_count_kv", MetaValue::u32(4)), "") << "its own value loads";
}

// general.alignment may be any power of two: with 1, tensors start at odd addresses, and the matrices are
// copied to aligned memory at load (vectors already were). The logits are those of the aligned file.
// Found by fuzz/model_fuzz.cpp (UBSan: a Q4_0 block's scale read through a misaligned pointer).
TEST(WeightErrors, TensorsAtOddOffsetsLoadAndGiveTheSameLogits) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::vector<uint8_t> bytes = stories_with("general.alignment", gguf::MetaValue::u32(1));
    auto odd = gguf::File::parse(bytes.data(), bytes.size(), "odd.gguf");
    bool any_odd = false;
    for (const auto& t : odd->tensors()) any_odd |= reinterpret_cast<uintptr_t>(t.data) % 4 != 0;
    ASSERT_TRUE(any_odd) << "the test needs tensors at unaligned addresses";
    test::Runner a(Model::from_file(odd), 8), b(Model::load(test::shared_path("models/stories260K.gguf"), Residency::Map), 8);
    const std::vector<int32_t> prompt = {1, 400, 25, 90};
    EXPECT_EQ(a.run(prompt, 0, Logits::All), b.run(prompt, 0, Logits::All));
}

// A matrix in a GGUF type flint has no kernel for (Q8_1 is an activation format; the IQ2/IQ3 families and
// IQ4_XS are not read) is refused at load, naming the tensor and the type; every type flint does multiply
// loads in the same place.
TEST(WeightErrors, AMatrixTypeWithoutAKernelIsRefusedByName) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto f = gguf::File::open(test::shared_path("models/stories260K.gguf"), Residency::Map);
    auto retyped = [&](DType type) {
        gguf::Writer w;
        w.copy_metadata(*f);
        for (const auto& t : f->tensors()) {
            if (t.name != "blk.1.attn_output.weight") {
                w.add_tensor_view(t.name, t.type, t.dims, t.data, t.n_bytes);
                continue;
            }
            std::vector<float> x(t.n_bytes / 4);
            std::memcpy(x.data(), t.data, t.n_bytes);
            std::vector<uint8_t> q(gguf::Writer::tensor_bytes(t.name, type, t.dims));
            if (can_quantize(type)) quantize_row_ref(type, x.data(), q.data(), int64_t(x.size()));
            w.add_tensor(t.name, type, t.dims, std::move(q));
        }
        return w.write_buffer();
    };
    ASSERT_EQ(f->find_tensor("blk.1.attn_output.weight")->type, DType::F32);
    const std::string e = load_error(retyped(DType::Q8_1));
    EXPECT_NE(e.find("blk.1.attn_output.weight"), std::string::npos) << e;
    EXPECT_NE(e.find("type q8_1 is not supported for matrices"), std::string::npos) << e;
    for (DType ok : {DType::Q4_1, DType::Q5_1, DType::IQ4_NL}) EXPECT_EQ("", load_error(retyped(ok))) << dtype_name(ok);
}
