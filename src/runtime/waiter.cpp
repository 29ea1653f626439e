#include "runtime/waiter.h"

namespace flint {

Runtime::Callback Waiter::callback(std::function<void(const Event&)> on_token) {
    return [this, on_token = std::move(on_token)](const Event& e) {
        {
            std::lock_guard lk(mu_);
            text_ += e.text;
            if (e.done) {
                done_ = e;
                done_at_ = std::chrono::steady_clock::now();
                finished_ = true;
                // Notified under the lock: once finished_ is seen the waiter may return and destroy this
                // Waiter (it usually lives on the caller's stack), so the condition variable must not be
                // touched after the lock is released. ThreadSanitizer caught the notify-after-unlock form.
                cv_.notify_all();
                return;
            }
            if (tokens_.empty()) first_ = std::chrono::steady_clock::now();
            tokens_.push_back(e.token);
        }
        if (on_token) on_token(e);
    };
}

Event Waiter::wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return finished_; });
    return done_;
}

bool Waiter::wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return finished_; });
}

bool Waiter::finished() const {
    std::lock_guard lk(mu_);
    return finished_;
}

std::vector<int32_t> Waiter::tokens() const {
    std::lock_guard lk(mu_);
    return tokens_;
}

std::string Waiter::text() const {
    std::lock_guard lk(mu_);
    return text_;
}

Event Waiter::final_event() const {
    std::lock_guard lk(mu_);
    return done_;
}

Waiter::TimePoint Waiter::first_token_at() const {
    std::lock_guard lk(mu_);
    return first_;
}

Waiter::TimePoint Waiter::done_at() const {
    std::lock_guard lk(mu_);
    return done_at_;
}

Event run_to_completion(Runtime& rt, GenerationRequest req, std::string* text) {
    Waiter w;
    rt.submit(std::move(req), w.callback());
    Event done = w.wait();
    if (text) *text = w.text();
    return done;
}

}  // namespace flint
