// Options every command that loads a model shares (-m, -t, --ctx, --kv-type), and the loading itself.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "kv/kv_cache.h"
#include "model/model.h"
#include "tensor/thread_pool.h"

namespace flint::cli {

struct ModelOptions {
    std::string model;        // path; default_model_path() when empty
    int threads = 0;          // 0: all cores
    int ctx = 0;              // 0: the model's training context, capped at 4096
    std::string kv_type = "f32";
    std::string isa;          // force a kernel path: scalar, avx2, avx512
};

void add_model_options(CLI::App& cmd, ModelOptions& o);
int resolve_threads(int requested);

// A model ready to run one sequence: weights, a KV cache of ctx positions with its block table, threads.
struct LoadedModel {
    std::shared_ptr<Model> model;
    std::unique_ptr<KVCache> kv;
    std::vector<int32_t> blocks;
    std::unique_ptr<ThreadPool> pool;
    int ctx = 0;
    double load_seconds = 0;
};
LoadedModel load_model(const ModelOptions& o, bool progress);

}  // namespace flint::cli
