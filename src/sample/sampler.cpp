#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/vec.h"
#include "util/error.h"

namespace flint {

int32_t argmax(const float* logits, int n) { return static_cast<int32_t>(argmax_f32(logits, n)); }

void log_softmax_top(const float* logits, int n, int k, std::vector<TokenProb>& out, float* logprob_of, int32_t id_of) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
    const float lse = mx + static_cast<float>(std::log(sum));
    if (logprob_of && id_of >= 0) *logprob_of = logits[id_of] - lse;
    out.clear();
    if (k <= 0) return;
    k = std::min(k, n);
    // A small insertion-sorted top-k: k is at most 20.
    for (int i = 0; i < n; ++i) {
        if (static_cast<int>(out.size()) == k && logits[i] <= out.back().p) continue;
        TokenProb tp{i, logits[i]};
        auto pos = std::upper_bound(out.begin(), out.end(), tp, [](const TokenProb& a, const TokenProb& b) { return a.p > b.p; });
        out.insert(pos, tp);
        if (static_cast<int>(out.size()) > k) out.pop_back();
    }
    for (TokenProb& tp : out) tp.p -= lse;
}

void apply_penalties(float* logits, int n, std::span<const int32_t> history, const SamplingParams& p,
                     std::vector<int32_t>& counts) {
    for (const auto& [id, bias] : p.logit_bias)
        if (id >= 0 && id < n) logits[id] += bias;
    if (p.repeat_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
    if (history.empty() || p.penalty_last_n == 0) return;
    size_t window = p.penalty_last_n < 0 ? history.size() : std::min<size_t>(history.size(), p.penalty_last_n);
    auto recent = history.subspan(history.size() - window);
    counts.assign(n, 0);
    for (int32_t id : recent)
        if (id >= 0 && id < n) ++counts[id];
    for (int32_t id : recent) {
        if (id < 0 || id >= n || counts[id] == 0) continue;
        float& l = logits[id];
        if (p.repeat_penalty != 1.0f) l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
        l -= static_cast<float>(counts[id]) * p.frequency_penalty + p.presence_penalty;
        counts[id] = 0;  // each token once
    }
}

Sampler::Sampler(const SamplingParams& params, int n_vocab) : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    if (n_vocab <= 0) fail("sampler: vocabulary size ", n_vocab);
    if (params.temperature < 0 || !std::isfinite(params.temperature)) fail("temperature must be >= 0, got ", params.temperature);
    if (!(params.top_p > 0 && params.top_p <= 1)) fail("top_p must be in (0, 1], got ", params.top_p);
    if (params.min_p < 0 || params.min_p > 1) fail("min_p must be in [0, 1], got ", params.min_p);
    if (params.top_k < 0) fail("top_k must be >= 0, got ", params.top_k);
    if (params.top_logprobs < 0 || params.top_logprobs > 20) fail("top_logprobs must be in [0, 20], got ", params.top_logprobs);
    if (params.repeat_penalty <= 0) fail("repeat_penalty must be > 0, got ", params.repeat_penalty);
}

bool Sampler::penalties_apply(std::span<const int32_t> history) const {
    const SamplingParams& p = params_;
    if (!p.logit_bias.empty()) return true;
    return (p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) && !history.empty() &&
           p.penalty_last_n != 0;
}

void Sampler::penalised(const float* logits, std::span<const int32_t> history, bool may_borrow) {
    if (may_borrow && !penalties_apply(history)) {
        scores_ = logits;  // nothing to change: read the caller's row (a copy of 151,936 logits is ~15 us)
        return;
    }
    work_.assign(logits, logits + n_vocab_);
    apply_penalties(work_.data(), n_vocab_, history, params_, counts_);
    scores_ = work_.data();
}

void Sampler::distribution(const float* logits, std::span<const int32_t> history, std::vector<TokenProb>& out) {
    penalised(logits, history, false);
    out.clear();
    if (greedy()) {
        out.push_back({argmax(scores_, n_vocab_), 1.0f});
        return;
    }
    if (untruncated()) {
        const float shift = scores_[size_t(argmax_f32(scores_, n_vocab_))] * (1.0f / params_.temperature);
        weights_.resize(size_t(n_vocab_));
        double total = 0;
        for (int b0 = 0; b0 < n_vocab_; b0 += kFlatBlock)
            total += block_weights(scores_, shift, b0, std::min(kFlatBlock, n_vocab_ - b0), weights_.data() + b0);
        for (int i = 0; i < n_vocab_; ++i)
            if (weights_[i] > 0) out.push_back({i, static_cast<float>(weights_[i] / total)});
        return;
    }
    const float inv_t = 1.0f / params_.temperature;
    // Sort only as many candidates as the truncation needs: grow a partial sort until top-p is covered.
    cands_.resize(n_vocab_);
    float mx = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < n_vocab_; ++i) {
        cands_[i] = {i, scores_[i] * inv_t};
        mx = std::max(mx, cands_[i].p);
    }
    double sum = 0;
    for (TokenProb& c : cands_) {
        c.p = std::exp(c.p - mx);
        sum += c.p;
    }
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (TokenProb& c : cands_) c.p *= inv_sum;
    auto by_p = [](const TokenProb& a, const TokenProb& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); };
    size_t limit = params_.top_k > 0 ? std::min<size_t>(params_.top_k, cands_.size()) : cands_.size();
    size_t sorted = std::min<size_t>(limit, 64);
    for (;;) {
        std::partial_sort(cands_.begin(), cands_.begin() + sorted, cands_.end(), by_p);
        double mass = 0;
        for (size_t i = 0; i < sorted; ++i) mass += cands_[i].p;
        if (sorted == limit || mass >= params_.top_p) break;
        sorted = std::min(limit, sorted * 4);
    }
    size_t keep = sorted;
    if (params_.top_p < 1.0f) {
        double mass = 0;
        for (size_t i = 0; i < sorted; ++i) {
            mass += cands_[i].p;
            if (mass >= params_.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    if (params_.min_p > 0.0f) {
        const float floor_p = cands_[0].p * params_.min_p;
        size_t k = 1;
        while (k < keep && cands_[k].p >= floor_p) ++k;
        keep = k;
    }
    double kept = 0;
    for (size_t i = 0; i < keep; ++i) kept += cands_[i].p;
    out.assign(cands_.begin(), cands_.begin() + keep);
    for (TokenProb& c : out) c.p = static_cast<float>(c.p / kept);
}

// No truncation by rank or mass (top_k 0, top_p 1: the API's default) needs no sorting and no (id, p) list:
// the weights exp((l_i - max) / T), in id order, 0 below min_p (the largest weight is exactly 1), are summed
// per kFlatBlock ids; a draw walks the block sums to its block and recomputes that block's weights (the same
// function on the same values: the same bits), so no row stores all its weights. Sorting cost ~30 ms a token
// at 151,936 tokens, the scalar exp and (id, p) lists ~1.7 ms.
double Sampler::block_weights(const float* scores, float shift, int b0, int len, float* w) const {
    double s = exp_sum(scores + b0, w, len, 1.0f / params_.temperature, shift);
    if (params_.min_p > 0.0f) {
        s = 0;
        for (int i = 0; i < len; ++i) {
            if (w[i] < params_.min_p) w[i] = 0.0f;
            s += w[i];
        }
    }
    return s;
}

void Sampler::prepare(const float* scores, Prepared& p) const {
    p.scores = scores;
    p.top = static_cast<int32_t>(argmax_f32(scores, n_vocab_));
    if (greedy()) return;
    p.shift = scores[size_t(p.top)] * (1.0f / params_.temperature);  // = max of l * inv_t
    p.scratch.resize(kFlatBlock);
    p.block_sums.clear();
    p.total = 0;
    for (int b0 = 0; b0 < n_vocab_; b0 += kFlatBlock) {
        const double s = block_weights(scores, p.shift, b0, std::min(kFlatBlock, n_vocab_ - b0), p.scratch.data());
        p.block_sums.push_back(s);
        p.total += s;
    }
}

int32_t Sampler::draw_flat(const Prepared& p) {
    const double r = uniform() * p.total;
    double acc = 0;
    size_t b = 0;
    for (; b + 1 < p.block_sums.size() && r >= acc + p.block_sums[b]; ++b) acc += p.block_sums[b];
    const int b0 = static_cast<int>(b) * kFlatBlock, len = std::min(kFlatBlock, n_vocab_ - b0);
    weights_.resize(kFlatBlock);
    block_weights(p.scores, p.shift, b0, len, weights_.data());
    int32_t last = -1;
    for (int i = 0; i < len; ++i) {
        if (weights_[size_t(i)] <= 0) continue;
        last = b0 + i;
        acc += weights_[size_t(i)];
        if (r < acc) return b0 + i;
    }
    // Rounding left r at the block's end: its last candidate (or, past an empty last block, the top token).
    return last >= 0 ? last : p.top;
}

float Sampler::uniform() {
    return std::generate_canonical<float, 24>(rng_);
}

int32_t Sampler::draw(std::span<const TokenProb> dist) {
    if (dist.empty()) fail("sampler: empty distribution");
    const double r = uniform();
    double acc = 0;
    for (const TokenProb& c : dist) {
        acc += c.p;
        if (r < acc) return c.id;
    }
    return dist.back().id;  // rounding left r above the total
}

Sampled Sampler::sample(const float* logits, std::span<const int32_t> history) {
    if (greedy() || untruncated()) {
        penalised(logits, history, true);
        prepare(scores_, own_);
        return sample(own_);
    }
    Sampled s;  // top-k / top-p: the sorted, truncated distribution
    distribution(logits, history, dist_);
    s.token = draw(dist_);
    logprobs_of(s.token, s);
    return s;
}

Sampled Sampler::sample(const Prepared& p) {
    Sampled s;
    scores_ = p.scores;
    s.token = greedy() ? p.top : draw_flat(p);
    logprobs_of(s.token, s);
    return s;
}

void Sampler::logprobs_of(int32_t token, Sampled& out) const {
    if (!params_.logprobs && params_.top_logprobs <= 0) return;
    if (!scores_) fail("sampler: logprobs_of before any distribution");
    log_softmax_top(scores_, n_vocab_, params_.top_logprobs, out.top, &out.logprob, token);
}

}  // namespace flint
