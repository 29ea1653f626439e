// flint/spec/drafter.h — where draft tokens come from, for speculative decoding.
//
// Two sources, both free (no draft model):
//  - PredictionDrafter: the caller's predicted output (e.g. the file being edited). A cursor tracks where
//    the generated text stands in the prediction. After a mismatch it re-synchronises as a diff would:
//    by the latest generated n-gram where it occurs in the prediction (a strong match); until one is found,
//    for a few tokens after the output last followed the prediction, it probes with short drafts from where
//    the output most likely rejoins (the model's own last token near the expected position, or else the
//    expected position itself, as after a substituted word), so the verify block straddles the rejoin.
//  - LookupDrafter: prompt lookup. The longest recent n-gram of the history that occurred before is
//    assumed to continue the way it did then.
// An AdaptiveLength controller sets how many drafts to verify from the long-run acceptance, so a poor
// prediction costs little and an isolated mismatch in a good one does not collapse the draft length.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <unordered_map>
#include <vector>

namespace flint {

// Where the steps of one speculative sequence went (counted by the drafter, printed when tracing).
struct DraftStats {
    int steps = 0;               // propose calls (one per engine step of the sequence)
    int steps_synced = 0;        // drafts from a cursor that follows the prediction
    int steps_probe = 0;         // short drafts while re-synchronising
    int steps_lost = 0;          // no drafts (a plain decode step)
    int proposed = 0, accepted = 0;
    int probe_proposed = 0, probe_accepted = 0;
    int misses = 0;              // blocks that ended on a rejected draft
    int resyncs = 0;             // times the cursor got back in step after a miss
    int steps_to_resync = 0;     // engine steps spent between a miss and getting back in step
    int short_blocks = 0;        // synced steps that proposed fewer drafts than asked (prediction ran out)
};

// Per-step tracing of every PredictionDrafter to `f` (nullptr: off). For benchmarks and debugging.
void set_draft_trace(std::FILE* f);

class PredictionDrafter {
public:
    explicit PredictionDrafter(std::vector<int32_t> prediction, int min_match = 3, int probe_len = 4);
    ~PredictionDrafter();
    PredictionDrafter(PredictionDrafter&&) = default;
    PredictionDrafter& operator=(PredictionDrafter&&) = default;
    // `output`: every token generated so far (only the tail since the last call is new).
    // Appends up to k drafts to `out` (at most probe_len while re-synchronising).
    void propose(std::span<const int32_t> output, int k, std::vector<int32_t>& out);
    // Folds newly generated tokens into the cursor (propose does this too).
    void advance(std::span<const int32_t> output);
    // Scores the last drafts against the new output and advances (propose does this first; calling it
    // before propose, to look at behind(), is harmless: once per output length).
    void update(std::span<const int32_t> output);
    bool empty() const { return pred_.empty(); }
    int64_t cursor() const { return cursor_; }
    // The last proposal was a re-synchronisation probe (its outcome says little about the prediction).
    bool probing() const { return last_probe_; }
    // The output has outrun the prediction: its last re-synchronisation found the output's tail only at or
    // behind what was already matched, with less than a probe window of prediction left past that (the output
    // is longer than the prediction, or drifted along it on repetitive text). Drafts then come better from the
    // output's own history (LookupDrafter); see skip(). Mid-prediction, a match behind is left to the drafter.
    bool behind() const;
    // Folds the new output in (as propose does) for a step whose drafts came from elsewhere: no drafts of
    // its own, no statistics for the step.
    void skip(std::span<const int32_t> output);
    // Output tokens that continued the prediction where the cursor stood: the prediction tokens that
    // appeared in the completion.
    int matched() const { return matched_; }
    const DraftStats& stats() const { return stats_; }

private:
    // Where the output rejoins the prediction, or -1; *ahead: the position is past what was already matched.
    int64_t resync(std::span<const int32_t> output, bool* ahead) const;
    // Where to probe after the model's token `last`: a position after that token in the prediction (≥ 0),
    // -p - 2 for a blind guess at p, or -1.
    int64_t probe_at(int32_t last) const;
    void note_outcome(std::span<const int32_t> output);

    std::vector<int32_t> pred_;
    int min_match_;
    int probe_len_;
    // min_match-gram hash → start positions in pred_, so re-synchronising costs a lookup, not a scan.
    std::unordered_map<uint64_t, std::vector<int32_t>> index_;
    int64_t cursor_ = 0;     // index in pred_ of the token expected next; -1 while lost
    bool probe_ = false;     // cursor_ is a guess (probe), not yet confirmed by min_match agreeing tokens
    int run_ = 0;            // output tokens in a row that followed the cursor
    int64_t anchor_ = 0;     // where the cursor would be had the output kept pace with the prediction
    int64_t frontier_ = 0;   // furthest prediction position the output has matched up to
    bool behind_ = false;    // see behind()
    int64_t last_good_ = -1; // output length when the output last followed the prediction in step
    size_t seen_ = 0;        // output tokens already folded into the cursor
    int matched_ = 0;
    std::vector<bool> used_;  // prediction positions already counted in matched_
    // The last proposal, to count how much of it the output accepted.
    std::vector<int32_t> last_drafts_;
    size_t last_at_ = 0;
    size_t updated_at_ = SIZE_MAX;  // output length update() last ran at
    bool last_probe_ = false;
    bool lost_since_miss_ = false;
    DraftStats stats_;
};

class LookupDrafter {
public:
    explicit LookupDrafter(int max_ngram = 4, int min_ngram = 2) : max_n_(max_ngram), min_n_(min_ngram), last_(max_ngram + 1) {}
    // `history`: prompt and output so far, only ever appended to between calls. Appends k drafts when the
    // latest n-gram has an earlier occurrence: what followed it, repeated with the implied period when that
    // runs into the present.
    void propose(std::span<const int32_t> history, int k, std::vector<int32_t>& out);

private:
    void index_up_to(std::span<const int32_t> h, size_t end);

    int max_n_, min_n_;
    // Per n-gram length: hash of the n tokens ending at i-1 → i (where the continuation starts), latest wins.
    std::vector<std::unordered_map<uint64_t, int64_t>> last_;
    size_t indexed_ = 0;  // continuations starting before this index are in last_
};

// Draft length from the long-run acceptance and the measured cost of a verify step. It tracks (decaying)
// accepted drafts and misses, so α = accepted / (accepted + misses) is the chance the next draft agrees,
// and fits the forward's time as c0 + c1·tokens from the steps it is told about. It then picks the k that
// maximises expected tokens per unit of time, (1 + α + … + α^k) / (c0 + c1·(1 + k)). One miss in a good
// prediction barely moves α, so the length holds; where a verified token costs nearly a decoded one
// (tiny models), blocks stay short unless nearly every draft is accepted, and where no length pays
// (α below the relative cost) it proposes none, trying a single draft every few steps.
class AdaptiveLength {
public:
    AdaptiveLength(int initial, int cap);
    int next() const { return k_; }
    void update(int proposed, int accepted);
    // A forward pass over `tokens` tokens (all sequences in the step) took `ms`.
    void observe_step(int tokens, double ms);
    // The fitted extra cost of one more token in a step, relative to a one-token step.
    double relative_token_cost() const;

private:
    void choose();

    int k_, cap_;
    double acc_, miss_;                             // decaying sums of accepted drafts and of misses
    double s0_ = 0, sn_ = 0, snn_ = 0, sm_ = 0, snm_ = 0;  // decaying least-squares sums of (tokens, ms)
    bool pessimistic_ = false;  // drafting does not pay: 0 drafts, with an occasional single one to re-check
    int idle_ = 0;              // steps since the last exploring draft
};

}  // namespace flint
