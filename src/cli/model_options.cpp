#include "cli/model_options.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "model/attention.h"
#include "tensor/matmul.h"
#include "util/error.h"

namespace flint::cli {

void add_model_options(CLI::App& cmd, ModelOptions& o) {
    cmd.add_option("-m,--model", o.model, "GGUF model file (default: ../shared/models/stories260K.gguf)");
    cmd.add_option("-t,--threads", o.threads, "Threads for the kernels (default: all cores)")->check(CLI::Range(0, 256));
    cmd.add_option("-c,--ctx", o.ctx, "Context length in tokens (default: the model's, at most 4096)")->check(CLI::Range(0, 1 << 20));
    cmd.add_option("--kv-type", o.kv_type, "KV cache element type: f32, f16 or q8_0 (half of f16's memory, for long contexts)")->check(CLI::IsMember({"f32", "f16", "q8_0"}));
    cmd.add_option("--isa", o.isa, "Force a kernel path: scalar, avx2, avx512")->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
    cmd.add_option("--rope-scaling", o.rope_scaling, "Override RoPE scaling: none, linear, yarn (e.g. yarn with --rope-scale 4 "
                                                     "runs Qwen2.5-Coder to 131072 tokens)")
        ->check(CLI::IsMember({"none", "linear", "yarn"}));
    cmd.add_option("--rope-scale", o.rope_scale, "Context extension factor for --rope-scaling")->check(CLI::Range(1.0, 1024.0));
    cmd.add_option("--yarn-orig-ctx", o.yarn_orig_ctx, "YaRN: original training context (default: the model's)");
    add_decode_prefetch_option(cmd, o.decode_prefetch);
    cmd.add_flag("--mmap", o.mmap,
                 "Map the weights from the file (zero-copy, shared page cache) instead of reading them onto 2 MiB "
                 "pages; decode is slower that way on machines where TLB misses are costly");
}

void apply_rope_overrides(const ModelOptions& o, Model& m) {
    if (o.rope_scaling.empty()) return;
    RopeConfig& r = m.config.rope;
    if (o.rope_scaling == "none") {
        r.scaling = RopeScaling::None;
        r.scale_factor = 1.0f;
        return;
    }
    if (o.rope_scale <= 0) fail("--rope-scaling ", o.rope_scaling, " needs --rope-scale");
    r.scale_factor = o.rope_scale;
    if (o.rope_scaling == "linear") {
        r.scaling = RopeScaling::Linear;
    } else {
        r.scaling = RopeScaling::Yarn;
        r.orig_ctx = o.yarn_orig_ctx > 0 ? o.yarn_orig_ctx : m.config.ctx_train;
        r.ext_factor = 1.0f;
    }
}

void add_decode_prefetch_option(CLI::App& cmd, std::string& value) {
    cmd.add_option("--decode-prefetch", value,
                   "AVX-512 decode kernels prefetch their weight stream in software: auto (on for Intel and AMD Zen 5, "
                   "off for Zen 4, where the hardware prefetcher alone is faster), on, off")
        ->check(CLI::IsMember({"auto", "on", "off"}));
}

void apply_decode_prefetch(const std::string& value) {
    set_decode_prefetch(value == "on" ? DecodePrefetch::On : value == "off" ? DecodePrefetch::Off : DecodePrefetch::Auto);
}

bool decode_prefetch_in_use() { return active_isa() == Isa::AVX512 && decode_prefetch(); }

std::string kernels_label() { return kernel_path_name(active_isa(), decode_prefetch_in_use()); }

MemoryUse memory_use() {
    MemoryUse u;
    FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) return u;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
        long long kb = 0;
        if (std::sscanf(line, "VmRSS: %lld kB", &kb) == 1) u.rss = kb * 1024;
        if (std::sscanf(line, "VmHWM: %lld kB", &kb) == 1) u.peak_rss = kb * 1024;
    }
    std::fclose(f);
    return u;
}

int resolve_threads(int requested) {
    if (requested > 0) return requested;
    unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
}

LoadedModel load_model(const ModelOptions& o, bool progress) {
    if (o.isa == "scalar") set_isa(Isa::Scalar);
    else if (o.isa == "avx2") set_isa(Isa::AVX2);
    else if (o.isa == "avx512") set_isa(Isa::AVX512);
    apply_decode_prefetch(o.decode_prefetch);
    LoadedModel lm;
    const std::string path = o.model.empty() ? default_model_path() : o.model;
    auto t0 = std::chrono::steady_clock::now();
    if (progress) std::fprintf(stderr, "flint: loading %s …\n", path.c_str());
    lm.model = Model::load(path, o.mmap ? Residency::Map : Residency::HugePages);
    apply_rope_overrides(o, *lm.model);
    const ModelConfig& c = lm.model->config;
    lm.ctx = o.ctx > 0 ? o.ctx : std::min(c.ctx_train, 4096);
    KVConfig kc;
    kc.n_layers = c.n_layers;
    kc.kv_dim = c.kv_dim();
    kc.block_size = 16;
    kc.type = *dtype_from_name(o.kv_type);  // one of the names --kv-type accepts
    kc.n_blocks = (lm.ctx + kc.block_size - 1) / kc.block_size;
    lm.kv = std::make_unique<KVCache>(kc);
    for (int64_t b = 0; b < kc.n_blocks; ++b) lm.blocks.push_back(lm.kv->alloc());
    int threads = resolve_threads(o.threads);
    if (threads > 1) lm.pool = std::make_unique<ThreadPool>(threads);
    lm.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress)
        std::fprintf(stderr, "flint: %s\nflint: %.1f MiB of weights, ctx %d, KV %s, %d thread%s, kernels %s, loaded in %.2f s\n",
                     describe(c).c_str(), lm.model->weights.matrix_bytes / 1048576.0, lm.ctx, o.kv_type.c_str(), threads,
                     threads == 1 ? "" : "s", kernels_label().c_str(), lm.load_seconds);
    if (const std::string w = attention_fallback_warning(c.head_dim, kc.block_size); progress && !w.empty())
        std::fprintf(stderr, "flint: warning: %s\n", w.c_str());
    if (progress) {
        const MappedFile& m = lm.model->file->mapping();
        if (m.residency() == Residency::Map) std::fprintf(stderr, "flint: weights mapped from the file (4 KiB pages)\n");
        else
            std::fprintf(stderr, "flint: weights read into memory, %.1f of %.1f MiB on 2 MiB pages\n",
                         m.huge_page_bytes() / 1048576.0, m.size() / 1048576.0);
    }
    return lm;
}

}  // namespace flint::cli
