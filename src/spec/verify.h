// flint/spec/verify.h — accepting or rejecting a draft token without changing the output.
//
// Speculative sampling (Leviathan et al. 2023; Chen et al. 2023) with a deterministic draft d (q = a point
// mass on d, as predictions and prompt lookup are) accepts d with probability min(1, p(d)/q(d)) = p(d) and,
// on rejection, draws from the residual max(0, p - q) renormalised, which is p without d. Drawing t from p
// and accepting d iff t == d realises exactly that rule: P(accept) = p(d), and a rejected t is distributed
// as p without d. Done with the sampler's usual single draw, a verified position consumes the RNG exactly
// as a plain decoding step does, so for a given seed the output is token for token the same as without
// speculation (as long as the verify rows' logits equal the decode step's, which the kernels keep).
// Greedy decoding is the special case p = one-hot(argmax).
#pragma once
#include <cstdint>
#include <span>

#include "sample/sampler.h"

namespace flint {

struct Verdict {
    Sampled chosen;  // the token to emit at this position (with its log-probabilities if asked for)
    bool accepted;   // the draft was that token
};

// `logits`: the verify row for this position; `history`: the sequence so far (for penalties);
// `draft` < 0: no draft at this position (the bonus token after an accepted block).
Verdict verify_position(Sampler& sampler, const float* logits, std::span<const int32_t> history, int32_t draft);
// The same for a row prepared with sampler.prepare() (Sampler::preparable() said so for its history).
Verdict verify_position(Sampler& sampler, const Sampler::Prepared& row, int32_t draft);

}  // namespace flint
