// flint/client/sse.h — Server-Sent Events: bytes as they arrive → whole events (WHATWG rules: \n, \r\n or
// \r line ends, "field: value" with one optional space, multi-line data joined with \n, ':' comments).
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace flint::client {

struct SseEvent {
    std::string event;  // "" for data-only streams (Chat Completions)
    std::string data;
};

class SseParser {
public:
    using Sink = std::function<void(SseEvent&&)>;
    // Any split of the stream into pieces gives the same events.
    void feed(std::string_view bytes, const Sink& on_event);

private:
    void line(std::string_view l, const Sink& on_event);

    std::string pending_;     // an incomplete line
    bool after_cr_ = false;   // the last byte was '\r' (a following '\n' belongs to it)
    SseEvent cur_;
    bool has_data_ = false;
};

}  // namespace flint::client
