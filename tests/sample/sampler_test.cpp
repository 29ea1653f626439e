#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "sample/sampler.h"
#include "util/error.h"

using namespace flint;

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
    std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f};
    Sampler s({.temperature = 0.0f}, 4);
    EXPECT_EQ(s.sample(logits.data(), {}).token, 1);
}

// logit_bias is added before anything else decides: a banned (-inf) argmax gives way to the next token,
// a large bias makes a token win, and sampling never draws a banned token; the reported logprobs are the
// biased distribution's.
TEST(Sampler, LogitBiasBansAndFavoursTokens) {
    std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f};
    const float ban = -std::numeric_limits<float>::infinity();
    Sampler banned({.temperature = 0.0f, .logit_bias = {{1, ban}}, .logprobs = true}, 4);
    const Sampled b = banned.sample(logits.data(), {});
    EXPECT_EQ(b.token, 3);
    EXPECT_GT(b.logprob, std::log(0.5f)) << "token 1 no longer takes probability";
    Sampler favoured({.temperature = 0.0f, .logit_bias = {{2, 10.0f}}}, 4);
    EXPECT_EQ(favoured.sample(logits.data(), {}).token, 2);
    Sampler sampled({.temperature = 1.0f, .logit_bias = {{1, ban}, {3, ban}}, .seed = 7}, 4);
    for (int i = 0; i < 200; ++i) {
        const int32_t t = sampled.sample(logits.data(), {}).token;
        EXPECT_NE(t, 1);
        EXPECT_NE(t, 3);
    }
    EXPECT_FALSE(sampled.preparable({})) << "a biased row is copied, never read in place";
    EXPECT_FLOAT_EQ(logits[1], 2.0f) << "the caller's row is untouched";
}

TEST(Sampler, RepetitionPenaltyFollowsLlamaCppSemantics) {
    std::vector<float> logits = {2.0f, -2.0f, 1.0f};
    std::vector<int32_t> hist = {0, 1, 1};
    std::vector<int32_t> counts;
    SamplingParams p{.repeat_penalty = 2.0f};
    apply_penalties(logits.data(), 3, hist, p, counts);
    EXPECT_FLOAT_EQ(logits[0], 1.0f);   // positive: divided
    EXPECT_FLOAT_EQ(logits[1], -4.0f);  // negative: multiplied
    EXPECT_FLOAT_EQ(logits[2], 1.0f);   // not in history
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
    std::vector<float> logits = {0.0f, 0.0f, 0.0f};
    std::vector<int32_t> hist = {0, 1, 1, 1};
    std::vector<int32_t> counts;
    SamplingParams p{.presence_penalty = 0.5f, .frequency_penalty = 0.25f};
    apply_penalties(logits.data(), 3, hist, p, counts);
    EXPECT_FLOAT_EQ(logits[0], -0.75f);
    EXPECT_FLOAT_EQ(logits[1], -1.25f);
    EXPECT_FLOAT_EQ(logits[2], 0.0f);
}

TEST(Sampler, PenaltyWindowOnlyCoversRecentTokens) {
    std::vector<float> logits = {1.0f, 1.0f};
    std::vector<int32_t> hist = {0, 1, 1};
    std::vector<int32_t> counts;
    SamplingParams p{.repeat_penalty = 2.0f, .penalty_last_n = 2};
    apply_penalties(logits.data(), 2, hist, p, counts);
    EXPECT_FLOAT_EQ(logits[0], 1.0f);
    EXPECT_FLOAT_EQ(logits[1], 0.5f);
}

TEST(Sampler, TopKTopPMinPTruncate) {
    // Probabilities at temperature 1: softmax of log(p) = p.
    std::vector<float> p = {0.5f, 0.25f, 0.15f, 0.07f, 0.03f};
    std::vector<float> logits;
    for (float x : p) logits.push_back(std::log(x));
    std::vector<TokenProb> d;
    Sampler(SamplingParams{.top_k = 2}, 5).distribution(logits.data(), {}, d);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_NEAR(d[0].p, 0.5f / 0.75f, 1e-6);
    Sampler(SamplingParams{.top_p = 0.8f}, 5).distribution(logits.data(), {}, d);
    ASSERT_EQ(d.size(), 3u);  // 0.5 + 0.25 < 0.8 <= 0.9
    Sampler(SamplingParams{.min_p = 0.2f}, 5).distribution(logits.data(), {}, d);
    ASSERT_EQ(d.size(), 3u);  // >= 0.1
    EXPECT_EQ(d[2].id, 2);
}

// Without top-k / top-p the distribution is the whole (min_p-filtered) softmax, in id order: nothing is
// sorted (a full sort of a 151,936-token vocabulary cost ~30 ms a token). Same set and probabilities as
// the truncating path gives.
TEST(Sampler, NoTruncationKeepsEveryTokenInIdOrder) {
    std::vector<float> p = {0.07f, 0.5f, 0.03f, 0.25f, 0.15f};
    std::vector<float> logits;
    for (float x : p) logits.push_back(std::log(x));
    std::vector<TokenProb> d;
    Sampler(SamplingParams{}, 5).distribution(logits.data(), {}, d);
    ASSERT_EQ(d.size(), 5u);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(d[i].id, i);
        EXPECT_NEAR(d[i].p, p[i], 1e-6);
    }
    Sampler(SamplingParams{.min_p = 0.2f}, 5).distribution(logits.data(), {}, d);  // >= 0.1: ids 1, 3, 4
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[0].id, 1);
    EXPECT_EQ(d[1].id, 3);
    EXPECT_EQ(d[2].id, 4);
    EXPECT_NEAR(d[0].p, 0.5f / 0.9f, 1e-6);
    std::vector<TokenProb> sorted;  // the truncating path (a top_k that keeps everything) agrees on the set
    Sampler(SamplingParams{.top_k = 5, .min_p = 0.2f}, 5).distribution(logits.data(), {}, sorted);
    ASSERT_EQ(sorted.size(), 3u);
    std::map<int32_t, float> a, b;
    for (const TokenProb& t : d) a[t.id] = t.p;
    for (const TokenProb& t : sorted) b[t.id] = t.p;
    for (const auto& [id, q] : a) EXPECT_NEAR(q, b[id], 1e-6) << id;
}

TEST(Sampler, TemperatureSharpensDistribution) {
    std::vector<float> logits = {1.0f, 0.0f};
    std::vector<TokenProb> hot, cold;
    Sampler(SamplingParams{.temperature = 2.0f}, 2).distribution(logits.data(), {}, hot);
    Sampler(SamplingParams{.temperature = 0.5f}, 2).distribution(logits.data(), {}, cold);
    EXPECT_NEAR(hot[0].p, 1.0 / (1.0 + std::exp(-0.5)), 1e-6);
    EXPECT_NEAR(cold[0].p, 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
}

TEST(Sampler, SeededDrawsAreReproducibleAndMatchTheDistribution) {
    std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    Sampler a({.seed = 42}, 3), b({.seed = 42}, 3);
    std::map<int, int> counts;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
        int32_t x = a.sample(logits.data(), {}).token;
        ASSERT_EQ(x, b.sample(logits.data(), {}).token);
        counts[x]++;
    }
    // Three-sigma bounds of a binomial.
    EXPECT_NEAR(counts[0] / double(n), 0.6, 3 * std::sqrt(0.6 * 0.4 / n));
    EXPECT_NEAR(counts[1] / double(n), 0.3, 3 * std::sqrt(0.3 * 0.7 / n));
    EXPECT_NEAR(counts[2] / double(n), 0.1, 3 * std::sqrt(0.1 * 0.9 / n));
}

// A vocabulary of many draw blocks (2,048 ids each) with the mass spread over ids in different blocks,
// the first and the last (a short one) included: the untruncated draw walks the block sums, then the block.
// Frequencies follow the probabilities, every drawn id has weight, and min_p removes what it should.
TEST(Sampler, UntruncatedDrawsAcrossABlockedVocabulary) {
    const int V = 10000;
    const std::map<int, float> mass = {{0, 0.2f}, {2047, 0.1f}, {2048, 0.15f}, {5000, 0.3f}, {9999, 0.25f}};
    std::vector<float> logits(V, -40.0f);  // the rest: e^-40 relative, never drawn in practice
    for (const auto& [id, p] : mass) logits[size_t(id)] = std::log(p);
    for (float min_p : {0.0f, 0.6f}) {
        Sampler s({.temperature = 1.0f, .min_p = min_p, .seed = 7}, V), again({.temperature = 1.0f, .min_p = min_p, .seed = 7}, V);
        std::map<int, int> counts;
        const int n = 20000;
        for (int i = 0; i < n; ++i) {
            const int32_t t = s.sample(logits.data(), {}).token;
            ASSERT_EQ(t, again.sample(logits.data(), {}).token);
            ASSERT_TRUE(mass.count(t)) << "drew id " << t;
            counts[t]++;
        }
        double kept = 0;  // min_p 0.6 of the top (0.3) = 0.18: keeps 0.2, 0.3 and 0.25
        for (const auto& [id, p] : mass) kept += p >= min_p * 0.3f ? p : 0;
        for (const auto& [id, p] : mass) {
            const double q = p >= min_p * 0.3f ? p / kept : 0.0;
            EXPECT_NEAR(counts[id] / double(n), q, 3 * std::sqrt(q * (1 - q) / n) + 1e-9) << id << " min_p " << min_p;
        }
        std::vector<TokenProb> d;
        s.distribution(logits.data(), {}, d);
        double total = 0;
        for (const TokenProb& t : d) total += t.p;
        EXPECT_NEAR(total, 1.0, 1e-5);
        if (min_p > 0) {
            EXPECT_EQ(d.size(), 3u);
        }
    }
}

TEST(Sampler, LogprobsOfChosenAndTopAlternatives) {
    std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    Sampler s({.temperature = 0.0f, .top_logprobs = 2}, 3);
    Sampled r = s.sample(logits.data(), {});
    EXPECT_EQ(r.token, 0);
    EXPECT_NEAR(r.logprob, std::log(0.6), 1e-5);
    ASSERT_EQ(r.top.size(), 2u);
    EXPECT_EQ(r.top[1].id, 1);
    EXPECT_NEAR(r.top[1].p, std::log(0.3), 1e-5);
}

// The speculative path (distribution + its own pick) reports log-probabilities of the same penalised
// distribution that sample() reports, for any token it picks.
TEST(Sampler, LogprobsOfUsesThePenalisedDistribution) {
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    const std::vector<int32_t> history = {0, 0};
    SamplingParams p{.temperature = 1.0f, .frequency_penalty = 0.5f, .seed = 7, .top_logprobs = 3};
    Sampler a(p, 3), b(p, 3);
    Sampled sa = a.sample(logits.data(), history);
    std::vector<TokenProb> dist;
    b.distribution(logits.data(), history, dist);
    Sampled sb;
    b.logprobs_of(sa.token, sb);
    EXPECT_FLOAT_EQ(sb.logprob, sa.logprob);
    ASSERT_EQ(sb.top.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(sb.top[i].id, sa.top[i].id);
        EXPECT_FLOAT_EQ(sb.top[i].p, sa.top[i].p);
    }
    // Token 0 was penalised by 2 x 0.5 + 0 = 1 nat: log p(0) = log(0.5/e / (0.5/e + 0.3 + 0.2)).
    Sampled s0;
    b.logprobs_of(0, s0);
    const double z = 0.5 / std::exp(1.0) + 0.5;
    EXPECT_NEAR(s0.logprob, std::log(0.5 / std::exp(1.0) / z), 1e-5);
    Sampler fresh(p, 3);
    EXPECT_THROW(fresh.logprobs_of(0, s0), Error);
}

TEST(Sampler, RejectsInvalidParameters) {
    EXPECT_THROW(Sampler({.temperature = -1.0f}, 3), Error);
    EXPECT_THROW(Sampler({.top_p = 0.0f}, 3), Error);
    EXPECT_THROW(Sampler({.top_logprobs = 21}, 3), Error);
}
