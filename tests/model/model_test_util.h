// Helpers shared by the model tests: reading golden files, running a prompt through the forward pass.
#pragma once
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "tensor/thread_pool.h"

namespace flint::test {

// The largest |a[i] - b[i]| over n values, and the largest |a[i]| (the scale a tolerance is relative to).
inline float max_abs_diff(const float* a, const float* b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}
inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) { return max_abs_diff(a.data(), b.data(), a.size()); }
inline float max_abs(const std::vector<float>& a) {
    float m = 0;
    for (float v : a) m = std::max(m, std::fabs(v));
    return m;
}

inline std::vector<int32_t> read_token_file(const std::string& path) {
    std::ifstream in(path);
    std::vector<int32_t> ids;
    int64_t id;
    while (in >> id) ids.push_back(static_cast<int32_t>(id));
    return ids;
}

inline std::vector<float> read_f32_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(0, std::ios::end);
    size_t n = static_cast<size_t>(in.tellg()) / sizeof(float);
    in.seekg(0);
    std::vector<float> v(n);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
    return v;
}

// A model with a KV cache and one contiguous block table, for running single sequences in tests.
struct Runner {
    std::shared_ptr<Model> model;
    std::unique_ptr<KVCache> kv;
    std::vector<int32_t> blocks;
    ForwardScratch scratch;
    std::unique_ptr<ThreadPool> pool;

    Runner(std::shared_ptr<Model> m, int ctx, DType kv_type = DType::F32, int threads = 1, int block_size = 16)
        : model(std::move(m)) {
        KVConfig kc{model->config.n_layers, model->config.kv_dim(), block_size, kv_type, (ctx + block_size - 1) / block_size};
        kv = std::make_unique<KVCache>(kc);
        for (int64_t b = 0; b < kc.n_blocks; ++b) blocks.push_back(kv->alloc());
        if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
    }

    // Feeds tokens at pos0.., returns logits for all of them ([n][n_vocab]) or the last only.
    std::vector<float> run(const std::vector<int32_t>& tokens, int pos0, Logits mode) {
        SeqBatch sb{tokens, pos0, blocks, mode};
        std::vector<float> logits(static_cast<size_t>(logits_rows({&sb, 1})) * model->config.n_vocab);
        forward(*model, {&sb, 1}, *kv, scratch, pool.get(), logits.data());
        return logits;
    }
};

}  // namespace flint::test
