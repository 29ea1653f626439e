// flint/sample/sampler.h — turning logits into the next token: a chain of small stages.
//
//   penalties (repetition, presence, frequency over the recent history; logit bias per token)
//   → greedy (temperature 0: argmax, deterministic)
//   → temperature → top-k → top-p → min-p → seeded draw
// Log-probabilities reported with a token are those of the model's distribution after penalties, at
// temperature 1 (what the model believes, independent of how we chose to sample).
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace flint {

struct SamplingParams {
    float temperature = 1.0f;     // 0: greedy
    int top_k = 0;                // 0: off
    float top_p = 1.0f;           // 1: off
    float min_p = 0.0f;           // 0: off
    float repeat_penalty = 1.0f;  // 1: off (llama.cpp semantics: divide positive logits, multiply negative)
    int penalty_last_n = 64;      // history window for all penalties
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    std::vector<std::pair<int32_t, float>> logit_bias = {};  // added to a token's logit; -inf bans it
    uint64_t seed = 0;
    bool logprobs = false;        // compute the chosen token's log-probability (costs a pass over the vocab)
    int top_logprobs = 0;         // how many alternatives to report (0..20); implies logprobs
};

struct TokenProb {
    int32_t id = -1;
    float p = 0;  // probability, or logit while a stage works on raw scores
};

struct Sampled {
    int32_t token = -1;
    float logprob = 0;                 // of the chosen token
    std::vector<TokenProb> top;        // top_logprobs alternatives: id and logprob
};

class Sampler {
public:
    Sampler(const SamplingParams& params, int n_vocab);

    // Picks the next token. `history` is the sequence so far (prompt and output) for the penalties.
    Sampled sample(const float* logits, std::span<const int32_t> history);

    // sample() in two halves, for the rows of a verify step: prepare() makes the passes over the
    // vocabulary (argmax; per-block sums of the weights) and uses no RNG and no member state, so several
    // rows can be prepared on several threads at once; sample(prepared) then draws, in order, on this
    // sampler's RNG. The same token and the same RNG use as sample(logits, history), for the parameters
    // and history preparable() accepts (greedy or untruncated, no penalty in effect).
    struct Prepared {
        const float* scores = nullptr;   // the row (must outlive the draw)
        int32_t top = -1;                // its argmax
        float shift = 0;                 // max of scores / T
        double total = 0;                // sum of the weights
        std::vector<double> block_sums;  // per kFlatBlock ids
        std::vector<float> scratch;      // (kFlatBlock) one block's weights
    };
    bool preparable(std::span<const int32_t> history) const {
        return (greedy() || untruncated()) && !penalties_apply(history);
    }
    void prepare(const float* scores, Prepared& p) const;
    Sampled sample(const Prepared& p);

    // The distribution `sample` draws from, as (id, probability) pairs sorted by probability (descending),
    // truncated by top-k/top-p/min-p; without top-k/top-p (the default) every token min-p keeps, in id
    // order. Greedy: one pair with probability 1.
    void distribution(const float* logits, std::span<const int32_t> history, std::vector<TokenProb>& out);

    // Fills out.logprob / out.top for `token` from the logits of the last distribution() or sample() call
    // (after penalties, at temperature 1), when the parameters ask for log-probabilities. No copy of the row:
    // after sample() with no penalty in effect it reads the caller's logits, which must still be there.
    void logprobs_of(int32_t token, Sampled& out) const;

    // Draws from a distribution with this sampler's RNG.
    int32_t draw(std::span<const TokenProb> dist);
    float uniform();  // in [0, 1)

    const SamplingParams& params() const { return params_; }
    bool greedy() const { return params_.temperature <= 0.0f; }

private:
    // Points scores_ at the penalised logits: a copy in work_, or (may_borrow, no penalty in effect) `logits`.
    void penalised(const float* logits, std::span<const int32_t> history, bool may_borrow);
    bool penalties_apply(std::span<const int32_t> history) const;
    bool untruncated() const { return params_.top_k == 0 && params_.top_p >= 1.0f; }
    // Weights of ids b0 .. b0 + len into w: exp((s - max) / T), 0 below min_p; returns their sum.
    double block_weights(const float* scores, float shift, int b0, int len, float* w) const;
    int32_t draw_flat(const Prepared& p);  // one draw from a prepared untruncated row

    static constexpr int kFlatBlock = 2048;

    SamplingParams params_;
    int n_vocab_;
    std::mt19937_64 rng_;
    std::vector<float> work_;        // (n_vocab) penalised logits
    const float* scores_ = nullptr;  // the last call's penalised logits: work_, or the caller's row
    std::vector<TokenProb> cands_;   // candidates
    std::vector<float> weights_;     // unnormalised probabilities: all n_vocab (distribution()), or the drawn block's
    Prepared own_;                   // sample(logits, history)'s prepared row
    std::vector<int32_t> counts_;    // (n_vocab) occurrences in the penalty window
    std::vector<TokenProb> dist_;    // the last distribution
};

// Stages, usable alone (tests call them directly). Candidates hold logits on input unless noted.
int32_t argmax(const float* logits, int n);
void log_softmax_top(const float* logits, int n, int k, std::vector<TokenProb>& out, float* logprob_of = nullptr,
                     int32_t id_of = -1);
void apply_penalties(float* logits, int n, std::span<const int32_t> history, const SamplingParams& p,
                     std::vector<int32_t>& counts);

}  // namespace flint
