// flint/model/config.h — the blueprint of a llama-family model, read from GGUF metadata.
// A plain struct: every forward-pass decision that depends on the architecture is a field here, so the
// forward pass never looks at architecture names.
#pragma once
#include <cstdint>
#include <string>

namespace flint {
namespace gguf { class File; }

enum class RopeStyle { Normal, NeoX };  // Normal: rotate adjacent pairs (llama); NeoX: rotate halves (qwen2)
enum class RopeScaling { None, Linear, Yarn };

struct RopeConfig {
    RopeStyle style = RopeStyle::Normal;
    int n_rot = 0;                // rotated dimensions per head (<= head_dim)
    float freq_base = 10000.0f;
    RopeScaling scaling = RopeScaling::None;
    float scale_factor = 1.0f;    // context extension factor (freq_scale = 1 / factor)
    int orig_ctx = 0;             // YaRN: training context before extension
    float ext_factor = 0.0f;      // YaRN: mix of extrapolation (1 for YaRN)
    float attn_factor = 1.0f;     // YaRN: magnitude scale
    float beta_fast = 32.0f;      // YaRN: ramp bounds, in rotations
    float beta_slow = 1.0f;
};

struct ModelConfig {
    std::string arch;        // "llama" | "qwen2"
    std::string name;        // general.name
    int n_vocab = 0;
    int dim = 0;             // embedding width
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;        // dim / n_heads
    int ffn_dim = 0;
    int ctx_train = 0;       // context length the model was trained with (after any RoPE scaling metadata)
    float rms_eps = 1e-5f;
    bool qkv_bias = false;   // qwen2
    bool tied_embeddings = false;  // output projection shares token_embd
    RopeConfig rope;

    int q_dim() const { return n_heads * head_dim; }
    int kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads the config of a supported architecture; throws flint::Error naming the file and key otherwise.
ModelConfig read_config(const gguf::File& f);
std::string describe(const ModelConfig& c);  // one line for logs

}  // namespace flint
