// `flint bench` — prefill and decode speed like llama-bench (mean ± stddev over repetitions), with the
// machine's read bandwidth probed after every repetition, so decode can be stated as a fraction of the
// bandwidth of the same moments.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "model/forward.h"
#include "sample/sampler.h"
#include "tensor/bandwidth.h"
#include "tensor/matmul.h"
#include "util/huge_pages.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct BenchOptions {
    ModelOptions model;
    int n_prompt = 512;
    int n_gen = 128;
    int depth = 0;  // tokens of context before the timed prefill / decode (llama-bench's -d)
    int reps = 5;
    bool json = false;
    bool no_bandwidth = false;
    bool fill_kv = false;
    bool stages = false;  // time the decode repetitions' forward passes stage by stage
    int paired = 0;       // decode tokens timed one by one, each against a read of the weights' bytes after it
};

struct Stat {
    double mean = 0, stddev = 0, median = 0;
};

Stat stats(std::vector<double> v) {
    Stat s;
    if (v.empty()) return s;
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    double var = 0;
    for (double x : v) var += (x - s.mean) * (x - s.mean);
    s.stddev = v.size() > 1 ? std::sqrt(var / (v.size() - 1)) : 0;
    std::sort(v.begin(), v.end());
    s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    return s;
}

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> v) { return stats(std::move(v)).median; }

// --paired: decode against the memory of the same ~10 ms. On a shared host whose bandwidth moves within
// seconds, a repetition of 128 tokens and the probe after it can see different states; here every token is
// timed alone and followed at once by one streaming read of as many bytes as its step reads (the weights,
// from a buffer of that size on huge pages, like them), and the ratio is taken token by token. The halves
// split the pairs by their read's speed, so the faster and slower moments of the run are told apart.
struct PairedHalf {
    double ratio = 0, read_gbs = 0;  // medians
};
struct Paired {
    int tokens = 0;
    PairedHalf all, faster, slower;
    double p10 = 0, p90 = 0;  // of the ratios
    size_t cache_bytes = 0;   // the last-level cache (0: unknown); weights smaller than it are partly read from it
};

template <typename Decode>
Paired paired_decode(int n, size_t weight_bytes, ThreadPool* pool, Decode& decode_from) {
    HugeBuffer buf(weight_bytes);
    std::memset(buf.data(), 1, buf.size());  // resident before the first pair
    struct Pair {
        double ratio, read_gbs;
    };
    std::vector<Pair> pairs;
    for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        decode_from(i, 1);
        const double step = std::chrono::duration<double>(Clock::now() - t0).count();
        const double read = stream_read_seconds(pool, buf.data(), buf.size());
        pairs.push_back({read / step, double(buf.size()) / read / 1e9});
    }
    auto half = [](std::span<const Pair> ps) {
        std::vector<double> r, g;
        for (const Pair& p : ps) r.push_back(p.ratio), g.push_back(p.read_gbs);
        return PairedHalf{median_of(r), median_of(g)};
    };
    Paired out;
    out.tokens = n;
    out.cache_bytes = last_level_cache_bytes();
    out.all = half(pairs);
    std::vector<double> ratios;
    for (const Pair& p : pairs) ratios.push_back(p.ratio);
    std::sort(ratios.begin(), ratios.end());
    out.p10 = ratios[size_t(0.1 * (n - 1) + 0.5)];
    out.p90 = ratios[size_t(0.9 * (n - 1) + 0.5)];
    std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.read_gbs < b.read_gbs; });
    const std::span<const Pair> all(pairs);
    out.slower = half(all.first(size_t(n) / 2));
    out.faster = half(all.subspan(size_t(n) / 2));
    return out;
}

void bench(const BenchOptions& o) {
    ModelOptions mo = o.model;
    if (o.paired == 1) fail("--paired needs at least 2 tokens (it compares the faster and slower half of them)");
    const int n_decode = std::max(o.n_gen, o.paired);  // the decode positions after the depth context
    if (mo.ctx == 0) mo.ctx = o.depth + o.n_prompt + n_decode + 16;
    LoadedModel lm = load_model(mo, !o.json);
    const Model& m = *lm.model;
    const int V = m.config.n_vocab;
    if (o.depth + o.n_prompt + n_decode > lm.ctx)
        fail(o.paired > o.n_gen ? "-d + -p + --paired = " : "-d + -p + -n = ", o.depth + o.n_prompt + n_decode,
             " exceeds the context ", lm.ctx);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(0, V - 1);
    std::vector<int32_t> prompt(std::max(o.n_prompt, std::min(o.depth, 512)));
    for (int32_t& t : prompt) t = pick(rng);
    ForwardScratch scratch;
    std::vector<float> logits(static_cast<size_t>(V));

    // Prompt tokens at positions depth.. (the context before them stays as the depth fill left it).
    auto prefill = [&](int n, int pos0) {
        SeqBatch sb{std::span<const int32_t>(prompt).first(n), pos0, lm.blocks, Logits::Last};
        forward(m, {&sb, 1}, *lm.kv, scratch, lm.pool.get(), logits.data());
    };
    // Decode n tokens at positions depth + first.., greedy, one forward each.
    int32_t tok = pick(rng);
    auto decode_from = [&](int first, int n) {
        for (int i = first; i < first + n; ++i) {
            SeqBatch sb{std::span<const int32_t>(&tok, 1), o.depth + i, lm.blocks, Logits::Last};
            forward(m, {&sb, 1}, *lm.kv, scratch, lm.pool.get(), logits.data());
            tok = argmax(logits.data(), V);
        }
    };
    auto decode = [&](int n) {
        tok = pick(rng);
        decode_from(0, n);
    };
    // The depth context, filled once and not timed (512 tokens per forward).
    for (int p = 0; p < o.depth; p += 512) {
        if (!o.json) std::fprintf(stderr, "\rflint: filling %d / %d tokens of context", p, o.depth);
        prefill(std::min(512, o.depth - p), p);
    }
    if (o.depth > 0 && !o.json) std::fprintf(stderr, "\rflint: filled %d tokens of context          \n", o.depth);
    // Warm-up: touch every weight page and grow the scratch buffers.
    if (o.n_prompt > 0) prefill(std::min(o.n_prompt, 32), o.depth);
    decode(std::min(o.n_gen, 4) + 1);

    // The bandwidth probe runs after every repetition, so each decode figure is compared with the
    // bandwidth of the same moments (on a shared machine it moves by tens of percent within minutes).
    // Its 1 GiB buffer is not the model's memory: the peak below is taken before it exists and after it
    // is gone (nothing else here shrinks, so the later peak is the RSS at the end).
    const MemoryUse before_probe = memory_use();
    std::optional<ReadProbe> probe;
    if (!o.no_bandwidth) probe.emplace();
    std::vector<double> pp, tg, bws;
    StageTimes stage_times;
    double decode_seconds = 0;
    for (int r = 0; r < o.reps; ++r) {
        if (o.n_prompt > 0) {
            auto t0 = Clock::now();
            prefill(o.n_prompt, o.depth);
            pp.push_back(o.n_prompt / std::chrono::duration<double>(Clock::now() - t0).count());
        }
        if (o.n_gen > 0) {
            if (o.stages) scratch.stage_times = &stage_times;
            auto t0 = Clock::now();
            decode(o.n_gen);
            const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
            scratch.stage_times = nullptr;
            decode_seconds += sec;
            tg.push_back(o.n_gen / sec);
        }
        if (probe) bws.push_back(probe->best_gbs(lm.pool.get(), 3));
    }
    probe.reset();
    const Paired paired = o.paired > 0 ? paired_decode(o.paired, m.weights.matrix_bytes, lm.pool.get(), decode_from) : Paired{};
    if (paired.tokens > 0 && m.weights.matrix_bytes < paired.cache_bytes)
        std::fprintf(stderr, "flint: --paired: the weights (%.1f MiB) are smaller than the %.1f MiB last-level cache, so the "
                             "step and the read are partly served from it: the ratio is not a memory-bandwidth figure\n",
                     m.weights.matrix_bytes / 1048576.0, paired.cache_bytes / 1048576.0);
    if (o.fill_kv)  // every KV page resident, as with a full context
        std::memset(lm.kv->k(0, 0), 0, lm.kv->block_bytes() * static_cast<size_t>(lm.kv->n_blocks()));
    MemoryUse mem = memory_use();
    mem.peak_rss = std::max(before_probe.peak_rss, mem.rss);
    const double weight_gb = m.weights.matrix_bytes / 1e9;
    // Decode's fraction of the bandwidth: per repetition (its decode against the probe right after it),
    // then the median.
    std::vector<double> fractions;
    for (size_t r = 0; r < bws.size() && r < tg.size(); ++r) fractions.push_back(tg[r] * weight_gb / bws[r]);
    const Stat sp = stats(pp), sg = stats(tg), sbw = stats(bws), sfr = stats(fractions);
    const double bw = sbw.median;
    const double achieved = sg.median * weight_gb;
    const int threads = lm.pool ? lm.pool->size() : 1;
    // --stages: µs a decoded token in each stage; "other" is the rest of the decode loop (sampling, the calls).
    std::vector<std::pair<std::string, double>> stage_us;
    if (o.stages && stage_times.passes > 0) {
        double staged = 0;
        for (int i = 0; i < static_cast<int>(Stage::kCount); ++i) {
            stage_us.emplace_back(stage_name(Stage(i)), 1e6 * stage_times.seconds[i] / stage_times.passes);
            staged += stage_times.seconds[i];
        }
        stage_us.emplace_back("other", 1e6 * std::max(0.0, decode_seconds - staged) / stage_times.passes);
    }
    if (o.json) {
        nlohmann::json j = {{"model", m.config.name},          {"arch", m.config.arch},
                            {"weights_bytes", m.weights.matrix_bytes}, {"threads", threads},
                            {"isa", isa_name(active_isa())},   {"decode_prefetch", decode_prefetch_in_use()},
                            {"n_prompt", o.n_prompt},
                            {"n_gen", o.n_gen},                {"depth", o.depth},
                            {"reps", o.reps},
                            {"pp_tok_s", {{"mean", sp.mean}, {"stddev", sp.stddev}, {"median", sp.median}}},
                            {"tg_tok_s", {{"mean", sg.mean}, {"stddev", sg.stddev}, {"median", sg.median}}},
                            {"tg_tok_s_per_rep", tg},
                            {"read_bandwidth_gb_s", bw},       {"decode_gb_s", achieved},
                            {"read_bandwidth_gb_s_per_rep", bws},
                            {"decode_fraction_of_bandwidth", sfr.median},
                            {"decode_fraction_per_rep", fractions},
                            {"ctx", lm.ctx},                   {"kv_bytes", lm.kv->block_bytes() * lm.kv->n_blocks()},
                            {"rss_bytes", mem.rss},            {"peak_rss_bytes", mem.peak_rss}};
        if (paired.tokens > 0)
            j["paired"] = {{"tokens", paired.tokens},
                           {"decode_over_read_median", paired.all.ratio},
                           {"decode_over_read_p10", paired.p10},
                           {"decode_over_read_p90", paired.p90},
                           {"read_gb_s_median", paired.all.read_gbs},
                           {"last_level_cache_bytes", paired.cache_bytes},
                           {"faster_half", {{"decode_over_read_median", paired.faster.ratio}, {"read_gb_s_median", paired.faster.read_gbs}}},
                           {"slower_half", {{"decode_over_read_median", paired.slower.ratio}, {"read_gb_s_median", paired.slower.read_gbs}}}};
        if (!stage_us.empty()) {
            nlohmann::json st = nlohmann::json::object();
            for (const auto& [name, us] : stage_us) st[name] = us;
            j["decode_stage_us_per_token"] = st;
        }
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    std::printf("| model | weights | threads | kernels | test | tok/s (mean ± sd) | median |\n|---|---|---|---|---|---|---|\n");
    const std::string at = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";
    if (o.n_prompt > 0)
        std::printf("| %s | %.1f MiB | %d | %s | pp%d%s | %.2f ± %.2f | %.2f |\n", m.config.name.c_str(),
                    m.weights.matrix_bytes / 1048576.0, threads, kernels_label().c_str(), o.n_prompt, at.c_str(), sp.mean,
                    sp.stddev, sp.median);
    if (o.n_gen > 0)
        std::printf("| %s | %.1f MiB | %d | %s | tg%d%s | %.2f ± %.2f | %.2f |\n", m.config.name.c_str(),
                    m.weights.matrix_bytes / 1048576.0, threads, kernels_label().c_str(), o.n_gen, at.c_str(), sg.mean,
                    sg.stddev, sg.median);
    if (!stage_us.empty()) {
        double total = 0;
        for (const auto& st : stage_us) total += st.second;
        std::printf("\ndecode by stage (wall time on the calling thread; each matmul stage with its activation "
                    "conversion and region ends):\n| stage | us / token | share |\n|---|---|---|\n");
        for (const auto& [name, us] : stage_us) std::printf("| %s | %.1f | %.1f%% |\n", name.c_str(), us, 100 * us / total);
    }
    std::printf("\nmemory: ctx %d, KV %.1f MiB%s, RSS %.1f MiB (peak %.1f MiB)\n", lm.ctx,
                lm.kv->block_bytes() * lm.kv->n_blocks() / 1048576.0, o.fill_kv ? " (all touched)" : " (touched as used)",
                mem.rss / 1048576.0, mem.peak_rss / 1048576.0);
    if (bw > 0) {
        auto [lo, hi] = std::minmax_element(bws.begin(), bws.end());
        std::printf("\nread bandwidth (%d threads, best of 3 passes over 1 GiB after each repetition): %.2f GB/s median (%.2f-%.2f)\n",
                    threads, bw, *lo, *hi);
        if (!fractions.empty()) {
            auto [flo, fhi] = std::minmax_element(fractions.begin(), fractions.end());
            std::printf("decode reads %.2f GB/s of weights (median); per repetition against the probe after it: %.1f%% median "
                        "(%.1f-%.1f%%)%s\n",
                        achieved, 100.0 * sfr.median, 100.0 * *flo, 100.0 * *fhi,
                        o.depth > 0 ? " (plus the KV cache of the depth context)" : "");
        }
    }
    if (paired.tokens > 0)
        std::printf("\npaired: %d decode tokens, each against one read of the weights' %.1f MiB right after it (%d thread%s): "
                    "decode / read %.1f%% median (p10 %.1f%%, p90 %.1f%%), reads %.2f GB/s median; in the faster half of the "
                    "reads (%.2f GB/s) %.1f%%, in the slower half (%.2f GB/s) %.1f%%\n",
                    paired.tokens, m.weights.matrix_bytes / 1048576.0, threads, threads == 1 ? "" : "s", 100 * paired.all.ratio, 100 * paired.p10,
                    100 * paired.p90, paired.all.read_gbs, paired.faster.read_gbs, 100 * paired.faster.ratio,
                    paired.slower.read_gbs, 100 * paired.slower.ratio);
}

}  // namespace

CLI::App* register_bench(CLI::App& app) {
    auto o = std::make_shared<BenchOptions>();
    CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode speed (or a sub-benchmark: `flint bench tokenize`)");
    add_model_options(*cmd, o->model);
    cmd->add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens for the prefill test (0: skip)")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("-n,--n-gen", o->n_gen, "Tokens for the decode test (0: skip)")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("-d,--depth", o->depth, "Tokens of context before the timed prefill and decode (filled once, untimed): speed at a long context")
        ->check(CLI::Range(0, 1 << 20));
    cmd->add_option("-r,--reps", o->reps, "Repetitions")->check(CLI::Range(1, 1000));
    cmd->add_flag("--json", o->json, "Print JSON instead of a table");
    cmd->add_flag("--no-bandwidth", o->no_bandwidth, "Skip the read-bandwidth measurement");
    cmd->add_flag("--fill-kv", o->fill_kv, "Touch the whole KV cache before measuring memory (RSS as with a full context)");
    cmd->add_flag("--stages", o->stages,
                  "Also time the decode repetitions stage by stage (norms, q/k/v, attention, FFN, head...): where a step "
                  "goes; adds one clock read per stage");
    cmd->add_option("--paired", o->paired,
                    "After the repetitions, time N decode tokens one by one, each followed at once by a read of as many "
                    "bytes as its step reads, and report decode / read token by token (median, and in the faster and "
                    "slower half of the reads): decode against the memory of the same moments, for hosts whose "
                    "bandwidth moves within seconds. The read's buffer is as large as the weights (allocated for "
                    "this only); at a depth the step also reads the KV cache, which the ratio does not count. "
                    "Meaningful for models larger than the last-level cache")
        ->check(CLI::Range(0, 1 << 16));
    cmd->require_subcommand(0, 1);
    cmd->callback([o, cmd] {
        if (cmd->get_subcommands().empty()) bench(*o);
    });
    return cmd;
}

}  // namespace flint::cli
