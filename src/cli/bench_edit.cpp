// `flint bench edit` — speculative edits, measured. The model must really copy, so the target is what the
// model itself writes greedily for the prompt (generated once without speculation); the prediction is that
// target with a chosen fraction of its tokens edited. Reports effective output tok/s against plain decoding
// at each prediction accuracy (each repetition against a plain run just before it; medians of the per-pair
// ratios), and checks the output is unchanged (lossless).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "gguf/gguf.h"
#include "runtime/runtime.h"
#include "runtime/waiter.h"
#include "spec/drafter.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct BenchEditOptions {
    ModelOptions model;
    std::string file;
    int prompt_tokens = 0;   // cap on the file's tokens in the prompt (0: all)
    int target_tokens = 400;
    std::vector<int> accuracies = {100, 95, 80, 50, 0};
    int reps = 1;
    std::string edit = "substitute";  // how the prediction departs from the target
    float temperature = 0;            // 0: greedy target; else a target sampled with `seed`
    uint64_t seed = 1;
    bool trace = false;
    int max_draft = 16;
};

// Decode-phase time: from the end of prefill to the last token.
double decode_ms(const Event& e) { return e.timings.total_ms - e.timings.queued_ms - e.timings.prefill_ms; }

// Decode-phase throughput: generated tokens over the decode-phase time.
double decode_tps(const Event& e) {
    const double ms = decode_ms(e);
    return ms > 0 ? e.output.size() / (ms / 1000.0) : 0;
}

// The prediction: the target with (100 - accuracy)% of its length edited in spans of 4 tokens (a word or
// two): "substitute" replaces target tokens with random ones, "insert" adds random tokens the output must
// skip, "delete" removes target tokens the output must produce unpredicted. 0% replaces everything.
std::vector<int32_t> edited(const std::vector<int32_t>& target, int accuracy, const std::string& kind, int vocab,
                            std::mt19937& rng) {
    if (accuracy >= 100) return target;
    std::uniform_int_distribution<int32_t> tok(std::min(100, vocab / 2), std::min(vocab, 100000) - 1);
    std::vector<int32_t> p = target;
    if (accuracy <= 0) {
        for (int32_t& t : p) t = tok(rng);
        return p;
    }
    const size_t want = static_cast<size_t>(target.size() * (100 - accuracy) / 100.0 + 0.5);
    if (kind != "substitute") {
        // Edit positions: distinct span starts (multiples of 4 apart), applied back to front so earlier
        // positions stay valid.
        std::vector<size_t> starts;
        for (size_t i = 0; i + 4 <= target.size(); i += 4) starts.push_back(i);
        std::shuffle(starts.begin(), starts.end(), rng);
        starts.resize(std::min(starts.size(), (want + 3) / 4));
        std::sort(starts.rbegin(), starts.rend());
        size_t left = want;
        for (size_t s : starts) {
            const size_t n = std::min<size_t>(4, left);
            left -= n;
            if (kind == "insert") {
                std::vector<int32_t> extra(n);
                for (int32_t& t : extra) t = tok(rng);
                p.insert(p.begin() + static_cast<std::ptrdiff_t>(s), extra.begin(), extra.end());
            } else {
                p.erase(p.begin() + static_cast<std::ptrdiff_t>(s), p.begin() + static_cast<std::ptrdiff_t>(s + n));
            }
        }
        return p;
    }
    std::vector<bool> changed(p.size(), false);
    size_t n = 0;
    std::uniform_int_distribution<size_t> pos(0, p.size() - 1);
    while (n < want) {
        size_t s = pos(rng);
        for (size_t i = s; i < std::min(p.size(), s + 4) && n < want; ++i)
            if (!changed[i]) {
                int32_t t;
                do t = tok(rng); while (t == p[i]);
                p[i] = t;
                changed[i] = true;
                ++n;
            }
    }
    return p;
}

void bench_edit(const BenchEditOptions& o) {
    auto model = Model::load(o.model.model.empty() ? default_model_path() : o.model.model);
    auto tok = Tokenizer::from_gguf(*model->file);
    std::string file_text;
    if (!o.file.empty()) {
        std::ifstream in(o.file, std::ios::binary);
        if (!in) fail(o.file, ": cannot read");
        std::stringstream ss;
        ss << in.rdbuf();
        file_text = ss.str();
    } else {
        file_text = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
    }
    std::vector<int32_t> file_tokens = tok->encode(file_text, false, false);
    if (o.prompt_tokens > 0 && static_cast<int>(file_tokens.size()) > o.prompt_tokens) file_tokens.resize(o.prompt_tokens);
    std::vector<int32_t> prompt;
    ChatFormat fmt = detect_chat_format(tok->chat_template());
    if (fmt != ChatFormat::Unknown) {
        std::vector<ChatMessage> msgs = {
            {"system", "You are a coding assistant. Reply with the whole file, edited."},
            {"user", "Rename the variable `n` to `count` in this file:\n```\n" + tok->decode(file_tokens) + "\n```"}};
        prompt = tok->encode(render_chat(fmt, msgs, true), tok->add_bos());
    } else {
        if (tok->add_bos()) prompt.push_back(tok->bos());
        prompt.insert(prompt.end(), file_tokens.begin(), file_tokens.end());
    }
    if (o.trace) set_draft_trace(stderr);
    RuntimeConfig c;
    c.threads = resolve_threads(o.model.threads);
    c.ctx = std::max<int>(o.model.ctx, static_cast<int>(prompt.size()) + o.target_tokens + 64);
    c.kv_type = *dtype_from_name(o.model.kv_type);
    c.max_draft = o.max_draft;
    // Engine steps after the prefill (whose chunks are the steps for the prompt tokens not in the cache).
    auto decode_steps = [&](const Event& e) {
        const int fresh = e.usage.prompt_tokens - e.usage.cached_tokens;
        return e.timings.steps - (fresh + c.prefill_chunk - 1) / c.prefill_chunk;
    };
    RuntimeConfig plain_cfg = c;
    plain_cfg.speculative = false;
    Runtime plain(model, tok, plain_cfg);
    Runtime spec(model, tok, c);

    GenerationRequest r;
    r.prompt = prompt;
    r.sampling.temperature = o.temperature;
    r.sampling.seed = o.seed;
    r.max_tokens = o.target_tokens;
    r.ignore_eos = true;
    r.prompt_lookup = false;
    // The target: what the model writes greedily (or samples with the seed; the speculative rows sample
    // with the same seed and must reproduce it token for token, see spec/verify.h). Run twice and keep the second timing (warm caches).
    Event base = run_to_completion(plain, r);
    std::vector<double> plain_tps, plain_ms;
    for (int i = 0; i < std::max(1, o.reps); ++i) {
        Event e = run_to_completion(plain, r);
        plain_tps.push_back(decode_tps(e));
        // One step per token after the first, which comes with the prefill.
        if (decode_steps(e) != static_cast<int>(e.output.size()) - 1) fail("bench edit: unexpected plain step count");
        plain_ms.push_back(decode_ms(e) / std::max(1, decode_steps(e)));
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    const double plain_med = median(plain_tps);
    std::printf("plain decoding: %.1f ms per step\n", median(plain_ms));
    const std::vector<int32_t>& target = base.output;
    std::vector<int32_t> distinct = target;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    std::printf("model %s | %d threads | prompt %zu tokens | target %zu tokens (%zu distinct, %s) | edits: %s | plain decoding %.1f tok/s\n",
                model->config.name.c_str(), c.threads, prompt.size(), target.size(), distinct.size(),
                o.temperature > 0 ? ("sampled, T " + std::to_string(o.temperature) + " seed " + std::to_string(o.seed)).c_str()
                                  : "greedy",
                o.edit.c_str(), plain_med);
    std::printf("| prediction accuracy | accepted / prediction | decode steps | ms per step | effective tok/s | plain ms per step | vs plain | output identical |\n"
                "|---|---|---|---|---|---|---|---|\n");
    std::mt19937 rng(7);
    auto row = [&](const std::string& label, const std::vector<int32_t>& prediction, bool lookup) {
        GenerationRequest s = r;
        s.prediction = prediction;
        s.prompt_lookup = lookup;
        std::vector<double> tps, ms, pms, ratio;
        Event e;
        bool identical = true;
        for (int i = 0; i < std::max(1, o.reps); ++i) {
            // Each repetition pairs the speculative run with a plain one just before it, and the ratio is
            // taken within the pair: this machine's memory bandwidth changes by ~1.7x from one minute to the
            // next, which moved ratios against a plain figure measured once by 20-30%.
            const Event p = run_to_completion(plain, r);
            pms.push_back(decode_ms(p) / std::max(1, decode_steps(p)));
            e = run_to_completion(spec, s);
            tps.push_back(decode_tps(e));
            ratio.push_back(decode_tps(e) / decode_tps(p));
            identical = identical && e.output == target;
            const int steps = decode_steps(e);
            // The first token comes with the prefill; each later step produces at least one.
            ms.push_back(decode_ms(e) / std::max(1, steps));
        }
        std::printf("| %s | %d / %zu | %d | %.2f | %.1f | %.2f | %.2fx | %s |\n", label.c_str(), e.usage.accepted_prediction_tokens,
                    prediction.size(), decode_steps(e), median(ms), median(tps), median(pms), median(ratio),
                    identical ? "yes" : "NO");
        std::fflush(stdout);
    };
    for (int a : o.accuracies) {
        if (o.trace) std::fprintf(stderr, "[spec] ---- %d%% ----\n", a);
        row(std::to_string(a) + "%", edited(target, a, o.edit, model->config.n_vocab, rng), true);
    }
    row("none (prompt lookup)", {}, true);
}

}  // namespace

void register_bench_edit(CLI::App& bench) {
    auto o = std::make_shared<BenchEditOptions>();
    CLI::App* cmd = bench.add_subcommand("edit", "Speculative edits: effective tok/s vs plain decoding at several prediction accuracies");
    add_model_options(*cmd, o->model);
    cmd->add_option("--file", o->file, "Source file the edit starts from (default: a short story, for story models)");
    cmd->add_option("--prompt-tokens", o->prompt_tokens, "Keep at most this many of the file's tokens in the prompt");
    cmd->add_option("--target-tokens", o->target_tokens, "Tokens of output to generate");
    cmd->add_option("--accuracies", o->accuracies, "Prediction accuracies to test, in percent");
    cmd->add_option("-r,--reps", o->reps, "Repetitions per row (median reported)");
    cmd->add_option("--edit", o->edit, "How the prediction departs from the target: substitute, insert or delete (spans of 4)")
        ->check(CLI::IsMember({"substitute", "insert", "delete"}));
    cmd->add_option("--temperature", o->temperature, "Sample the target at this temperature (0: greedy)")->check(CLI::Range(0.0, 10.0));
    cmd->add_option("--seed", o->seed, "Seed of the sampled target (the speculative rows use the same)");
    cmd->add_option("--max-draft", o->max_draft, "Most drafts verified in one step")->check(CLI::Range(1, 64));
    cmd->add_flag("--trace", o->trace, "Log every engine step's drafts, acceptance and cursor state to stderr");
    cmd->callback([o] { bench_edit(*o); });
}

}  // namespace flint::cli
