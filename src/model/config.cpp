#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "gguf/gguf.h"
#include "util/error.h"

namespace flint {
namespace {

// An integer key within [lo, hi]; `def` when absent (nullopt: the key is required).
int read_int(const gguf::File& f, const std::string& key, std::optional<int64_t> def, int64_t lo, int64_t hi) {
    const std::optional<uint64_t> v = f.get_opt_u64(key);
    if (!v && !def) fail(f.path(), ": missing required key '", key, "'");
    if (!v) return static_cast<int>(*def);
    if (*v < static_cast<uint64_t>(lo) || *v > static_cast<uint64_t>(hi))
        fail(f.path(), ": key '", key, "' = ", *v, " is out of range (", lo, "..", hi, ")");
    return static_cast<int>(*v);
}

// A float key that must be finite (and positive, where `positive`); `def` when absent.
float read_float(const gguf::File& f, const std::string& key, double def, bool positive) {
    const double v = f.get_f64(key, def);
    if (!std::isfinite(v) || (positive && !(v > 0)))
        fail(f.path(), ": key '", key, "' = ", v, " (expected a ", positive ? "positive " : "", "finite number)");
    return static_cast<float>(v);
}

// Bounds that keep every product of them (q/kv widths, KV rows, scratch sizes) well inside an int.
constexpr int64_t kMaxWidth = int64_t(1) << 20, kMaxCount = int64_t(1) << 14, kMaxTokens = int64_t(1) << 30;

}  // namespace

ModelConfig read_config(const gguf::File& f) {
    ModelConfig c;
    c.arch = f.get_string("general.architecture");
    if (c.arch.empty()) fail(f.path(), ": missing general.architecture");
    if (c.arch != "llama" && c.arch != "qwen2")
        fail(f.path(), ": architecture '", c.arch, "' is not supported (flint runs llama and qwen2)");
    const std::string a = c.arch + ".";
    c.name = f.get_string("general.name", c.arch);
    c.dim = read_int(f, a + "embedding_length", std::nullopt, 1, kMaxWidth);
    c.n_layers = read_int(f, a + "block_count", std::nullopt, 1, kMaxCount);
    c.n_heads = read_int(f, a + "attention.head_count", std::nullopt, 1, kMaxCount);
    c.n_kv_heads = read_int(f, a + "attention.head_count_kv", c.n_heads, 1, c.n_heads);
    c.ffn_dim = read_int(f, a + "feed_forward_length", std::nullopt, 1, kMaxWidth);
    c.ctx_train = read_int(f, a + "context_length", 2048, 1, kMaxTokens);
    c.rms_eps = read_float(f, a + "attention.layer_norm_rms_epsilon", 1e-5, true);
    if (c.dim % c.n_heads != 0)
        fail(f.path(), ": embedding_length ", c.dim, " is not a multiple of head_count ", c.n_heads);
    if (c.n_heads % c.n_kv_heads != 0)
        fail(f.path(), ": head_count ", c.n_heads, " is not a multiple of head_count_kv ", c.n_kv_heads);
    // The q and kv widths stay under kMaxWidth, as the embedding does.
    c.head_dim = read_int(f, a + "attention.key_length", c.dim / c.n_heads, 2, kMaxWidth / c.n_heads);
    if (c.head_dim % 2 != 0) fail(f.path(), ": head dimension ", c.head_dim, " is odd");

    auto tokens = f.find("tokenizer.ggml.tokens");
    c.n_vocab = read_int(f, a + "vocab_size", tokens ? std::min<uint64_t>(tokens->count, kMaxTokens) : 0, 1, kMaxTokens);
    if (const auto* emb = f.find_tensor("token_embd.weight")) {
        if (emb->dim(1) > uint64_t(kMaxTokens)) fail(f.path(), ": token_embd.weight has ", emb->dim(1), " rows (at most ", kMaxTokens, ")");
        c.n_vocab = static_cast<int>(emb->dim(1));
    }
    if (c.n_vocab <= 0) fail(f.path(), ": cannot tell the vocabulary size (no token_embd.weight, no tokens)");

    c.qkv_bias = c.arch == "qwen2";
    c.tied_embeddings = f.find_tensor("output.weight") == nullptr;

    RopeConfig& r = c.rope;
    r.style = c.arch == "qwen2" ? RopeStyle::NeoX : RopeStyle::Normal;
    r.n_rot = read_int(f, a + "rope.dimension_count", c.head_dim, 2, c.head_dim);
    if (r.n_rot % 2 != 0)
        fail(f.path(), ": rope.dimension_count ", r.n_rot, " (expected an even number <= head dim ", c.head_dim, ")");
    r.freq_base = read_float(f, a + "rope.freq_base", 10000.0, true);
    std::string scaling = f.get_string(a + "rope.scaling.type", "none");
    double factor = read_float(f, a + "rope.scaling.factor", 0.0, false);
    if (factor == 0.0 && f.has(a + "rope.scale_linear")) {  // older files
        factor = read_float(f, a + "rope.scale_linear", 1.0, false);
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
        r.orig_ctx = read_int(f, a + "rope.scaling.original_context_length", c.ctx_train, 1, kMaxTokens);
        r.ext_factor = 1.0f;
        r.attn_factor = read_float(f, a + "rope.scaling.attn_factor", 1.0, false);
        r.beta_fast = read_float(f, a + "rope.scaling.yarn_beta_fast", 32.0, false);
        r.beta_slow = read_float(f, a + "rope.scaling.yarn_beta_slow", 1.0, false);
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
