// Writes a seed corpus for gguf_fuzz: small valid GGUF files covering every value type, nested arrays,
// tensor types with and without blocks, custom alignment, and a tokenizer-like key set.
// Usage: gguf_fuzz_seeds DIR
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"

using flint::DType;
using flint::gguf::MetaValue;
using flint::gguf::ValueType;
using flint::gguf::Writer;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    std::vector<std::pair<std::string, Writer>> seeds;

    seeds.emplace_back("empty", Writer{});

    Writer values;
    values.set("u8", MetaValue::u8(1));
    values.set("i8", MetaValue::i8(-1));
    values.set("u16", MetaValue::u16(2));
    values.set("i16", MetaValue::i16(-2));
    values.set("u32", MetaValue::u32(3));
    values.set("i32", MetaValue::i32(-3));
    values.set("u64", MetaValue::u64(4));
    values.set("i64", MetaValue::i64(-4));
    values.set("f32", MetaValue::f32(0.5f));
    values.set("f64", MetaValue::f64(0.25));
    values.set("bool", MetaValue::boolean(true));
    values.set("str", MetaValue::string("text"));
    std::vector<float> fs = {1, 2};
    values.set("arr.f32", MetaValue::f32_array(fs));
    values.set("arr.str", MetaValue::string_array({"a", "bc"}));
    values.set("arr.nested", MetaValue::array_array({MetaValue::f32_array(fs), MetaValue::string_array({"x"})}));
    seeds.emplace_back("values", std::move(values));

    Writer tensors;
    tensors.set("general.alignment", MetaValue::u32(64));
    tensors.set_string("general.architecture", "llama");
    tensors.add_tensor("a.f32", DType::F32, {4, 2}, std::vector<uint8_t>(32, 1));
    tensors.add_tensor("b.q8_0", DType::Q8_0, {32}, std::vector<uint8_t>(34, 2));
    tensors.add_tensor("c.q4_k", DType::Q4_K, {256}, std::vector<uint8_t>(144, 3));
    tensors.add_tensor("d.f16", DType::F16, {2, 1, 1, 2}, std::vector<uint8_t>(8, 4));
    seeds.emplace_back("tensors", std::move(tensors));

    Writer tok;
    tok.set_string("tokenizer.ggml.model", "gpt2");
    tok.set("tokenizer.ggml.tokens", MetaValue::string_array({"<s>", "</s>", "a", "b", "ab"}));
    std::vector<int32_t> types = {3, 3, 1, 1, 1};
    tok.set("tokenizer.ggml.token_type", MetaValue::i32_array(types));
    tok.set("tokenizer.ggml.merges", MetaValue::string_array({"a b"}));
    tok.set_u32("tokenizer.ggml.eos_token_id", 1);
    tok.add_tensor("token_embd.weight", DType::F32, {2, 5}, std::vector<uint8_t>(40, 0));
    seeds.emplace_back("tokenizer", std::move(tok));

    for (auto& [name, w] : seeds) {
        std::string path = std::string(argv[1]) + "/" + name + ".gguf";
        w.write_file(path);
    }
    return 0;
}
