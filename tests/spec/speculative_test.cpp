// Speculative decoding is lossless: the same greedy output with any prediction, and the same distribution
// when sampling. Drafts that were rejected leave no trace in the KV.
#include <cmath>
#include <cstring>
#include <map>

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

TEST(Speculative, SamplingAcceptanceRuleKeepsTheDistribution) {
    // Target p over 4 tokens; the draft is always token 1. The picks must follow p, not the draft.
    const std::vector<TokenProb> p = {{0, 0.4f}, {1, 0.3f}, {2, 0.2f}, {3, 0.1f}};
    Sampler s({.seed = 7}, 4);
    std::map<int32_t, int> counts;
    const int n = 40000;
    for (int i = 0; i < n; ++i) counts[pick_with_draft(s, p, 1)]++;
    double chi2 = 0;
    for (const TokenProb& tp : p) {
        double expected = tp.p * n;
        chi2 += (counts[tp.id] - expected) * (counts[tp.id] - expected) / expected;
    }
    EXPECT_LT(chi2, 16.27) << "chi-square, 3 degrees of freedom, p = 0.001";
    // A draft the target never produces is never accepted.
    counts.clear();
    const std::vector<TokenProb> q = {{0, 0.5f}, {2, 0.5f}};
    for (int i = 0; i < 1000; ++i) counts[pick_with_draft(s, q, 1)]++;
    EXPECT_EQ(counts[1], 0);
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
    out = {1, 2, 3, 99, 98};  // an inserted edit: lost
    drafts.clear();
    d.propose(out, 3, drafts);
    EXPECT_TRUE(drafts.empty());
    out.insert(out.end(), {5, 6});  // rejoins the prediction at 5, 6
    drafts.clear();
    d.propose(out, 3, drafts);
    EXPECT_EQ(drafts, (std::vector<int32_t>{7, 8, 9}));
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

TEST(Drafter, AdaptiveLengthGrowsOnSuccessAndShrinksOnMisses) {
    AdaptiveLength a(4, 16);
    a.update(4, 4);
    EXPECT_EQ(a.next(), 8);
    a.update(8, 8);
    a.update(16, 16);
    EXPECT_EQ(a.next(), 16);
    a.update(16, 2);
    EXPECT_EQ(a.next(), 3);
    a.update(3, 0);
    EXPECT_EQ(a.next(), 1);
}
