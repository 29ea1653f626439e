#include "spec/verify.h"

#include <vector>

namespace flint {

int32_t pick_with_draft(Sampler& sampler, std::span<const TokenProb> dist, int32_t draft) {
    float pd = 0;
    for (const TokenProb& tp : dist)
        if (tp.id == draft) pd = tp.p;
    if (pd > 0 && sampler.uniform() < pd) return draft;
    std::vector<TokenProb> rest;
    rest.reserve(dist.size());
    double mass = 0;
    for (const TokenProb& tp : dist)
        if (tp.id != draft) {
            rest.push_back(tp);
            mass += tp.p;
        }
    if (rest.empty() || mass <= 0) return draft;  // p is a point mass on d (rounding)
    for (TokenProb& tp : rest) tp.p = static_cast<float>(tp.p / mass);
    return sampler.draw(rest);
}

}  // namespace flint
