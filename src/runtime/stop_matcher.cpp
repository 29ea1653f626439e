#include "runtime/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace flint {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
    for (auto& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopMatcher::push(std::string_view text) {
    if (stopped_) return {};
    held_.append(text);
    if (stops_.empty()) return std::exchange(held_, {});
    // Earliest complete stop string wins.
    size_t best = std::string::npos;
    for (const std::string& s : stops_) {
        size_t p = held_.find(s);
        if (p != std::string::npos && p < best) {
            best = p;
            matched_ = s;
        }
    }
    if (best != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, best);
        held_.clear();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        size_t max_len = std::min(s.size() - 1, held_.size());
        for (size_t len = max_len; len > keep; --len)
            if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
                keep = len;
                break;
            }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::flush() {
    if (stopped_) return {};
    return std::exchange(held_, {});
}

}  // namespace flint
