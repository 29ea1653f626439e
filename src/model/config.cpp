#include "model/config.h"

#include <sstream>

#include "gguf/gguf.h"
#include "util/error.h"

namespace flint {
namespace {

int require_int(const gguf::File& f, const std::string& key) {
    auto v = f.get_opt_u64(key);
    if (!v) fail(f.path(), ": missing required key '", key, "'");
    if (*v == 0 || *v > (1u << 30)) fail(f.path(), ": key '", key, "' = ", *v, " is out of range");
    return static_cast<int>(*v);
}

}  // namespace

ModelConfig read_config(const gguf::File& f) {
    ModelConfig c;
    c.arch = f.get_string("general.architecture");
    if (c.arch.empty()) fail(f.path(), ": missing general.architecture");
    if (c.arch != "llama" && c.arch != "qwen2")
        fail(f.path(), ": architecture '", c.arch, "' is not supported (flint runs llama and qwen2)");
    const std::string a = c.arch + ".";
    c.name = f.get_string("general.name", c.arch);
    c.dim = require_int(f, a + "embedding_length");
    c.n_layers = require_int(f, a + "block_count");
    c.n_heads = require_int(f, a + "attention.head_count");
    c.n_kv_heads = static_cast<int>(f.get_u64(a + "attention.head_count_kv", c.n_heads));
    c.ffn_dim = require_int(f, a + "feed_forward_length");
    c.ctx_train = static_cast<int>(f.get_u64(a + "context_length", 2048));
    c.rms_eps = static_cast<float>(f.get_f64(a + "attention.layer_norm_rms_epsilon", 1e-5));
    if (c.dim % c.n_heads != 0)
        fail(f.path(), ": embedding_length ", c.dim, " is not a multiple of head_count ", c.n_heads);
    if (c.n_kv_heads == 0 || c.n_heads % c.n_kv_heads != 0)
        fail(f.path(), ": head_count ", c.n_heads, " is not a multiple of head_count_kv ", c.n_kv_heads);
    c.head_dim = static_cast<int>(f.get_u64(a + "attention.key_length", c.dim / c.n_heads));
    if (c.head_dim % 2 != 0) fail(f.path(), ": head dimension ", c.head_dim, " is odd");

    auto tokens = f.find("tokenizer.ggml.tokens");
    c.n_vocab = static_cast<int>(f.get_u64(a + "vocab_size", tokens ? tokens->count : 0));
    if (const auto* emb = f.find_tensor("token_embd.weight")) c.n_vocab = static_cast<int>(emb->dim(1));
    if (c.n_vocab <= 0) fail(f.path(), ": cannot tell the vocabulary size (no token_embd.weight, no tokens)");

    c.qkv_bias = c.arch == "qwen2";
    c.tied_embeddings = f.find_tensor("output.weight") == nullptr;

    RopeConfig& r = c.rope;
    r.style = c.arch == "qwen2" ? RopeStyle::NeoX : RopeStyle::Normal;
    r.n_rot = static_cast<int>(f.get_u64(a + "rope.dimension_count", c.head_dim));
    if (r.n_rot > c.head_dim || r.n_rot % 2 != 0)
        fail(f.path(), ": rope.dimension_count ", r.n_rot, " (expected an even number <= head dim ", c.head_dim, ")");
    r.freq_base = static_cast<float>(f.get_f64(a + "rope.freq_base", 10000.0));
    std::string scaling = f.get_string(a + "rope.scaling.type", "none");
    double factor = f.get_f64(a + "rope.scaling.factor", 0.0);
    if (factor == 0.0 && f.has(a + "rope.scale_linear")) {  // older files
        factor = f.get_f64(a + "rope.scale_linear", 1.0);
        if (scaling == "none" && factor != 1.0) scaling = "linear";
    }
    if (scaling == "none") {
        r.scaling = RopeScaling::None;
    } else if (scaling == "linear") {
        r.scaling = RopeScaling::Linear;
        r.scale_factor = static_cast<float>(factor > 0 ? factor : 1.0);
    } else if (scaling == "yarn") {
        r.scaling = RopeScaling::Yarn;
        r.scale_factor = static_cast<float>(factor > 0 ? factor : 1.0);
        r.orig_ctx = static_cast<int>(f.get_u64(a + "rope.scaling.original_context_length", c.ctx_train));
        r.ext_factor = 1.0f;
        r.attn_factor = static_cast<float>(f.get_f64(a + "rope.scaling.attn_factor", 1.0));
        r.beta_fast = static_cast<float>(f.get_f64(a + "rope.scaling.yarn_beta_fast", 32.0));
        r.beta_slow = static_cast<float>(f.get_f64(a + "rope.scaling.yarn_beta_slow", 1.0));
    } else {
        fail(f.path(), ": rope.scaling.type '", scaling, "' is not supported (none, linear, yarn)");
    }
    return c;
}

std::string describe(const ModelConfig& c) {
    std::ostringstream os;
    os << c.arch << " '" << c.name << "': " << c.n_layers << " layers, dim " << c.dim << ", " << c.n_heads << " heads ("
       << c.n_kv_heads << " kv, head dim " << c.head_dim << "), ffn " << c.ffn_dim << ", vocab " << c.n_vocab
       << ", ctx " << c.ctx_train << (c.tied_embeddings ? ", tied embeddings" : "")
       << ", rope " << (c.rope.style == RopeStyle::NeoX ? "neox" : "normal") << " base " << c.rope.freq_base;
    if (c.rope.scaling == RopeScaling::Linear) os << " linear x" << c.rope.scale_factor;
    if (c.rope.scaling == RopeScaling::Yarn) os << " yarn x" << c.rope.scale_factor << " from " << c.rope.orig_ctx;
    return os.str();
}

}  // namespace flint
