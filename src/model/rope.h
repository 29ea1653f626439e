// flint/model/rope.h — rotary position embeddings, including linear and YaRN context extension.
// The angle of pair i at position p is p * base^(-2i/n_rot), computed incrementally in f32 the way the
// reference engine does (so positions far out agree with it to the last bits), then YaRN-mixed.
#pragma once
#include "model/config.h"

namespace flint {

// cos/sin for every rotated pair at one position: out[2*i] = cos, out[2*i+1] = sin, i in [0, n_rot/2).
void rope_cos_sin(const RopeConfig& r, int pos, float* out);
// Rotates the first n_rot dims of each of n_heads vectors of head_dim in x, with precomputed cos/sin.
void rope_apply(const RopeConfig& r, const float* cos_sin, float* x, int n_heads, int head_dim);

}  // namespace flint
