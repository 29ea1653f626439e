#include "model/shapes.h"

#include <array>

namespace flint {
namespace {

// From each model's config.json (hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, intermediate_size, vocab_size, max_position_embeddings, rope_theta, rms_norm_eps,
// tie_word_embeddings; stories15m: llama2.c's TinyStories 15M, whose heads are 48 wide). `tiny` matches
// ../shared/models/tiny-qwen2-f32.gguf, for tests.
constexpr std::array kShapes = {
    ModelShape{.name = "tiny", .arch = "qwen2", .n_layers = 2, .n_embd = 64, .n_heads = 4, .n_kv_heads = 2,
               .n_ff = 128, .n_vocab = 151936, .context = 4096, .rope_theta = 1e6f, .rms_eps = 1e-6f,
               .tied_embeddings = true, .qkv_bias = true},
    ModelShape{.name = "qwen2.5-coder-0.5b", .arch = "qwen2", .n_layers = 24, .n_embd = 896, .n_heads = 14,
               .n_kv_heads = 2, .n_ff = 4864, .n_vocab = 151936, .context = 32768, .rope_theta = 1e6f,
               .rms_eps = 1e-6f, .tied_embeddings = true, .qkv_bias = true},
    ModelShape{.name = "qwen2.5-coder-1.5b", .arch = "qwen2", .n_layers = 28, .n_embd = 1536, .n_heads = 12,
               .n_kv_heads = 2, .n_ff = 8960, .n_vocab = 151936, .context = 32768, .rope_theta = 1e6f,
               .rms_eps = 1e-6f, .tied_embeddings = true, .qkv_bias = true},
    ModelShape{.name = "qwen2.5-coder-3b", .arch = "qwen2", .n_layers = 36, .n_embd = 2048, .n_heads = 16,
               .n_kv_heads = 2, .n_ff = 11008, .n_vocab = 151936, .context = 32768, .rope_theta = 1e6f,
               .rms_eps = 1e-6f, .tied_embeddings = true, .qkv_bias = true},
    ModelShape{.name = "qwen2.5-coder-7b", .arch = "qwen2", .n_layers = 28, .n_embd = 3584, .n_heads = 28,
               .n_kv_heads = 4, .n_ff = 18944, .n_vocab = 152064, .context = 32768, .rope_theta = 1e6f,
               .rms_eps = 1e-6f, .tied_embeddings = false, .qkv_bias = true},
    ModelShape{.name = "stories15m", .arch = "llama", .n_layers = 6, .n_embd = 288, .n_heads = 6,
               .n_kv_heads = 6, .n_ff = 768, .n_vocab = 32000, .context = 256, .rope_theta = 10000.0f,
               .rms_eps = 1e-5f, .tied_embeddings = true, .qkv_bias = false},
    ModelShape{.name = "smollm-135m", .arch = "llama", .n_layers = 30, .n_embd = 576, .n_heads = 9,
               .n_kv_heads = 3, .n_ff = 1536, .n_vocab = 49152, .context = 2048, .rope_theta = 10000.0f,
               .rms_eps = 1e-5f, .tied_embeddings = true, .qkv_bias = false},
    ModelShape{.name = "smollm-360m", .arch = "llama", .n_layers = 32, .n_embd = 960, .n_heads = 15,
               .n_kv_heads = 5, .n_ff = 2560, .n_vocab = 49152, .context = 2048, .rope_theta = 10000.0f,
               .rms_eps = 1e-5f, .tied_embeddings = true, .qkv_bias = false},
};

}  // namespace

uint64_t ModelShape::n_params() const {
    const uint64_t e = n_embd, kv = uint64_t(n_kv_heads) * head_dim();
    uint64_t layer = e                          // attn_norm
                     + e * e + 2 * e * kv + e * e  // q, k, v, output
                     + e                        // ffn_norm
                     + 3 * e * n_ff;            // gate, up, down
    if (qkv_bias) layer += e + 2 * kv;
    return uint64_t(n_vocab) * e * (tied_embeddings ? 1 : 2) + n_layers * layer + e;
}

std::span<const ModelShape> model_shapes() { return kShapes; }

const ModelShape* find_model_shape(std::string_view name) {
    for (const ModelShape& s : kShapes)
        if (s.name == name) return &s;
    return nullptr;
}

std::string model_shape_names() {
    std::string s;
    for (const ModelShape& m : kShapes) s += (s.empty() ? "" : ", ") + std::string(m.name);
    return s;
}

}  // namespace flint
