#include "spec/drafter.h"

#include <algorithm>
#include <cstdlib>

namespace flint {
namespace {

uint64_t hash_tokens(std::span<const int32_t> t) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids
    for (int32_t x : t) {
        h ^= static_cast<uint32_t>(x);
        h *= 1099511628211ull;
    }
    return h;
}

}  // namespace

namespace {
std::FILE* g_trace = nullptr;
// Probes are tried only this many output tokens after the output last followed the prediction (an edited
// span), and look for the model's token at most this far ahead of the expected position.
constexpr int64_t kProbeWindow = 16;
}  // namespace

void set_draft_trace(std::FILE* f) { g_trace = f; }

PredictionDrafter::PredictionDrafter(std::vector<int32_t> prediction, int min_match, int probe_len)
    : pred_(std::move(prediction)), min_match_(std::max(1, min_match)), probe_len_(std::max(1, probe_len)) {
    std::span<const int32_t> p(pred_);
    for (size_t i = 0; i + min_match_ <= p.size(); ++i)
        index_[hash_tokens(p.subspan(i, min_match_))].push_back(static_cast<int32_t>(i));
}

PredictionDrafter::~PredictionDrafter() {
    if (!g_trace || stats_.steps == 0) return;
    const DraftStats& s = stats_;
    std::fprintf(g_trace,
                 "[spec] summary: %d steps (%d synced, %d probing, %d without drafts); drafts accepted %d / %d "
                 "(probes %d / %d); %d misses, %d re-syncs after %d steps in all; %d blocks cut by the prediction's end\n",
                 s.steps, s.steps_synced, s.steps_probe, s.steps_lost, s.accepted, s.proposed, s.probe_accepted,
                 s.probe_proposed, s.misses, s.resyncs, s.steps_to_resync, s.short_blocks);
}

int64_t PredictionDrafter::resync(std::span<const int32_t> output, bool* ahead_out) const {
    // Where the output rejoins the prediction: occurrences of its last min_match tokens. Code and text
    // repeat themselves, so among the occurrences the one nearest to where the cursor would be had the
    // output kept pace with the prediction wins (an edit replaces, inserts or deletes a few tokens and the
    // rest follows in order); a longer agreement further back breaks ties.
    if (output.size() < static_cast<size_t>(min_match_)) return -1;
    auto tail = output.subspan(output.size() - min_match_);
    auto it = index_.find(hash_tokens(tail));
    if (it == index_.end()) return -1;
    int64_t best = -1, best_dist = 0;
    int best_len = 0;
    bool best_ahead = false;
    for (int32_t i : it->second) {
        if (!std::equal(tail.begin(), tail.end(), pred_.begin() + i)) continue;  // hash collision
        int len = min_match_;
        while (len < 16 && static_cast<size_t>(len) < output.size() && i - (len - min_match_) - 1 >= 0 &&
               pred_[i - (len - min_match_) - 1] == output[output.size() - len - 1])
            ++len;
        const int64_t after = i + min_match_;
        const int64_t dist = after > anchor_ ? after - anchor_ : anchor_ - after;
        // Ahead of what was already matched first: going back over text the output has passed loops
        // forever on repetitive text (the same n-gram just before an edit).
        const bool ahead = after > frontier_;
        if (best < 0 || (ahead && !best_ahead) ||
            (ahead == best_ahead && (dist < best_dist || (dist == best_dist && len > best_len)))) {
            best = after;
            best_dist = dist;
            best_len = len;
            best_ahead = ahead;
        }
    }
    *ahead_out = best_ahead;
    return best;
}

int64_t PredictionDrafter::probe_at(int32_t last) const {
    // The model's own last token, found in the prediction past what was already matched and near where
    // the output would stand had it kept pace: the output continues after it (a deletion in the output, or
    // the end of an insertion). Otherwise the expected position itself: a substituted span ends and the
    // prediction resumes in step. The verify step tests either guess with the model's next token.
    const int64_t n = static_cast<int64_t>(pred_.size());
    int64_t best = -1, best_dist = 0;
    for (int64_t j = std::max<int64_t>(frontier_, 0); j < std::min(n, anchor_ + kProbeWindow); ++j) {
        if (pred_[j] != last) continue;
        const int64_t dist = std::abs(j + 1 - anchor_);
        if (best < 0 || dist < best_dist) best = j + 1, best_dist = dist;
    }
    if (best >= 0) return best < n ? best : -1;
    return anchor_ < n ? -anchor_ - 2 : -1;  // a blind guess, encoded apart from a match on the token
}

void PredictionDrafter::advance(std::span<const int32_t> output) {
    for (; seen_ < output.size(); ++seen_) {
        const int32_t t = output[seen_];
        const auto done = static_cast<int64_t>(seen_ + 1);
        if (cursor_ >= 0 && cursor_ < static_cast<int64_t>(pred_.size()) && pred_[cursor_] == t) {
            if (used_.empty()) used_.assign(pred_.size(), false);
            if (!used_[cursor_]) {
                used_[cursor_] = true;
                ++matched_;
            }
            ++cursor_;
            anchor_ = cursor_;
            if (cursor_ > frontier_) behind_ = false;
            frontier_ = std::max(frontier_, cursor_);
            ++run_;
            if (!probe_ || run_ >= min_match_) probe_ = false, last_good_ = done;
        } else {
            run_ = 0;
            ++anchor_;
            probe_ = false;
            bool ahead = false;
            cursor_ = resync(output.first(seen_ + 1), &ahead);
            if (cursor_ >= 0) {
                behind_ = !ahead;
                // The output's last n-gram is in the prediction. On repetitive text that is often a phrase
                // from elsewhere rather than the rejoin, but it tends to continue the same way there too
                // (prompt lookup over the prediction); measured, it beats guessing near the edit.
                anchor_ = cursor_;
                last_good_ = done;
            } else if (last_good_ >= 0 && done - last_good_ <= kProbeWindow) {
                // Inside an edited span, just after the output left the prediction: guess near where it
                // should stand, a short block the model's next token tests.
                const int64_t at = probe_at(t);
                run_ = at >= 0 ? 1 : 0;  // the model's token agreed with the prediction there
                cursor_ = at >= -1 ? at : -at - 2;
                probe_ = cursor_ >= 0;
            }
        }
    }
}

void PredictionDrafter::note_outcome(std::span<const int32_t> output) {
    if (last_drafts_.empty() || output.size() <= last_at_) return;
    const size_t fresh = output.size() - last_at_;
    size_t acc = 0;
    while (acc < last_drafts_.size() && acc < fresh && output[last_at_ + acc] == last_drafts_[acc]) ++acc;
    const bool miss = acc < last_drafts_.size() && fresh > acc;
    stats_.accepted += static_cast<int>(acc);
    if (last_probe_) stats_.probe_accepted += static_cast<int>(acc);
    if (miss) {
        ++stats_.misses;
        if (!last_probe_ && !lost_since_miss_) lost_since_miss_ = true;
    }
    if (g_trace)
        std::fprintf(g_trace, "[spec]   accepted %zu / %zu%s\n", acc, last_drafts_.size(), miss ? " (miss)" : "");
}

bool PredictionDrafter::behind() const {
    return behind_ && static_cast<int64_t>(pred_.size()) - frontier_ <= kProbeWindow;
}

void PredictionDrafter::update(std::span<const int32_t> output) {
    if (output.size() == updated_at_) return;
    updated_at_ = output.size();
    note_outcome(output);
    advance(output);
}

void PredictionDrafter::skip(std::span<const int32_t> output) {
    update(output);
    last_drafts_.clear();
    last_at_ = output.size();
    last_probe_ = false;
    if (g_trace)
        std::fprintf(g_trace, "[spec] out %zu: behind the prediction (cursor %lld): drafts from the output's history\n",
                     output.size(), static_cast<long long>(cursor_));
}

void PredictionDrafter::propose(std::span<const int32_t> output, int k, std::vector<int32_t>& out) {
    update(output);
    const bool lost = cursor_ < 0;
    const size_t before = out.size();
    if (!lost) {
        const int n = probe_ ? std::min(k, probe_len_) : k;
        for (int64_t i = cursor_; i < static_cast<int64_t>(pred_.size()) && i < cursor_ + n; ++i) out.push_back(pred_[i]);
    }
    const int drafted = static_cast<int>(out.size() - before);
    last_drafts_.assign(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    last_at_ = output.size();
    last_probe_ = !lost && probe_;
    ++stats_.steps;
    stats_.proposed += drafted;
    if (lost || drafted == 0) ++stats_.steps_lost;
    else if (probe_) ++stats_.steps_probe, stats_.probe_proposed += drafted;
    else ++stats_.steps_synced;
    if (!lost && !probe_ && drafted < k) ++stats_.short_blocks;
    const bool synced = !lost && !probe_ && drafted > 0;
    if (lost_since_miss_) {
        if (synced) ++stats_.resyncs, lost_since_miss_ = false;
        else ++stats_.steps_to_resync;
    }
    if (g_trace)
        std::fprintf(g_trace, "[spec] out %zu: %s k=%d drafts=%d cursor=%lld anchor=%lld\n", output.size(),
                     lost ? "lost" : probe_ ? "probe" : "synced", k, drafted, static_cast<long long>(cursor_),
                     static_cast<long long>(anchor_));
}

void LookupDrafter::index_up_to(std::span<const int32_t> h, size_t end) {
    for (; indexed_ < end; ++indexed_)
        for (int n = min_n_; n <= max_n_; ++n)
            if (indexed_ >= static_cast<size_t>(n))
                last_[n][hash_tokens(h.subspan(indexed_ - n, n))] = static_cast<int64_t>(indexed_);
}

void LookupDrafter::propose(std::span<const int32_t> h, int k, std::vector<int32_t>& out) {
    const size_t L = h.size();
    if (indexed_ > L) indexed_ = 0, last_.assign(max_n_ + 1, {});  // a different history: start over
    // Index every earlier n-gram (those ending before the last token), then look up the current suffix.
    index_up_to(h, L);
    for (int n = max_n_; n >= min_n_; --n) {
        if (L <= static_cast<size_t>(n)) continue;
        auto suffix = h.subspan(L - n);
        auto it = last_[n].find(hash_tokens(suffix));
        if (it == last_[n].end()) continue;
        const int64_t c = it->second;
        if (!std::equal(suffix.begin(), suffix.end(), h.begin() + (c - n))) continue;  // hash collision
        // What followed the match, up to now; past now the text is taken to repeat with the period the match
        // implies (L - c): a loop of one or a few tokens otherwise drafts a single token per step.
        const int64_t period = static_cast<int64_t>(L) - c;
        for (int64_t i = 0; i < k; ++i) out.push_back(h[c + i % period]);
        return;
    }
}

AdaptiveLength::AdaptiveLength(int initial, int cap)
    : k_(std::clamp(initial, 1, std::max(1, cap))), cap_(std::max(1, cap)), acc_(k_), miss_(1) {}

void AdaptiveLength::update(int proposed, int accepted) {
    if (proposed <= 0) return;
    constexpr double keep = 0.8;  // per block: the last ~5 blocks dominate
    acc_ = keep * acc_ + accepted;
    miss_ = keep * miss_ + (accepted < proposed ? 1 : 0);
    choose();
    // Full acceptance: let the length grow even before the estimate catches up.
    if (accepted == proposed) k_ = std::max(k_, std::min(cap_, 2 * proposed));
}

void AdaptiveLength::observe_step(int tokens, double ms) {
    // While drafting does not pay, try one draft every kExplore steps so the estimate can recover.
    constexpr int kExplore = 8;
    if (k_ == 0 && ++idle_ >= kExplore) k_ = 1, idle_ = 0;
    else if (k_ == 1 && pessimistic_) k_ = 0, idle_ = 1;
    if (tokens <= 0 || !(ms > 0)) return;
    constexpr double keep = 0.95;
    const double n = tokens;
    s0_ = keep * s0_ + 1;
    sn_ = keep * sn_ + n;
    snn_ = keep * snn_ + n * n;
    sm_ = keep * sm_ + ms;
    snm_ = keep * snm_ + n * ms;
}

double AdaptiveLength::relative_token_cost() const {
    constexpr double prior = 0.1;  // until steps of different sizes were seen
    const double det = s0_ * snn_ - sn_ * sn_;
    if (s0_ < 2 || det < 0.25 * s0_ * s0_) return prior;  // too little spread in the step sizes
    const double c1 = (s0_ * snm_ - sn_ * sm_) / det;
    const double c0 = (sm_ - c1 * sn_) / s0_;
    if (!(c1 > 0)) return 0.001;
    return c0 + c1 > 0 ? std::clamp(c1 / (c0 + c1), 0.001, 1.0) : 1.0;
}

void AdaptiveLength::choose() {
    const double alpha = acc_ / (acc_ + miss_);
    const double beta = relative_token_cost();
    // Expected tokens per step: the model's own token plus the agreeing prefix of k drafts.
    double best = 1, tokens = 1, p = 1;  // k = 0: a plain decoding step, one token at cost 1
    k_ = 0;
    for (int k = 1; k <= cap_; ++k) {
        p *= alpha;
        tokens += p;
        const double rate = tokens / (1 + beta * k);
        if (rate > best * 1.001) best = rate, k_ = k;
    }
    pessimistic_ = k_ == 0;
}

}  // namespace flint
