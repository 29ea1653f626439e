#include "spec/drafter.h"

#include <algorithm>

namespace flint {

PredictionDrafter::PredictionDrafter(std::vector<int32_t> prediction, int min_match)
    : pred_(std::move(prediction)), min_match_(std::max(1, min_match)) {}

int64_t PredictionDrafter::resync(std::span<const int32_t> output) const {
    // The longest output suffix (down to min_match tokens) found in the prediction; among equal lengths the
    // occurrence nearest after the old cursor wins, since edits move forward through the file.
    const int64_t P = static_cast<int64_t>(pred_.size());
    const int max_n = static_cast<int>(std::min<size_t>(output.size(), 16));
    for (int n = max_n; n >= min_match_; --n) {
        auto suffix = output.subspan(output.size() - n);
        int64_t best = -1;
        for (int64_t i = 0; i + n <= P; ++i) {
            if (!std::equal(suffix.begin(), suffix.end(), pred_.begin() + i)) continue;
            int64_t after = i + n;
            if (best < 0) best = after;
            if (after >= cursor_) {
                best = after;
                break;
            }
        }
        if (best >= 0) return best;
    }
    return -1;
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
        } else {
            int64_t r = resync(output.first(seen_ + 1));
            cursor_ = r;
        }
    }
}

void PredictionDrafter::propose(std::span<const int32_t> output, int k, std::vector<int32_t>& out) {
    advance(output);
    if (cursor_ < 0) return;
    for (int64_t i = cursor_; i < static_cast<int64_t>(pred_.size()) && k > 0; ++i, --k) out.push_back(pred_[i]);
}

void LookupDrafter::propose(std::span<const int32_t> h, int k, std::vector<int32_t>& out) const {
    const int64_t L = static_cast<int64_t>(h.size());
    for (int n = max_n_; n >= min_n_; --n) {
        if (L <= n) continue;
        auto suffix = h.subspan(L - n);
        // Most recent earlier occurrence that has at least one token after it.
        for (int64_t i = L - n - 1; i >= 0; --i) {
            if (!std::equal(suffix.begin(), suffix.end(), h.begin() + i)) continue;
            for (int64_t j = i + n; j < L && k > 0; ++j, --k) out.push_back(h[j]);
            return;
        }
    }
}

void AdaptiveLength::update(int proposed, int accepted) {
    if (proposed <= 0) return;
    if (accepted == proposed) k_ = std::min(cap_, std::max(k_ * 2, 2));
    else k_ = std::max(1, std::min(k_, accepted + 1));
}

}  // namespace flint
