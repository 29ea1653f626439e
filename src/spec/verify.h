// flint/spec/verify.h — accepting or rejecting a draft token without changing the output distribution.
//
// Speculative sampling (Leviathan et al. 2023; Chen et al. 2023) with a deterministic draft (q = a point
// mass on d, as predictions and prompt lookup are): accept d with probability min(1, p(d)/q(d)) = p(d);
// on rejection draw from the residual max(0, p - q), which is p with d removed, renormalised. The result is
// distributed exactly as p. Greedy decoding is the special case p = one-hot(argmax).
#pragma once
#include <cstdint>
#include <span>

#include "sample/sampler.h"

namespace flint {

// `dist`: the target distribution (Sampler::distribution). Returns the chosen token.
int32_t pick_with_draft(Sampler& sampler, std::span<const TokenProb> dist, int32_t draft);

}  // namespace flint
