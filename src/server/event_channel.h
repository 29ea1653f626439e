// flint/server/event_channel.h — engine thread → session, without blocking the engine.
//
// The runtime calls its callback on the engine thread. The callback only appends the event under a
// short lock and, if the session is not already due to look, posts one wake-up to the session's executor
// (its connection's single-threaded io_context, server.cpp: implicitly a strand).
// The session drains everything queued at once, so a burst of tokens becomes one socket write.
// Each event is stamped with the engine-side time it was emitted (steady_clock = CLOCK_MONOTONIC on
// Linux), which the Responses stream can hand to clients on the same host (`stream_timestamps`).
//
// Direct delivery (the WebSocket session's): while the session waits in next() with nothing queued — it is
// "parked", and touches nothing of the response — push() may hand the event to a `Deliver` function on
// the engine thread instead, which writes it to the client itself: no wake-up of the I/O thread, no trip
// through its event loop. The handshake keeps the two apart: the session marks itself parked under the
// lock only when it found the queue empty, push() clears the mark before delivering and sets it again
// after (unless the event was the final one), and any event that is queued instead wakes the session,
// which then takes over until it parks again. Whatever a delivery did is visible to the session after
// next() returns (the lock orders them).
// Included only by the Asio translation units.
#pragma once
#include <chrono>
#include <functional>
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

    // On the engine thread, while the session is parked: true if it delivered the event (then it owns what
    // the session would have done with it), false to have it queued as usual.
    using Deliver = std::function<bool(const TimedEvent&)>;
    void deliver_directly(Deliver d) {
        std::lock_guard lock(mu_);
        deliver_ = std::move(d);
    }

    // Waits until at least one event is queued, then takes them all. Empty: the final event was delivered
    // directly (and nothing comes after it).
    net::awaitable<std::vector<TimedEvent>> next() {
        for (;;) {
            std::vector<TimedEvent> out;
            bool delivered_final = false;
            {
                std::lock_guard lock(mu_);
                out.swap(queue_);
                posted_ = false;
                delivered_final = delivered_final_;
                parked_ = out.empty() && !delivered_final;
            }
            if (!out.empty() || delivered_final) co_return out;
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
            std::unique_lock lock(mu_);
            bool delivered = false;
            if (parked_ && deliver_) {
                parked_ = false;
                lock.unlock();
                delivered = deliver_(TimedEvent{ev, now});
                lock.lock();
                if (delivered && !ev.done) {
                    parked_ = true;
                    return;
                }
            }
            if (delivered) delivered_final_ = true;  // the session wakes to find it done
            else queue_.push_back(TimedEvent{ev, now});
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
    bool parked_ = false;           // the session waits in next() and found nothing queued
    bool delivered_final_ = false;  // deliver_ took the final event
    Deliver deliver_;
    // Engine-thread only after callback():
    std::chrono::steady_clock::time_point start_, last_;
    bool seen_token_ = false;
};

}  // namespace flint::server
