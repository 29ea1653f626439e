// flint/model/shapes.h — the shapes of real models, by name, for building random-weight GGUFs of the
// exact size of a real model (`flint mkmodel`): benchmarks measure the real memory traffic and the real
// tokenizer without shipping gigabytes of weights.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace flint {

struct ModelShape {
    std::string_view name;     // "qwen2.5-coder-0.5b"
    std::string_view arch;     // GGUF general.architecture: "qwen2" | "llama"
    uint32_t n_layers = 0;
    uint32_t n_embd = 0;       // hidden size
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t n_ff = 0;         // FFN intermediate size
    uint32_t n_vocab = 0;      // embedding rows (the tokenizer's tokens are padded up to this)
    uint32_t context = 0;      // training context length
    float rope_theta = 10000.0f;
    float rms_eps = 1e-6f;
    bool tied_embeddings = false;  // no output.weight: the output projection reuses token_embd
    bool qkv_bias = false;         // qwen2: attn_q/k/v carry a bias

    uint32_t head_dim() const { return n_embd / n_heads; }
    uint64_t n_params() const;     // weights and biases, the embedding counted once when tied
};

std::span<const ModelShape> model_shapes();
const ModelShape* find_model_shape(std::string_view name);  // nullptr when unknown
std::string model_shape_names();                            // "qwen2.5-coder-0.5b, …" for messages

}  // namespace flint
