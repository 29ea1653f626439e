#include "model/weights.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "gguf/gguf.h"
#include "tensor/quant.h"
#include "tensor/repack.h"
#include "util/error.h"

namespace flint {
namespace {

std::string shape_str(std::initializer_list<int64_t> dims) {
    std::string s = "[";
    bool first = true;
    for (int64_t d : dims) {
        if (!first) s += ", ";
        s += std::to_string(d);
        first = false;
    }
    return s + "]";
}

const gguf::TensorInfo& require(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) fail(f.path(), ": missing tensor ", name);
    return *t;
}

void check_shape(const gguf::File& f, const gguf::TensorInfo& t, std::initializer_list<int64_t> expected) {
    bool ok = t.dims.size() == expected.size();
    size_t k = 0;
    for (int64_t d : expected) {
        if (ok && static_cast<int64_t>(t.dims[k]) != d) ok = false;
        ++k;
    }
    if (!ok)
        fail(f.path(), ": tensor ", t.name, ": expected shape ", shape_str(expected), " got ", t.shape_string());
}

// A file may place tensors on any power-of-two boundary (general.alignment 1 is legal). A tensor whose bytes
// do not start on a 4-byte boundary is read from an aligned copy (f32 values, block scales); else in place.
const void* aligned(const gguf::TensorInfo& t, std::vector<std::vector<float>>& owned) {
    if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0) return t.data;
    owned.emplace_back((t.n_bytes + sizeof(float) - 1) / sizeof(float));
    std::memcpy(owned.back().data(), t.data, t.n_bytes);
    return owned.back().data();
}

WeightView matrix(const gguf::File& f, const std::string& name, int64_t rows, int64_t cols,
                  std::vector<std::vector<float>>& owned) {
    const gguf::TensorInfo& t = require(f, name);
    check_shape(f, t, {cols, rows});
    if (!has_matmul_kernel(t.type))
        fail(f.path(), ": tensor ", name, ": type ", dtype_name(t.type), " is not supported for matrices");
    return WeightView{t.type, aligned(t, owned), rows, cols};
}

const float* vec(const gguf::File& f, const std::string& name, int64_t n, std::vector<std::vector<float>>& owned) {
    const gguf::TensorInfo& t = require(f, name);
    check_shape(f, t, {n});
    if (t.type == DType::F32) return static_cast<const float*>(aligned(t, owned));
    if (t.type != DType::F16 && t.type != DType::BF16)
        fail(f.path(), ": tensor ", name, ": type ", dtype_name(t.type), " (expected f32, f16 or bf16 for a vector)");
    owned.emplace_back(n);
    dequantize_row_ref(t.type, t.data, owned.back().data(), n);
    return owned.back().data();
}

const float* opt_vec(const gguf::File& f, const std::string& name, int64_t n, std::vector<std::vector<float>>& owned) {
    return f.find_tensor(name) ? vec(f, name, n, owned) : nullptr;
}

}  // namespace

int repack_matrices(ModelWeights& w) {
    std::vector<WeightView*> views = {&w.token_embd, &w.output};
    for (LayerWeights& L : w.layers)
        for (WeightView* v : L.matrices()) views.push_back(v);
    std::map<const void*, DType> done;  // data -> its new layout (a tied matrix appears twice)
    int n = 0;
    for (WeightView* v : views) {
        if (auto it = done.find(v->data); it != done.end()) {
            v->type = it->second;
            continue;
        }
        const auto to = repack_target(v->type, v->rows, v->cols);
        if (!to) continue;
        repack_rows(v->type, *to, const_cast<void*>(v->data), v->rows, v->cols);
        done[v->data] = *to;
        v->type = *to;
        ++n;
    }
    return n;
}

ModelWeights bind_weights(const gguf::File& f, const ModelConfig& c, std::vector<std::vector<float>>& owned) {
    ModelWeights w;
    w.token_embd = matrix(f, "token_embd.weight", c.n_vocab, c.dim, owned);
    w.output_norm = vec(f, "output_norm.weight", c.dim, owned);
    w.output = c.tied_embeddings ? w.token_embd : matrix(f, "output.weight", c.n_vocab, c.dim, owned);
    auto bytes = [](const WeightView& v) { return row_bytes(v.type, v.cols) * v.rows; };
    w.matrix_bytes = bytes(w.output);
    for (int l = 0; l < c.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights L;
        L.attn_norm = vec(f, p + "attn_norm.weight", c.dim, owned);
        L.wq = matrix(f, p + "attn_q.weight", c.q_dim(), c.dim, owned);
        L.wk = matrix(f, p + "attn_k.weight", c.kv_dim(), c.dim, owned);
        L.wv = matrix(f, p + "attn_v.weight", c.kv_dim(), c.dim, owned);
        if (c.qkv_bias) {
            L.bq = vec(f, p + "attn_q.bias", c.q_dim(), owned);
            L.bk = vec(f, p + "attn_k.bias", c.kv_dim(), owned);
            L.bv = vec(f, p + "attn_v.bias", c.kv_dim(), owned);
        } else {
            L.bq = opt_vec(f, p + "attn_q.bias", c.q_dim(), owned);
            L.bk = opt_vec(f, p + "attn_k.bias", c.kv_dim(), owned);
            L.bv = opt_vec(f, p + "attn_v.bias", c.kv_dim(), owned);
        }
        L.wo = matrix(f, p + "attn_output.weight", c.dim, c.q_dim(), owned);
        L.ffn_norm = vec(f, p + "ffn_norm.weight", c.dim, owned);
        L.w_gate = matrix(f, p + "ffn_gate.weight", c.ffn_dim, c.dim, owned);
        L.w_up = matrix(f, p + "ffn_up.weight", c.ffn_dim, c.dim, owned);
        L.w_down = matrix(f, p + "ffn_down.weight", c.dim, c.ffn_dim, owned);
        for (const WeightView* v : L.matrices()) w.matrix_bytes += bytes(*v);
        w.layers.push_back(L);
    }
    return w;
}

}  // namespace flint
