// flint/model/weights.h — the immutable weights of a model, bound by name from a GGUF file.
// Matrices are views into the mmapped file (no copy); small vectors (norms, biases) are f32, converted
// once at load when stored otherwise. Shared by every sequence the model serves.
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "model/config.h"
#include "tensor/matmul.h"

namespace flint {

struct LayerWeights {
    const float* attn_norm = nullptr;  // (dim)
    WeightView wq, wk, wv;             // (q_dim, dim), (kv_dim, dim), (kv_dim, dim)
    const float* bq = nullptr;         // (q_dim)   qwen2 only
    const float* bk = nullptr;         // (kv_dim)  qwen2 only
    const float* bv = nullptr;         // (kv_dim)  qwen2 only
    WeightView wo;                     // (dim, q_dim)
    const float* ffn_norm = nullptr;   // (dim)
    WeightView w_gate, w_up;           // (ffn_dim, dim)
    WeightView w_down;                 // (dim, ffn_dim)

    // The layer's seven matrices, for code that treats them alike (byte counts, repacking).
    std::array<WeightView*, 7> matrices() { return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}; }
    std::array<const WeightView*, 7> matrices() const { return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}; }
};

struct ModelWeights {
    WeightView token_embd;             // (n_vocab, dim)
    std::vector<LayerWeights> layers;
    const float* output_norm = nullptr;  // (dim)
    WeightView output;                 // (n_vocab, dim); token_embd when tied
    size_t matrix_bytes = 0;           // bytes read per decode step (all matrices, output once)
};

// Rewrites the matrices whose type the active kernels read faster in another layout (tensor/repack.h),
// in place, and updates their views; tied matrices once. The bytes must be writable (MappedFile::modify).
// Returns how many matrices were repacked.
int repack_matrices(ModelWeights& w);

// Binds every tensor with shape checks ("tensor blk.3.attn_q.weight: expected [64, 64] got [64, 32]").
// `owned` receives the f32 copies of vectors that were not stored as f32.
ModelWeights bind_weights(const gguf::File& f, const ModelConfig& c, std::vector<std::vector<float>>& owned);

}  // namespace flint
