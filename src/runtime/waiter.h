// flint/runtime/waiter.h — submit a request and block until it finishes (tests, benchmarks, CLI tools).
//
// The server streams events to its clients instead; this is for callers that want the whole result on the
// calling thread. The callback runs on the engine thread, so it only records and wakes the waiter.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace flint {

class Waiter {
public:
    using TimePoint = std::chrono::steady_clock::time_point;

    // The callback to pass to Runtime::submit. `on_token` (optional) runs on the engine thread after each
    // token event is recorded (benchmarks use it to act at a given token, e.g. cancel).
    Runtime::Callback callback(std::function<void(const Event&)> on_token = {});

    // Blocks until the final event and returns it.
    Event wait();
    // Like wait(), for at most `timeout`; false when the request is still running.
    bool wait_for(std::chrono::milliseconds timeout);
    bool finished() const;

    // What was recorded (read after wait(), or under the same caveats as any racing read before it).
    std::vector<int32_t> tokens() const;
    std::string text() const;   // concatenated text deltas, the final event's included
    Event final_event() const;
    TimePoint first_token_at() const;  // time of the first token event (epoch when none came)
    TimePoint done_at() const;

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<int32_t> tokens_;
    std::string text_;
    Event done_;
    bool finished_ = false;
    TimePoint first_{}, done_at_{};
};

// submit + wait: the final event (and the streamed text when asked).
Event run_to_completion(Runtime& rt, GenerationRequest req, std::string* text = nullptr);

}  // namespace flint
