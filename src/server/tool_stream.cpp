#include "server/tool_stream.h"

#include <algorithm>
#include <utility>

namespace flint::server {
namespace {
const std::string kOpen = kToolOpen;
}

std::string ToolCallStream::feed(std::string_view text) {
    if (in_call_) {
        call_text_ += text;
        return {};
    }
    std::string s = held_;
    s += text;
    held_.clear();
    if (size_t pos = s.find(kOpen); pos != std::string::npos) {
        in_call_ = true;
        call_text_ = s.substr(pos);
        s.resize(pos);
        return s;
    }
    // Hold back the longest tail that is a proper prefix of "<tool_call>".
    for (size_t k = std::min(kOpen.size() - 1, s.size()); k > 0; --k)
        if (s.compare(s.size() - k, k, kOpen, 0, k) == 0) {
            held_ = s.substr(s.size() - k);
            s.resize(s.size() - k);
            break;
        }
    return s;
}

ParsedOutput ToolCallStream::finish(bool parallel_calls) {
    ParsedOutput parsed = parse_tool_calls(call_text_);
    if (!parallel_calls && parsed.calls.size() > 1) parsed.calls.resize(1);  // parallel_tool_calls: false
    parsed.text = held_ + parsed.text;  // a malformed <tool_call> stays visible text
    *this = ToolCallStream{};
    return parsed;
}

nlohmann::json LogprobQueue::take(const std::string& shown, bool in_call) {
    nlohmann::json out = shown.empty() ? nlohmann::json::array() : std::exchange(q_, nlohmann::json::array());
    if (in_call) q_ = nlohmann::json::array();
    return out;
}

}  // namespace flint::server
