// flint/server/event_channel.h — engine thread → session, without blocking the engine.
//
// The runtime calls its callback on the engine thread. The callback only appends the event under a
// short lock and, if the session is not already due to look, posts one wake-up to the session's executor
// (its connection's single-threaded io_context, server.cpp: implicitly a strand).
// The session drains everything queued at once, so a burst of tokens becomes one socket write.
// Each event is stamped with the engine-side time it was emitted (steady_clock = CLOCK_MONOTONIC on
// Linux), which the Responses stream can hand to clients on the same host (`stream_timestamps`).
// Included only by the Asio translation units.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <utility>  // Boost 1.74 awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>

#include "runtime/request.h"
#include "runtime/runtime.h"
#include "server/metrics.h"

namespace flint::server {

namespace net = boost::asio;

// A wake-up for one coroutine on a strand (or a single-threaded io_context): notify() from that executor,
// notify_any() from any thread. The waiter checks its condition before each wait(), on the executor, so
// no wake-up is lost (tests/server/stream_end_test.cpp).
class Signal : public std::enable_shared_from_this<Signal> {
public:
    explicit Signal(net::any_io_executor ex) : ex_(ex), timer_(ex) {}
    void notify() { timer_.cancel(); }
    void notify_any() {
        net::post(ex_, [self = shared_from_this()] { self->timer_.cancel(); });
    }
    net::awaitable<void> wait(std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
        timer_.expires_at(deadline);
        boost::system::error_code ec;
        co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }

private:
    net::any_io_executor ex_;
    net::steady_timer timer_;
};

struct TimedEvent : Event {
    std::chrono::steady_clock::time_point at;  // when the engine emitted it
};

// Microseconds on the steady clock: the wire form of TimedEvent::at.
inline int64_t monotonic_us(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

class EventChannel : public std::enable_shared_from_this<EventChannel> {
public:
    EventChannel(net::any_io_executor ex, Metrics& metrics) : signal_(std::make_shared<Signal>(ex)), metrics_(metrics) {}

    // The runtime callback. Also records time to first token and inter-token latency as events arrive.
    Runtime::Callback callback() {
        start_ = std::chrono::steady_clock::now();
        return [self = shared_from_this()](const Event& ev) { self->push(ev); };
    }

    // Waits until at least one event is queued, then takes them all.
    net::awaitable<std::vector<TimedEvent>> next() {
        for (;;) {
            std::vector<TimedEvent> out;
            {
                std::lock_guard lock(mu_);
                out.swap(queue_);
                posted_ = false;
            }
            if (!out.empty()) co_return out;
            // Unbounded: push() posts a wake-up whenever it queues onto an empty channel, and this loop
            // re-checks the queue on the executor before every wait (the hang once blamed on a lost wake-up
            // was a blocking peek, 025469a; tests/server/stream_end_test.cpp).
            co_await signal_->wait();
        }
    }

private:
    void push(const Event& ev) {
        auto now = std::chrono::steady_clock::now();
        if (!ev.done) {
            if (!seen_token_) metrics_.ttft.observe(std::chrono::duration<double>(now - start_).count());
            else metrics_.inter_token.observe(std::chrono::duration<double>(now - last_).count());
            seen_token_ = true;
            last_ = now;
        }
        bool wake = false;
        {
            std::lock_guard lock(mu_);
            queue_.push_back(TimedEvent{ev, now});
            wake = !posted_;
            posted_ = true;
        }
        if (wake) signal_->notify_any();
    }

    std::shared_ptr<Signal> signal_;
    Metrics& metrics_;
    std::mutex mu_;
    std::vector<TimedEvent> queue_;
    bool posted_ = false;
    // Engine-thread only after callback():
    std::chrono::steady_clock::time_point start_, last_;
    bool seen_token_ = false;
};

}  // namespace flint::server
