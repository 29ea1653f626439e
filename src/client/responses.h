// flint/client/responses.h — the Responses API as the client sees it: the request bodies it sends and the
// stream of events that answer them (PROTOCOL.md §2–§3), folded into one Turn with client-side timestamps.
// Transport-free: SSE (HTTP) and WebSocket frames are fed in the same way.
#pragma once
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace flint::client {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Lenient readers for JSON from a server the client does not control: j[a] (or j[a][b]) when it is an
// integer (a string), else 0 (""), whatever the types on the way.
int int_at(const json& j, const char* a, const char* b = nullptr);
std::string str_at(const json& j, const char* k);

// {type:"message", role, content} — one input item.
json message_item(const std::string& role, const std::string& text);

// Everything one streamed response told the client, plus when it told it.
struct Turn {
    std::string response_id;
    std::string status;            // completed | incomplete | cancelled | failed | error (an error event)
    std::string text;              // the assistant text as streamed
    std::string error_code, error_message;
    int input_tokens = 0, cached_tokens = 0, output_tokens = 0;
    int accepted_prediction_tokens = 0, rejected_prediction_tokens = 0;
    json timings;                  // a server "timings" object on the final response, when it sends one
    Clock::time_point sent{}, created{}, first_delta{}, done{};
    std::vector<Clock::time_point> delta_times;
    // With the flint extension stream_timestamps: each delta's engine emission time (server's monotonic
    // clock, µs; 0 when the server sent none), parallel to delta_times.
    std::vector<int64_t> delta_engine_us;
    bool finished = false;         // a terminal event or an error arrived

    // Folds one event in; returns the text delta it carried (empty for other events).
    std::string_view apply(const json& ev, Clock::time_point at);

    double ttft_ms() const;        // sent → first delta (0 when no delta)
    double total_ms() const;       // sent → terminal event
    // Output tokens after the first over first delta → done; when that is under 10 ms (the answer came
    // in a burst), all output tokens over sent → done.
    double tokens_per_s() const;
};

// A steady_clock time in microseconds: the unit of the server's stream timestamps (same clock on one host).
int64_t monotonic_us(Clock::time_point t);

}  // namespace flint::client
