// Speculative decoding is lossless: the same greedy output with any prediction, and the same distribution
// when sampling. Drafts that were rejected leave no trace in the KV.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "../runtime/runtime_test_util.h"
#include "spec/drafter.h"
#include "spec/verify.h"

using namespace flint;
using namespace flint::test;

namespace {

RuntimeConfig spec_config(bool speculative) {
    RuntimeConfig c;
    c.threads = 1;
    c.ctx = 512;
    c.kv_type = DType::F32;
    c.speculative = speculative;
    return c;
}

std::vector<int32_t> mutate(std::vector<int32_t> v, int every, int32_t with) {
    for (size_t i = every / 2; i < v.size(); i += every) v[i] = with;
    return v;
}

}  // namespace

TEST(Speculative, GreedyOutputIdenticalWithAnyPrediction) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime plain(l.model, l.tok, spec_config(false));
    Runtime spec(l.model, l.tok, spec_config(true));
    const std::vector<std::string> prompts = {"Once upon a time", "The little dog ran to the park and",
                                              "Lily wanted to play with her friend Tom. She said,", "One day"};
    for (const std::string& text : prompts) {
        SCOPED_TRACE(text);
        auto prompt = l.tok->encode(text, true, false);
        Event base = run_one(plain, greedy_request(prompt, 80));
        ASSERT_EQ(base.output.size(), 80u);
        const auto& out = base.output;
        std::vector<std::vector<int32_t>> predictions = {
            out,                                                   // perfect
            std::vector<int32_t>(out.begin(), out.begin() + 40),   // exact prefix
            mutate(out, 7, 300),                                   // partly wrong
            mutate(out, 2, 301),                                   // mostly wrong
            std::vector<int32_t>(50, 302),                         // wholly wrong
            {},                                                    // empty: prompt lookup
        };
        // Insertions and deletions: the output rejoins the prediction further on.
        auto with_insert = out;
        with_insert.insert(with_insert.begin() + 20, {303, 304, 305});
        predictions.push_back(with_insert);
        auto with_delete = out;
        with_delete.erase(with_delete.begin() + 30, with_delete.begin() + 36);
        predictions.push_back(with_delete);
        for (size_t k = 0; k < predictions.size(); ++k) {
            GenerationRequest r = greedy_request(prompt, 80);
            r.prediction = predictions[k];
            Event e = run_one(spec, r);
            EXPECT_EQ(e.output, out) << "prediction " << k;
            EXPECT_EQ(e.usage.accepted_prediction_tokens + e.usage.rejected_prediction_tokens,
                      static_cast<int>(predictions[k].size()))
                << "prediction " << k;
            if (k == 0) {
                EXPECT_EQ(e.usage.accepted_prediction_tokens, 80) << "a perfect prediction is accepted whole";
            }
            if (k == 4) {
                EXPECT_EQ(e.usage.accepted_prediction_tokens, 0);
            }
            EXPECT_LT(e.timings.steps, k == 0 ? 40 : 1000) << "a perfect prediction needs far fewer steps";
        }
    }
}

TEST(Speculative, RejectedDraftsLeaveTheKvAsIfTheyNeverHappened) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    const int V = l.model->config.n_vocab;
    auto prompt = l.tok->encode("Once upon a time, there was a cat.", true, false);
    const int n = static_cast<int>(prompt.size());
    KVConfig kc{l.model->config.n_layers, l.model->config.kv_dim(), 16, DType::F32, 8};
    auto logits_after = [&](bool with_drafts) {
        KVCache kv(kc);
        std::vector<int32_t> blocks;
        for (int i = 0; i < 8; ++i) blocks.push_back(kv.alloc());
        ForwardScratch s;
        std::vector<float> out(static_cast<size_t>(V) * 8);
        SeqBatch a{std::span<const int32_t>(prompt).first(n - 1), 0, blocks, Logits::None};
        forward(*l.model, {&a, 1}, kv, s, nullptr, out.data());
        if (with_drafts) {  // verify the last prompt token plus 5 wrong drafts, then roll back to n
            std::vector<int32_t> drafted = {prompt[n - 1], 400, 401, 402, 403, 404};
            SeqBatch d{drafted, n - 1, blocks, Logits::All};
            forward(*l.model, {&d, 1}, kv, s, nullptr, out.data());
        } else {
            SeqBatch d{std::span<const int32_t>(prompt).subspan(n - 1, 1), n - 1, blocks, Logits::Last};
            forward(*l.model, {&d, 1}, kv, s, nullptr, out.data());
        }
        // Continue with real tokens at position n: the rejected drafts' KV slots are overwritten.
        std::vector<int32_t> next = {300, 301, 302};
        SeqBatch c{next, n, blocks, Logits::All};
        forward(*l.model, {&c, 1}, kv, s, nullptr, out.data());
        out.resize(static_cast<size_t>(V) * 3);
        return out;
    };
    auto a = logits_after(false), b = logits_after(true);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(Speculative, FollowUpAfterRejectedDraftsMatchesColdRun) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime spec(l.model, l.tok, spec_config(true));
    auto prompt = l.tok->encode("Once upon a time", true, false);
    GenerationRequest r = greedy_request(prompt, 30);
    r.prediction = std::vector<int32_t>(40, 350);
    Event e = run_one(spec, r);
    auto p2 = prompt;
    p2.insert(p2.end(), e.output.begin(), e.output.end());
    Event warm = run_one(spec, greedy_request(p2, 20));
    EXPECT_GT(warm.usage.cached_tokens, 0);
    Runtime cold(l.model, l.tok, spec_config(false));
    EXPECT_EQ(warm.output, run_one(cold, greedy_request(p2, 20)).output);
}

// The runtime counts verified drafts by source, and RuntimeConfig::prompt_lookup (flint serve
// --no-prompt-lookup) turns the n-gram source off for every request while predictions still speculate.
TEST(Speculative, DraftCountersBySourceAndThePromptLookupSwitch) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    auto prompt = l.tok->encode("Once upon a time", true, false);
    const int n = 200;  // stories260K's greedy stories repeat phrases: lookup finds n-grams to draft from
    RuntimeConfig no_lookup_cfg = spec_config(true);
    no_lookup_cfg.prompt_lookup = false;
    Runtime with_lookup(l.model, l.tok, spec_config(true)), no_lookup(l.model, l.tok, no_lookup_cfg);

    Event base = run_one(with_lookup, greedy_request(prompt, n));
    ASSERT_EQ(base.output.size(), size_t(n));
    RuntimeStats a = with_lookup.stats();
    EXPECT_GT(a.drafted_lookup_total, 0u);
    EXPECT_GT(a.accepted_lookup_total, 0u);
    EXPECT_LE(a.accepted_lookup_total, a.drafted_lookup_total);
    EXPECT_EQ(a.drafted_prediction_total, 0u);
    EXPECT_LT(a.steps_total, uint64_t(n)) << "accepted lookup drafts save steps";

    Event plain = run_one(no_lookup, greedy_request(prompt, n));
    EXPECT_EQ(plain.output, base.output);
    RuntimeStats b = no_lookup.stats();
    EXPECT_EQ(b.drafted_lookup_total, 0u);
    EXPECT_EQ(b.drafted_prediction_total, 0u);
    EXPECT_EQ(b.steps_total, uint64_t(n)) << "one prefill step, then one per token after the first";

    // A prediction still drafts with lookup off; its accepted drafts are the usage's accepted tokens.
    GenerationRequest r = greedy_request(prompt, n);
    r.prediction = base.output;
    Event predicted = run_one(no_lookup, r);
    EXPECT_EQ(predicted.output, base.output);
    RuntimeStats c = no_lookup.stats();
    EXPECT_EQ(c.drafted_lookup_total, 0u);
    EXPECT_GE(c.drafted_prediction_total, c.accepted_prediction_total);
    // One step computes the prompt's last token (the rest is cached) and yields the first output token;
    // each later step yields its kept drafts plus the model's own next token.
    const uint64_t decode_steps = c.steps_total - b.steps_total - 1;
    EXPECT_LT(decode_steps, uint64_t(n) / 8);
    EXPECT_EQ(c.accepted_prediction_total, uint64_t(n - 1) - decode_steps);
    EXPECT_EQ(predicted.usage.accepted_prediction_tokens, n);
}

TEST(Speculative, VerifiesDraftsInTheSameBatchAsPlainDecodes) {
    // Continuous batching: a sequence verifying a block of drafts shares its steps with sequences that
    // decode one token a step, and every output is still the one each gets alone.
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    const std::vector<std::string> texts = {"The little dog ran to the park and", "Once upon a time",
                                            "Lily wanted to play with her friend Tom. She said,", "One day"};
    std::vector<std::vector<int32_t>> alone;
    {
        Runtime plain(l.model, l.tok, spec_config(false));
        for (const auto& t : texts) alone.push_back(run_one(plain, greedy_request(l.tok->encode(t, true, false), 80)).output);
    }
    RuntimeConfig c = spec_config(true);
    c.threads = 2;
    Runtime rt(l.model, l.tok, c);
    std::mutex mu;
    std::vector<std::vector<uint64_t>> steps;
    // The engine holds after each step until every request is queued: on a loaded machine (ctest -j2 beside
    // a build) the submitting thread lost its core once while the plain request ran all its 80 steps alone.
    std::atomic<bool> all_submitted{false};
    rt.on_step = [&](const std::vector<uint64_t>& ids) {
        {
            std::lock_guard lk(mu);
            steps.push_back(ids);
        }
        while (!all_submitted.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    };
    std::vector<GenerationRequest> reqs;
    for (const auto& t : texts) reqs.push_back(greedy_request(l.tok->encode(t, true, false), 80));
    reqs[0].prompt_lookup = false;           // plain: one token a step, 80 steps, submitted first
    reqs[1].prediction = alone[1];           // perfect prediction
    reqs[2].prediction = mutate(alone[2], 7, 300);  // partly wrong
    // reqs[3]: prompt lookup
    std::vector<std::unique_ptr<Waiter>> ws;
    std::vector<uint64_t> ids;
    for (auto& r : reqs) {
        ws.push_back(std::make_unique<Waiter>());
        ids.push_back(rt.submit(r, ws.back()->callback()));
    }
    all_submitted = true;
    std::vector<Event> done;
    for (size_t i = 0; i < reqs.size(); ++i) {
        done.push_back(ws[i]->wait());
        EXPECT_EQ(done[i].output, alone[i]) << texts[i];
    }
    EXPECT_GE(done[0].timings.steps, 80);
    EXPECT_LT(done[1].timings.steps, 20) << "the predicted sequence verified blocks of drafts";
    // Its prompt took one step and each later step of it verified drafts; at least one of those had the
    // plain sequence decoding beside it.
    int shared = 0;
    for (const auto& s : steps)
        shared += std::count(s.begin(), s.end(), ids[0]) && std::count(s.begin(), s.end(), ids[1]);
    EXPECT_GE(shared, 2) << "the drafts were never verified alongside a plain decode";
}

TEST(Speculative, CancelDuringAVerifyStepKeepsOnlyTheAcceptedTokensKv) {
    // A cancel that arrives while a block of drafts is being verified: the step's accepted tokens are still
    // delivered, the rejected drafts' KV is not kept, and a follow-up continuing from the partial answer
    // reuses exactly the accepted positions and gets the cold run's output.
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    auto prompt = l.tok->encode("Once upon a time", true, false);
    Runtime plain(l.model, l.tok, spec_config(false));
    const std::vector<int32_t> out = run_one(plain, greedy_request(prompt, 60)).output;
    Runtime rt(l.model, l.tok, spec_config(true));
    GenerationRequest r = greedy_request(prompt, 60);
    r.prediction = out;
    r.prediction[10] = 300;  // the first verify step accepts out[1..9], writes KV for the drafts after it
    Waiter w;
    std::atomic<uint64_t> id{0};
    int seen = 0;
    id = rt.submit(r, w.callback([&](const Event&) {
        if (++seen != 2) return;  // the first token of the first verify step
        while (id.load() == 0) std::this_thread::yield();
        rt.cancel(id);
    }));
    const Event done = w.wait();
    EXPECT_EQ(done.finish, FinishReason::Cancelled);
    ASSERT_EQ(done.output.size(), 11u) << "the verify step's tokens (9 accepted + the model's own) still arrive";
    EXPECT_TRUE(std::equal(done.output.begin(), done.output.end(), out.begin()));
    auto p2 = prompt;
    p2.insert(p2.end(), done.output.begin(), done.output.end());
    Event next = run_one(rt, greedy_request(p2, 10));
    EXPECT_EQ(next.usage.cached_tokens, static_cast<int>(p2.size()) - 1)
        << "the accepted positions are reused, nothing past them";
    EXPECT_EQ(next.output, std::vector<int32_t>(out.begin() + 11, out.begin() + 21));
    Runtime cold(l.model, l.tok, spec_config(false));
    EXPECT_EQ(next.output, run_one(cold, greedy_request(p2, 10)).output);
}

TEST(Speculative, SamplingAcceptanceRuleKeepsTheDistribution) {
    // Target p over 4 tokens; the draft is always token 1. The draft is accepted with probability p(1), and
    // the emitted tokens follow p, not the draft.
    const std::vector<float> p = {0.4f, 0.3f, 0.2f, 0.1f};
    std::vector<float> logits;
    for (float x : p) logits.push_back(std::log(x));
    Sampler s({.temperature = 1.0f, .seed = 7}, 4);
    std::map<int32_t, int> counts;
    int accepted = 0;
    const int n = 40000;
    for (int i = 0; i < n; ++i) {
        Verdict v = verify_position(s, logits.data(), {}, 1);
        counts[v.chosen.token]++;
        accepted += v.accepted;
        EXPECT_EQ(v.accepted, v.chosen.token == 1);
    }
    double chi2 = 0;
    for (int id = 0; id < 4; ++id) {
        double expected = p[id] * n;
        chi2 += (counts[id] - expected) * (counts[id] - expected) / expected;
    }
    EXPECT_LT(chi2, 16.27) << "chi-square, 3 degrees of freedom, p = 0.001";
    EXPECT_NEAR(accepted / double(n), 0.3, 0.015) << "accepted with probability p(draft)";
    // A draft the target never produces is never accepted.
    const std::vector<float> q = {std::log(0.5f), -INFINITY, std::log(0.5f), -INFINITY};
    for (int i = 0; i < 1000; ++i) EXPECT_FALSE(verify_position(s, q.data(), {}, 1).accepted);
}

TEST(Speculative, VerifyingConsumesTheRngLikePlainSampling) {
    // Same seed, same logits: the verified tokens are the plain sampler's tokens, whatever the drafts.
    const std::vector<float> logits = {0.1f, 1.2f, -0.3f, 0.8f, 0.0f, 2.0f};
    Sampler plain({.temperature = 0.9f, .seed = 3}, 6), spec({.temperature = 0.9f, .seed = 3}, 6);
    for (int i = 0; i < 500; ++i) {
        const int32_t draft = (i % 3 == 0) ? -1 : i % 6;
        EXPECT_EQ(plain.sample(logits.data(), {}).token, verify_position(spec, logits.data(), {}, draft).chosen.token) << i;
    }
}

TEST(Speculative, PreparedRowsDrawWhatSampleDraws) {
    // A verify step's rows prepared apart (on any thread) and drawn in order: the same tokens and
    // log-probabilities as sample() on the same seed, greedy and untruncated, with min_p too; several
    // kFlatBlock blocks, so the draw's walk over the block sums is exercised.
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0, 2);
    constexpr int V = 5000;
    std::vector<float> rows(size_t(V) * 8);
    for (float& x : rows) x = nd(rng);
    for (SamplingParams p : {SamplingParams{.temperature = 0.0f, .top_logprobs = 2}, SamplingParams{.temperature = 0.7f, .seed = 4, .top_logprobs = 2},
                             SamplingParams{.temperature = 1.3f, .min_p = 0.05f, .seed = 8, .logprobs = true}}) {
        Sampler plain(p, V), spec(p, V);
        ASSERT_TRUE(spec.preparable({}));
        std::vector<Sampler::Prepared> prepared(8);
        for (int round = 0; round < 40; ++round) {
            for (int j = 7; j >= 0; --j) spec.prepare(&rows[size_t(j) * V], prepared[size_t(j)]);  // any order
            for (int j = 0; j < 8; ++j) {
                const Sampled a = plain.sample(&rows[size_t(j) * V], {});
                const Verdict v = verify_position(spec, prepared[size_t(j)], a.token);
                EXPECT_TRUE(v.accepted);
                EXPECT_EQ(v.chosen.token, a.token) << "T " << p.temperature << " round " << round << " row " << j;
                EXPECT_EQ(v.chosen.logprob, a.logprob);
                ASSERT_EQ(v.chosen.top.size(), a.top.size());
            }
        }
    }
    // Penalties make a row depend on the drafts accepted before it: not preparable.
    Sampler pen({.temperature = 0.7f, .presence_penalty = 0.5f}, V);
    const std::vector<int32_t> history = {1, 2};
    EXPECT_FALSE(pen.preparable(history));
    Sampler top_p({.temperature = 0.7f, .top_p = 0.9f}, V);
    EXPECT_FALSE(top_p.preparable({}));
}

TEST(Speculative, SampledOutputIdenticalWithAnyPrediction) {
    // Sampling is lossless too, and with the same seed token for token the same as plain decoding: with
    // top_p (rows sampled one by one), untruncated on two threads (rows prepared on both) and with a
    // penalty (one by one again).
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime plain(l.model, l.tok, spec_config(false));
    RuntimeConfig two = spec_config(true);
    two.threads = 2;
    Runtime spec1(l.model, l.tok, spec_config(true)), spec2(l.model, l.tok, two);
    const SamplingParams variants[] = {{.temperature = 0.8f, .top_p = 0.95f}, {.temperature = 0.8f},
                                       {.temperature = 0.8f, .presence_penalty = 0.3f}};
    const uint64_t seeds[] = {5u, 11u, 23u};
    for (int i = 0; i < 3; ++i) {
        const uint64_t seed = seeds[i];
        const SamplingParams& base_params = variants[i];
        Runtime& spec = i == 0 ? spec1 : spec2;
        auto prompt = l.tok->encode("Once upon a time", true, false);
        GenerationRequest r = greedy_request(prompt, 80);
        r.sampling = base_params;
        r.sampling.seed = seed;
        Event base = run_one(plain, r);
        const auto& out = base.output;
        auto with_delete = out;
        with_delete.erase(with_delete.begin() + 30, with_delete.begin() + 34);
        for (const auto& prediction : {out, mutate(out, 9, 300), with_delete, std::vector<int32_t>{}}) {
            r.prediction = prediction;
            r.prompt_lookup = true;
            Event e = run_one(spec, r);
            EXPECT_EQ(e.output, out) << "seed " << seed << ", prediction of " << prediction.size();
        }
        r.prediction = out;
        EXPECT_EQ(run_one(spec, r).usage.accepted_prediction_tokens, 80) << "its own sample is accepted whole";
    }
}

TEST(Speculative, SampledOutputIsReproducibleAndValid) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime spec(l.model, l.tok, spec_config(true));
    auto prompt = l.tok->encode("Once upon a time", true, false);
    GenerationRequest r = greedy_request(prompt, 40);
    r.sampling = {.temperature = 0.8f, .seed = 11};
    Event base = run_one(spec, r);
    r.prediction = base.output;
    Event again = run_one(spec, r);
    EXPECT_EQ(again.output.size(), 40u);
    EXPECT_GT(again.usage.accepted_prediction_tokens, 0) << "most of a likely continuation should be accepted";
}

TEST(Drafter, PredictionCursorResynchronisesAfterAnEdit) {
    PredictionDrafter d({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2);
    std::vector<int32_t> out, drafts;
    d.propose(out, 3, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{1, 2, 3}));
    out = {1, 2, 3, 99, 98};  // an inserted edit, two tokens long: probing where the prediction would resume
    drafts.clear();
    d.propose(out, 3, drafts);
    EXPECT_TRUE(d.probing());
    out.insert(out.end(), {5, 6});  // rejoins the prediction at 5, 6 (4 deleted): a strong match
    drafts.clear();
    d.propose(out, 3, drafts);
    EXPECT_FALSE(d.probing());
    EXPECT_EQ(drafts, (std::vector<int32_t>{7, 8, 9}));
}

namespace {
std::vector<int32_t> iota_tokens(int n, int first = 1) {
    std::vector<int32_t> v(n);
    for (int i = 0; i < n; ++i) v[i] = first + i;
    return v;
}
}  // namespace

TEST(Drafter, ProbesTheExpectedPositionInsideASubstitutedSpan) {
    PredictionDrafter d(iota_tokens(20), 3, 4);  // prediction 1..20
    std::vector<int32_t> out, drafts;
    d.propose(out, 8, drafts);
    out = {1, 2, 3, 4, 5, 90};  // 6 was replaced by 90: five drafts accepted, then a miss
    drafts.clear();
    d.propose(out, 8, drafts);
    EXPECT_TRUE(d.probing());
    EXPECT_EQ(drafts, (std::vector<int32_t>{7, 8, 9, 10})) << "a substituted token: the prediction resumes in step";
    out.insert(out.end(), {91, 92, 93});  // 7, 8, 9 replaced as well
    drafts.clear();
    d.propose(out, 8, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{10, 11, 12, 13})) << "the probe straddles the end of the span";
    out.insert(out.end(), {10, 11, 12, 13, 14});  // the probe was accepted, plus the model's token
    drafts.clear();
    d.propose(out, 8, drafts);
    EXPECT_FALSE(d.probing());
    EXPECT_EQ(drafts, iota_tokens(6, 15)) << "in step again: full length to the prediction's end";
    EXPECT_EQ(d.stats().resyncs, 1);
}

TEST(Drafter, SkipsTokensTheOutputDeletedUsingTheModelsOwnToken) {
    PredictionDrafter d(iota_tokens(20), 3, 4);
    std::vector<int32_t> out = {1, 2, 3, 4, 5, 9}, drafts;  // 6, 7, 8 are not in the output
    d.propose(out, 8, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{10, 11, 12, 13}));
}

TEST(Drafter, RejoinsAfterTokensTheOutputInserted) {
    PredictionDrafter d(iota_tokens(20), 3, 4);
    std::vector<int32_t> out = {1, 2, 3, 4, 5, 70, 71}, drafts;
    d.propose(out, 8, drafts);
    EXPECT_TRUE(d.probing());
    out.push_back(6);  // the output comes back to the prediction at 6
    drafts.clear();
    d.propose(out, 8, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{7, 8, 9, 10}));
}

TEST(Drafter, NoProbesForAPredictionTheOutputNeverFollowed) {
    PredictionDrafter d(iota_tokens(20, 100), 3, 4);
    std::vector<int32_t> out, drafts;
    d.propose(out, 8, drafts);  // the start is assumed in step
    for (int32_t t : {1, 2, 3, 4, 5}) {
        out.push_back(t);
        drafts.clear();
        d.propose(out, 8, drafts);
        EXPECT_TRUE(drafts.empty());
    }
    // And none long after the output last followed it.
    PredictionDrafter e(iota_tokens(40), 3, 4);
    out = iota_tokens(5);
    for (int i = 0; i < 30; ++i) out.push_back(500 + i);
    drafts.clear();
    e.propose(out, 8, drafts);
    EXPECT_TRUE(drafts.empty());
}

namespace {
// The engine's loop on known output: propose, accept the agreeing prefix plus one token, feed the length
// controller as the runtime does. Returns the steps taken.
int simulate(const std::vector<int32_t>& truth, const std::vector<int32_t>& prediction) {
    PredictionDrafter d(prediction);
    AdaptiveLength len(16, 16);
    std::vector<int32_t> out, drafts;
    int steps = 0;
    while (out.size() < truth.size()) {
        drafts.clear();
        d.propose(out, std::min<int>(len.next(), static_cast<int>(truth.size() - out.size()) - 1), drafts);
        size_t a = 0;
        while (a < drafts.size() && drafts[a] == truth[out.size() + a]) ++a;
        out.insert(out.end(), truth.begin() + out.size(), truth.begin() + out.size() + a + 1);
        if (!drafts.empty() && !d.probing()) len.update(static_cast<int>(drafts.size()), static_cast<int>(a));
        ++steps;
    }
    EXPECT_EQ(out, truth);
    return steps;
}
}  // namespace

TEST(Drafter, EditedPredictionsCostFewStepsBeyondThePerfectOne) {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> tok(0, 5000);
    std::vector<int32_t> truth(340);
    for (int32_t& t : truth) t = tok(rng);
    const int perfect = simulate(truth, truth);
    EXPECT_EQ(perfect, 20);  // 340 / (16 + 1)
    auto sub = truth, ins = truth, del = truth;
    for (int at : {60, 150, 250}) {
        for (int i = 0; i < 4; ++i) sub[at + i] = 9000 + i;
    }
    for (int at : {250, 150, 60}) {
        ins.insert(ins.begin() + at, {9100, 9101, 9102, 9103});
        del.erase(del.begin() + at, del.begin() + at + 4);
    }
    // Each edited span costs its miss and, inside a substitution or insertion, a probe per token.
    EXPECT_LE(simulate(truth, sub), perfect + 3 * 5);
    EXPECT_LE(simulate(truth, ins), perfect + 3 * 2);
    EXPECT_LE(simulate(truth, del), perfect + 3 * 5);
    // Repetitive text: the same short phrase again and again, one span substituted.
    std::vector<int32_t> rep;
    for (int i = 0; i < 60; ++i) rep.insert(rep.end(), {11, 12, 13, 14, 15});
    auto rep_sub = rep;
    for (int i = 0; i < 4; ++i) rep_sub[120 + i] = 9200 + i;
    EXPECT_LE(simulate(rep, rep_sub), simulate(rep, rep) + 5);
}

TEST(Drafter, PromptLookupContinuesTheLatestMatchingNgram) {
    LookupDrafter d(3, 2);
    std::vector<int32_t> h = {5, 6, 7, 8, 1, 2, 5, 6, 7, 9, 5, 6, 7}, drafts;
    d.propose(h, 2, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{9, 5})) << "the most recent earlier 5 6 7 was followed by 9";
    drafts.clear();
    d.propose(std::vector<int32_t>{1, 2, 3}, 2, drafts);
    EXPECT_TRUE(drafts.empty());
}

TEST(Drafter, PromptLookupContinuesALoopPastThePresent) {
    // The latest earlier "7 8" is just one period back: what followed it runs into the present, and the
    // drafts continue the loop instead of stopping after one period.
    LookupDrafter d(3, 2);
    std::vector<int32_t> h = {1, 2, 7, 8, 7, 8, 7, 8}, drafts;
    d.propose(h, 5, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{7, 8, 7, 8, 7}));
    drafts.clear();
    LookupDrafter e(3, 2);
    e.propose(std::vector<int32_t>{4, 9, 9, 9}, 4, drafts);  // a one-token loop
    EXPECT_EQ(drafts, (std::vector<int32_t>{9, 9, 9, 9}));
}

TEST(Drafter, AdaptiveLengthKeepsItsLengthAfterAnIsolatedMissAndShrinksOnRepeatedOnes) {
    AdaptiveLength a(4, 16);  // no step timings: the prior cost model (a draft costs 0.1 of a step)
    a.update(4, 4);
    EXPECT_GE(a.next(), 8) << "full acceptance at least doubles";
    a.update(a.next(), a.next());
    a.update(a.next(), a.next());
    EXPECT_EQ(a.next(), 16);
    a.update(16, 2);
    EXPECT_GE(a.next(), 12) << "one miss after a long agreeing run";
    int k = a.next();
    for (int i = 0; i < 15; ++i) {
        a.update(a.next(), 0);
        EXPECT_LE(a.next(), k) << i;
        k = a.next();
    }
    EXPECT_EQ(a.next(), 1) << "a prediction that keeps missing costs single-token steps";
    a.update(1, 1);
    EXPECT_EQ(a.next(), 2);
    AdaptiveLength lookup(4, 16);
    lookup.update(4, 0);
    EXPECT_LT(lookup.next(), 4) << "a first miss from a short start shrinks";
}

TEST(Drafter, AdaptiveLengthWeighsTheMeasuredCostOfVerifying) {
    // The same acceptance history (19 of 20 drafts agree in the long run), two machines.
    auto run = [](double ms_one, double ms_per_extra) {
        AdaptiveLength a(16, 16);
        for (int i = 0; i < 30; ++i) {
            a.observe_step(1, ms_one);
            a.observe_step(17, ms_one + 16 * ms_per_extra);
        }
        for (int i = 0; i < 10; ++i) a.update(16, 16);
        a.update(16, 7);
        return std::pair(a.next(), a.relative_token_cost());
    };
    auto [k_cheap, beta_cheap] = run(10.0, 0.05);  // weight streaming: more tokens are nearly free
    auto [k_dear, beta_dear] = run(1.0, 0.9);      // a tiny compute-bound model: each token costs ~ a step
    EXPECT_NEAR(beta_cheap, 0.005, 0.001);
    EXPECT_NEAR(beta_dear, 0.9, 0.01);
    EXPECT_EQ(k_cheap, 16);
    EXPECT_LE(k_dear, 4);
    EXPECT_GE(k_dear, 1);
    // Where drafts rarely agree and each costs most of a step, none are proposed, but one is tried now
    // and then.
    AdaptiveLength a(16, 16);
    for (int i = 0; i < 30; ++i) {
        a.observe_step(1, 1.0);
        a.observe_step(5, 4.6);
    }
    for (int i = 0; i < 6; ++i) a.update(4, 1);
    EXPECT_EQ(a.next(), 0);
    int tried = 0;
    for (int i = 0; i < 32; ++i) {
        a.observe_step(1, 1.0);
        tried += a.next();
    }
    EXPECT_EQ(tried, 4) << "one exploring draft every 8 steps";
    AdaptiveLength unseen(16, 16);
    EXPECT_DOUBLE_EQ(unseen.relative_token_cost(), 0.1) << "a prior until steps of several sizes were timed";
}

// What the runtime does per step (runtime.cpp propose_drafts): the prediction's drafts, or the output's own
// history once the output has outrun the prediction. Greedy verification against a known output; returns
// the number of engine steps.
namespace {
int steps_to_write(const std::vector<int32_t>& truth, const std::vector<int32_t>& pred, bool fallback, int k = 16) {
    PredictionDrafter d(pred);
    LookupDrafter lookup;
    std::vector<int32_t> out, drafts;
    int steps = 0;
    while (out.size() < truth.size()) {
        drafts.clear();
        d.update(out);
        if (fallback && d.behind()) {
            d.skip(out);
            lookup.propose(out, k, drafts);
        } else {
            d.propose(out, k, drafts);
        }
        size_t acc = 0;
        while (acc < drafts.size() && out.size() + acc < truth.size() && drafts[acc] == truth[out.size() + acc]) ++acc;
        out.assign(truth.begin(), truth.begin() + static_cast<std::ptrdiff_t>(std::min(truth.size(), out.size() + acc + 1)));
        ++steps;
    }
    return steps;
}
}  // namespace

TEST(Drafter, OutputThatOutrunsThePredictionDraftsFromItsOwnHistory) {
    // The shape of bench edit's 95% row on the random-weight 0.5B model: a few distinct tokens, then one token
    // repeated, and a prediction with 4-token substitutions. On such text every re-synchronisation after an
    // edit lands a few positions ahead (the nearest copy of the output's tail past what was matched), so the
    // output reaches the prediction's end early and the prediction has nothing left for the last tokens:
    // the drafter kept proposing the same rejected tail (20 of 36 steps). From there the output's own history
    // drafts them.
    std::vector<int32_t> truth = {1, 2, 3, 4};
    truth.resize(256, 9);
    std::vector<int32_t> pred = truth;
    for (int at : {19, 137, 250})
        for (int i = 0; i < 4; ++i) pred[at + i] = 50 + at + i;
    pred[107] = 49;
    const int without = steps_to_write(truth, pred, false), with = steps_to_write(truth, pred, true);
    std::printf("periodic output, 95%% prediction: %d steps drafting from the prediction alone, %d with the fallback\n",
                without, with);
    EXPECT_GT(without, 30) << "the stall this guards against (if it no longer happens, the test needs a new case)";
    EXPECT_LE(with, 26);
    // Ordinary text is left to the prediction: no fallback mid-prediction, the same steps either way.
    std::vector<int32_t> text = iota_tokens(200), edited = text;
    for (int i = 0; i < 4; ++i) edited[60 + i] = 500 + i;
    EXPECT_EQ(steps_to_write(text, edited, false), steps_to_write(text, edited, true));
}
