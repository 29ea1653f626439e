#include "spec/verify.h"

namespace flint {

Verdict verify_position(Sampler& sampler, const float* logits, std::span<const int32_t> history, int32_t draft) {
    Verdict v{sampler.sample(logits, history), false};
    v.accepted = draft >= 0 && v.chosen.token == draft;
    return v;
}

Verdict verify_position(Sampler& sampler, const Sampler::Prepared& row, int32_t draft) {
    Verdict v{sampler.sample(row), false};
    v.accepted = draft >= 0 && v.chosen.token == draft;
    return v;
}

}  // namespace flint
