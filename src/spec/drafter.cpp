#include "spec/drafter.h"

#include <algorithm>

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

PredictionDrafter::PredictionDrafter(std::vector<int32_t> prediction, int min_match)
    : pred_(std::move(prediction)), min_match_(std::max(1, min_match)) {
    std::span<const int32_t> p(pred_);
    for (size_t i = 0; i + min_match_ <= p.size(); ++i)
        index_[hash_tokens(p.subspan(i, min_match_))].push_back(static_cast<int32_t>(i));
}

int64_t PredictionDrafter::resync(std::span<const int32_t> output) const {
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
    return best;
}

void PredictionDrafter::advance(std::span<const int32_t> output) {
    for (; seen_ < output.size(); ++seen_) {
        const int32_t t = output[seen_];
        if (cursor_ >= 0 && cursor_ < static_cast<int64_t>(pred_.size()) && pred_[cursor_] == t) {
            if (used_.empty()) used_.assign(pred_.size(), false);
            if (!used_[cursor_]) {
                used_[cursor_] = true;
                ++matched_;
            }
            ++cursor_;
            anchor_ = cursor_;
            frontier_ = std::max(frontier_, cursor_);
        } else {
            ++anchor_;
            cursor_ = resync(output.first(seen_ + 1));
            if (cursor_ >= 0) anchor_ = cursor_;
        }
    }
}

void PredictionDrafter::propose(std::span<const int32_t> output, int k, std::vector<int32_t>& out) {
    advance(output);
    if (cursor_ < 0) return;
    for (int64_t i = cursor_; i < static_cast<int64_t>(pred_.size()) && k > 0; ++i, --k) out.push_back(pred_[i]);
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
        for (int64_t j = c; j < static_cast<int64_t>(L) && k > 0; ++j, --k) out.push_back(h[j]);
        return;
    }
}

void AdaptiveLength::update(int proposed, int accepted) {
    if (proposed <= 0) return;
    if (accepted == proposed) k_ = std::min(cap_, std::max(k_ * 2, 2));
    else k_ = std::max(1, std::min(k_, accepted + 1));
}

}  // namespace flint
