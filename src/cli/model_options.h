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
    std::string rope_scaling; // override the file's RoPE scaling: none, linear, yarn
    float rope_scale = 0;     // context extension factor for linear / yarn
    int yarn_orig_ctx = 0;    // YaRN: the context the model was trained with (default: the file's)
    bool mmap = false;        // map the weights from the file instead of reading them onto huge pages
    std::string decode_prefetch = "auto";  // AVX-512 one-token weight prefetch: auto, on, off (matmul.h)
};

// The kernel path in use as the stats lines name it: "avx512", or "avx512+prefetch" with the one-token
// weight prefetch (matmul.h DecodePrefetch).
std::string kernels_label();
// Whether the kernels in use prefetch their weight stream for one token (AVX-512 with the prefetch on).
bool decode_prefetch_in_use();
// Applies a --decode-prefetch value ("auto", "on" or "off"; the option checks it) for the whole process.
void apply_decode_prefetch(const std::string& value);
// Adds --decode-prefetch auto|on|off to a command (run, bench and serve), its value kept in `value`.
void add_decode_prefetch_option(CLI::App& cmd, std::string& value);

// Applies --rope-scaling/--rope-scale/--yarn-orig-ctx to a loaded model's config.
void apply_rope_overrides(const ModelOptions& o, Model& m);
// Peak and current resident set size of this process, in bytes (from /proc/self/status).
struct MemoryUse {
    int64_t rss = 0, peak_rss = 0;
};
MemoryUse memory_use();

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
