// `flint bench runtime` — what the runtime buys, measured on one model (issue: runtime benchmarks):
//   followup     time to first token of a follow-up turn on an N-token conversation vs the cold request
//   batch        aggregate decode tok/s of 8 concurrent sequences vs one
//   interactive  p50/p99 time to first token of short interactive requests while a long background
//                prefill runs (chunked prefill keeps it bounded)
//   cancel       cancel latency: cancel() → the request's final event
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "gguf/gguf.h"
#include "runtime/runtime.h"
#include "runtime/waiter.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct BenchRuntimeOptions {
    ModelOptions model;
    std::string scenario = "all";
    int conv_tokens = 8000;
    int bg_tokens = 16000;
    double window_s = 30;
    int batch = 8;
    int gen = 32;
    int repeat = 5;
    int prefill_chunk = 64;
    double bg_step_ms = RuntimeConfig{}.background_step_ms;
};

using Clock = std::chrono::steady_clock;
double ms(Clock::time_point t) { return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count(); }
double now_ms() { return ms(Clock::now()); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t i = static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

std::vector<int32_t> random_tokens(int n, int vocab, std::mt19937& rng) {
    // Ordinary tokens only (the low ids of every supported vocab are plain text pieces).
    std::uniform_int_distribution<int32_t> pick(100, std::min(vocab, 100000) - 1);
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = pick(rng);
    return v;
}

GenerationRequest greedy(std::vector<int32_t> prompt, int max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.prompt_lookup = false;
    return r;
}

void followup(Runtime& rt, const BenchRuntimeOptions& o, std::mt19937& rng) {
    const int V = rt.model().config.n_vocab;
    auto conv = random_tokens(o.conv_tokens, V, rng);
    Waiter cold;
    double t0 = now_ms();
    rt.submit(greedy(conv, 16), cold.callback());
    const Event cold_done = cold.wait();
    const double cold_ttft = ms(cold.first_token_at()) - t0;
    auto next = conv;
    next.insert(next.end(), cold_done.output.begin(), cold_done.output.end());
    auto user = random_tokens(40, V, rng);
    next.insert(next.end(), user.begin(), user.end());
    Waiter warm;
    t0 = now_ms();
    rt.submit(greedy(next, 16), warm.callback());
    const Event warm_done = warm.wait();
    const double warm_ttft = ms(warm.first_token_at()) - t0;
    std::printf("followup: conversation %d tokens | cold TTFT %.0f ms (cached %d) | follow-up TTFT %.0f ms (prompt %d, "
                "cached %d, prefilled %d) | ratio %.1f%%\n",
                o.conv_tokens, cold_ttft, cold_done.usage.cached_tokens, warm_ttft, warm_done.usage.prompt_tokens,
                warm_done.usage.cached_tokens, warm_done.usage.prompt_tokens - warm_done.usage.cached_tokens,
                100.0 * warm_ttft / cold_ttft);
}

void batch(Runtime& rt, const BenchRuntimeOptions& o, std::mt19937& rng) {
    const int V = rt.model().config.n_vocab;
    auto run = [&](int n) {
        std::vector<std::unique_ptr<Waiter>> ws;
        std::vector<std::vector<int32_t>> prompts;
        for (int i = 0; i < n; ++i) prompts.push_back(random_tokens(16, V, rng));
        // Prefill all first (generate=false), so the timed part is decode only.
        for (auto& p : prompts) {
            GenerationRequest w = greedy(p, 1);
            w.generate = false;
            run_to_completion(rt, w);
        }
        double t0 = now_ms();
        for (auto& p : prompts) {
            ws.push_back(std::make_unique<Waiter>());
            rt.submit(greedy(p, o.gen), ws.back()->callback());
        }
        int total = 0;
        for (auto& w : ws) total += static_cast<int>(w->wait().output.size());
        return total / ((now_ms() - t0) / 1000.0);
    };
    // Alternate the two so load changes on a shared machine hit both alike; report medians.
    std::vector<double> ones, manys;
    for (int r = 0; r < o.repeat; ++r) {
        ones.push_back(run(1));
        manys.push_back(run(o.batch));
    }
    const double one = percentile(ones, 50), many = percentile(manys, 50);
    std::printf("batch: medians of %d alternating runs | 1 sequence %.2f tok/s (%.2f–%.2f) | %d sequences %.2f tok/s aggregate "
                "(%.2f–%.2f) | %.2fx\n",
                o.repeat, one, percentile(ones, 0), percentile(ones, 100), o.batch, many, percentile(manys, 0),
                percentile(manys, 100), many / one);
}

// Short interactive requests, one at a time, while a long background prompt is prefilled. The window ends
// after --window seconds (or when the background prefill completes); then the background request is
// cancelled, so the scenario never waits for the whole (minutes-long) prefill.
void interactive(Runtime& rt, const BenchRuntimeOptions& o, std::mt19937& rng) {
    const int V = rt.model().config.n_vocab;
    auto one = [&](std::vector<double>& ttft, uint64_t& prefilled) {
        Waiter w;
        const double t0 = now_ms();
        rt.submit(greedy(random_tokens(32, V, rng), 1), w.callback());
        const Event e = w.wait();
        ttft.push_back(ms(w.first_token_at()) - t0);
        prefilled += e.usage.prompt_tokens - e.usage.cached_tokens;
    };
    std::vector<double> idle, busy;
    uint64_t own = 0;
    for (int i = 0; i < 5; ++i) one(idle, own);  // the same requests on an idle engine
    GenerationRequest bg = greedy(random_tokens(o.bg_tokens, V, rng), 1);
    bg.priority = Priority::Background;
    Waiter bgw;
    own = 0;
    const uint64_t before = rt.stats().prefilled_tokens_total;
    const double start = now_ms(), end = start + o.window_s * 1000;
    const uint64_t bg_id = rt.submit(bg, bgw.callback());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the background prefill get going
    while (now_ms() < end && !bgw.finished()) {
        one(busy, own);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // background steps run in between
    }
    const double window_ms = now_ms() - start;
    const int64_t bg_prefilled = static_cast<int64_t>(rt.stats().prefilled_tokens_total - before - own);
    const double cancel_at = now_ms();
    rt.cancel(bg_id);
    bgw.wait();
    std::printf("interactive: idle TTFT p50 %.0f ms | %zu requests (32-token prompts) during a %d-token background prefill "
                "(prefill chunk %d): TTFT p50 %.0f ms, p99 %.0f ms, max %.0f ms | background prefilled %lld of %d tokens "
                "in %.1f s (%.0f tok/s, reached position %lld) | background cancel took %.0f ms\n",
                percentile(idle, 50), busy.size(), o.bg_tokens, o.prefill_chunk, percentile(busy, 50), percentile(busy, 99),
                percentile(busy, 100), static_cast<long long>(bg_prefilled), o.bg_tokens, window_ms / 1000,
                bg_prefilled / (window_ms / 1000), static_cast<long long>(bg_prefilled), now_ms() - cancel_at);
}

void cancel(Runtime& rt, std::mt19937& rng) {
    const int V = rt.model().config.n_vocab;
    std::vector<double> lat;
    std::uniform_int_distribution<int> after(3, 12);
    for (int i = 0; i < 15; ++i) {
        Waiter w;
        std::atomic<uint64_t> id{0};
        std::atomic<double> cancel_at{0};
        std::thread canceller;
        const int k = after(rng);
        int seen = 0;  // engine thread only
        id = rt.submit(greedy(random_tokens(16, V, rng), 1000), w.callback([&](const Event&) {
            if (++seen != k) return;
            // Cancel from another thread, as a server's I/O thread would.
            canceller = std::thread([&] {
                while (id.load() == 0) std::this_thread::yield();  // submit() may not have returned yet
                cancel_at = now_ms();
                rt.cancel(id);
            });
        }));
        w.wait();
        canceller.join();
        lat.push_back(ms(w.done_at()) - cancel_at.load());
    }
    std::printf("cancel: %zu cancels | latency (cancel() → final event) median %.2f ms, max %.2f ms\n", lat.size(),
                percentile(lat, 50), percentile(lat, 100));
}

void bench_runtime(const BenchRuntimeOptions& o) {
    ModelOptions mo = o.model;
    auto model = Model::load(mo.model.empty() ? default_model_path() : mo.model);
    auto tok = Tokenizer::from_gguf(*model->file);
    RuntimeConfig c;
    c.threads = resolve_threads(mo.threads);
    c.ctx = std::max({mo.ctx, o.conv_tokens + 256, o.bg_tokens + 256});
    c.kv_type = *dtype_from_name(mo.kv_type);
    c.prefill_chunk = o.prefill_chunk;
    c.background_step_ms = o.bg_step_ms;
    c.max_running = std::max(16, o.batch);
    c.kv_memory_bytes = static_cast<int64_t>(KVCache::bytes_per_token(model->config.n_layers, model->config.kv_dim(), c.kv_type)) *
                        (c.ctx * 2 + 4096);
    std::printf("model %s | %d threads | ctx %d | KV %s | prefill chunk %d | background step %.0f ms\n", model->config.name.c_str(),
                c.threads, c.ctx, mo.kv_type.c_str(), c.prefill_chunk, c.background_step_ms);
    std::mt19937 rng(42);
    auto want = [&](const char* s) { return o.scenario == "all" || o.scenario == s; };
    if (want("followup")) { Runtime rt(model, tok, c); followup(rt, o, rng); }
    if (want("batch")) { Runtime rt(model, tok, c); batch(rt, o, rng); }
    if (want("interactive")) { Runtime rt(model, tok, c); interactive(rt, o, rng); }
    if (want("cancel")) { Runtime rt(model, tok, c); cancel(rt, rng); }
}

}  // namespace

void register_bench_runtime(CLI::App& bench) {
    auto o = std::make_shared<BenchRuntimeOptions>();
    CLI::App* cmd = bench.add_subcommand("runtime", "Runtime benchmarks: follow-up TTFT, batched decode, TTFT under load, cancel latency");
    add_model_options(*cmd, o->model);
    o->model.kv_type = "f16";
    cmd->add_option("--scenario", o->scenario, "all, followup, batch, interactive or cancel")
        ->check(CLI::IsMember({"all", "followup", "batch", "interactive", "cancel"}));
    cmd->add_option("--conv-tokens", o->conv_tokens, "Conversation length for the follow-up test");
    cmd->add_option("--bg-tokens", o->bg_tokens, "Background prompt length for the interactive test");
    cmd->add_option("--window", o->window_s, "Seconds of interactive requests during the background prefill");
    cmd->add_option("--batch", o->batch, "Concurrent sequences for the batch test");
    cmd->add_option("--gen", o->gen, "Tokens each sequence decodes in the batch test");
    cmd->add_option("--repeat", o->repeat, "Alternating runs of the batch test (medians reported)")->check(CLI::Range(1, 100));
    cmd->add_option("--prefill-chunk", o->prefill_chunk, "Prompt tokens per engine step");
    cmd->add_option("--background-step-ms", o->bg_step_ms, "While interactive requests come, size background prefill chunks to about this many ms a step (default 200; 0: off)");
    cmd->callback([o] { bench_runtime(*o); });
}

}  // namespace flint::cli
