// `flint bench runtime` — what the runtime buys, measured on one model (issue: runtime benchmarks):
//   followup     time to first token of a follow-up turn on an N-token conversation vs the cold request
//   batch        aggregate decode tok/s of 8 concurrent sequences vs one
//   interactive  p50/p99 time to first token of short interactive requests while a long background
//                prefill runs (chunked prefill keeps it bounded)
//   cancel       cancel latency: cancel() → the request's final event
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "gguf/gguf.h"
#include "runtime/runtime.h"
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
    int prefill_chunk = 64;
};

using Clock = std::chrono::steady_clock;
double now_ms() { return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count(); }

struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    Event done;
    bool finished = false;
    double first_ms = -1, done_ms = 0;
    int tokens = 0;
    Runtime::Callback cb() {
        return [this](const Event& e) {
            std::lock_guard lk(mu);
            if (!e.done) {
                if (first_ms < 0) first_ms = now_ms();
                ++tokens;
                return;
            }
            done = e;
            done_ms = now_ms();
            finished = true;
            cv.notify_all();
        };
    }
    void wait() {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return finished; });
    }
};

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
    rt.submit(greedy(conv, 16), cold.cb());
    cold.wait();
    const double cold_ttft = cold.first_ms - t0;
    auto next = conv;
    next.insert(next.end(), cold.done.output.begin(), cold.done.output.end());
    auto user = random_tokens(40, V, rng);
    next.insert(next.end(), user.begin(), user.end());
    Waiter warm;
    t0 = now_ms();
    rt.submit(greedy(next, 16), warm.cb());
    warm.wait();
    const double warm_ttft = warm.first_ms - t0;
    std::printf("followup: conversation %d tokens | cold TTFT %.0f ms (cached %d) | follow-up TTFT %.0f ms (prompt %d, "
                "cached %d, prefilled %d) | ratio %.1f%%\n",
                o.conv_tokens, cold_ttft, cold.done.usage.cached_tokens, warm_ttft, warm.done.usage.prompt_tokens,
                warm.done.usage.cached_tokens, warm.done.usage.prompt_tokens - warm.done.usage.cached_tokens,
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
            Waiter x;
            rt.submit(w, x.cb());
            x.wait();
        }
        double t0 = now_ms();
        for (auto& p : prompts) {
            ws.push_back(std::make_unique<Waiter>());
            rt.submit(greedy(p, o.gen), ws.back()->cb());
        }
        int total = 0;
        for (auto& w : ws) {
            w->wait();
            total += static_cast<int>(w->done.output.size());
        }
        return total / ((now_ms() - t0) / 1000.0);
    };
    const double one = run(1), many = run(o.batch);
    std::printf("batch: 1 sequence %.2f tok/s | %d sequences %.2f tok/s aggregate | %.2fx\n", one, o.batch, many, many / one);
}

void interactive(Runtime& rt, const BenchRuntimeOptions& o, std::mt19937& rng) {
    const int V = rt.model().config.n_vocab;
    GenerationRequest bg = greedy(random_tokens(o.bg_tokens, V, rng), 1);
    bg.priority = Priority::Background;
    Waiter bgw;
    const uint64_t bg_id = rt.submit(bg, bgw.cb());
    std::vector<double> ttft;
    const double end = now_ms() + o.window_s * 1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the background prefill get going
    while (now_ms() < end && !bgw.finished) {
        Waiter w;
        double t0 = now_ms();
        rt.submit(greedy(random_tokens(32, V, rng), 1), w.cb());
        w.wait();
        ttft.push_back(w.first_ms - t0);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    rt.cancel(bg_id);
    bgw.wait();
    std::printf("interactive: %zu requests (32-token prompts) during a %d-token background prefill (chunk %d) | TTFT p50 %.0f ms, "
                "p99 %.0f ms, max %.0f ms | background prefilled %d tokens before cancel\n",
                ttft.size(), o.bg_tokens, o.prefill_chunk, percentile(ttft, 50), percentile(ttft, 99), percentile(ttft, 100),
                bgw.done.timings.steps > 0 ? bgw.done.usage.prompt_tokens : 0);
}

void cancel(Runtime& rt, std::mt19937& rng) {
    const int V = rt.model().config.n_vocab;
    std::vector<double> lat;
    std::uniform_int_distribution<int> after(3, 12);
    for (int i = 0; i < 15; ++i) {
        Waiter w;
        std::atomic<uint64_t> id{0};
        std::atomic<double> cancel_at{0};
        const int k = after(rng);
        std::atomic<int> seen{0};
        auto cb = w.cb();
        id = rt.submit(greedy(random_tokens(16, V, rng), 1000), [&](const Event& e) {
            cb(e);
            if (!e.done && ++seen == k) {
                // Cancel from another thread, as a server's I/O thread would.
                std::thread([&] {
                    cancel_at = now_ms();
                    rt.cancel(id);
                }).detach();
            }
        });
        w.wait();
        while (cancel_at.load() == 0) std::this_thread::yield();
        lat.push_back(w.done_ms - cancel_at.load());
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
    c.kv_type = mo.kv_type == "f32" ? DType::F32 : DType::F16;
    c.prefill_chunk = o.prefill_chunk;
    c.max_running = std::max(16, o.batch);
    c.kv_memory_bytes = static_cast<int64_t>(KVCache::bytes_per_token(model->config.n_layers, model->config.kv_dim(), c.kv_type)) *
                        (c.ctx * 2 + 4096);
    std::printf("model %s | %d threads | ctx %d | KV %s | prefill chunk %d\n", model->config.name.c_str(), c.threads, c.ctx,
                mo.kv_type.c_str(), c.prefill_chunk);
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
    cmd->add_option("--prefill-chunk", o->prefill_chunk, "Prompt tokens per engine step");
    cmd->callback([o] { bench_runtime(*o); });
}

}  // namespace flint::cli
