#include "client/sse.h"

namespace flint::client {

void SseParser::feed(std::string_view bytes, const Sink& on_event) {
    for (char c : bytes) {
        if (after_cr_) {
            after_cr_ = false;
            if (c == '\n') continue;
        }
        if (c == '\r' || c == '\n') {
            after_cr_ = c == '\r';
            line(pending_, on_event);
            pending_.clear();
        } else {
            pending_ += c;
        }
    }
}

void SseParser::line(std::string_view l, const Sink& on_event) {
    if (l.empty()) {  // blank line: dispatch
        if (has_data_) on_event(std::move(cur_));
        cur_ = {};
        has_data_ = false;
        return;
    }
    if (l.front() == ':') return;
    const size_t colon = l.find(':');
    std::string_view field = l.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "event") {
        cur_.event = value;
    } else if (field == "data") {
        if (has_data_) cur_.data += '\n';
        cur_.data += value;
        has_data_ = true;
    }  // id, retry and unknown fields: not needed by a one-shot client
}

}  // namespace flint::client
