// flint/runtime/stop_matcher.h — stop sequences over streamed text.
// Text arrives in pieces; a stop string may straddle pieces, so the tail that could still begin a stop
// string is held back until it either completes one (generation ends, the stop text is not emitted) or
// cannot any more (it is released).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace flint {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops = {});

    // Appends text; returns what can be emitted now. Sets stopped() when a stop string completed.
    std::string push(std::string_view text);
    // At the end of generation: whatever is held back.
    std::string flush();
    bool stopped() const { return stopped_; }
    const std::string& matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace flint
