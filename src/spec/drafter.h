// flint/spec/drafter.h — where draft tokens come from, for speculative decoding.
//
// Two sources, both free (no draft model):
//  - PredictionDrafter: the caller's predicted output (e.g. the file being edited). A cursor tracks where
//    the generated text stands in the prediction; after a mismatch it re-synchronises by finding the
//    latest generated n-gram in the prediction — where the output rejoins it, as a diff would.
//  - LookupDrafter: prompt lookup. The longest recent n-gram of the history that occurred before is
//    assumed to continue the way it did then.
// An AdaptiveLength controller sets how many drafts to verify from the recent acceptance, so a poor
// prediction costs little.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace flint {

class PredictionDrafter {
public:
    explicit PredictionDrafter(std::vector<int32_t> prediction, int min_match = 3);
    // `output`: every token generated so far (only the tail since the last call is new).
    // Appends up to k drafts to `out`.
    void propose(std::span<const int32_t> output, int k, std::vector<int32_t>& out);
    // Folds newly generated tokens into the cursor (propose does this too).
    void advance(std::span<const int32_t> output);
    bool empty() const { return pred_.empty(); }
    int64_t cursor() const { return cursor_; }
    // Output tokens that continued the prediction where the cursor stood: the prediction tokens that
    // appeared in the completion.
    int matched() const { return matched_; }

private:
    int64_t resync(std::span<const int32_t> output) const;

    std::vector<int32_t> pred_;
    int min_match_;
    // min_match-gram hash → start positions in pred_, so re-synchronising costs a lookup, not a scan.
    std::unordered_map<uint64_t, std::vector<int32_t>> index_;
    int64_t cursor_ = 0;     // index in pred_ of the token expected next; -1 while lost
    int64_t anchor_ = 0;     // where the cursor would be had the output kept pace with the prediction
    int64_t frontier_ = 0;   // furthest prediction position the output has matched up to
    size_t seen_ = 0;        // output tokens already folded into the cursor
    int matched_ = 0;
    std::vector<bool> used_;  // prediction positions already counted in matched_
};

class LookupDrafter {
public:
    explicit LookupDrafter(int max_ngram = 4, int min_ngram = 2) : max_n_(max_ngram), min_n_(min_ngram), last_(max_ngram + 1) {}
    // `history`: prompt and output so far, only ever appended to between calls. Appends up to k drafts.
    void propose(std::span<const int32_t> history, int k, std::vector<int32_t>& out);

private:
    void index_up_to(std::span<const int32_t> h, size_t end);

    int max_n_, min_n_;
    // Per n-gram length: hash of the n tokens ending at i-1 → i (where the continuation starts), latest wins.
    std::vector<std::unordered_map<uint64_t, int64_t>> last_;
    size_t indexed_ = 0;  // continuations starting before this index are in last_
};

// Draft length from the recent acceptance: grows while drafts are accepted, shrinks to what was accepted
// on a miss, never below 1 or above the cap.
class AdaptiveLength {
public:
    AdaptiveLength(int initial, int cap) : k_(initial), cap_(cap) {}
    int next() const { return k_; }
    void update(int proposed, int accepted);

private:
    int k_, cap_;
};

}  // namespace flint
