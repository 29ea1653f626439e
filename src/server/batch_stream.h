// flint/server/batch_stream.h — the WebSocket stream's next layer: a TCP stream whose writes can be held
// and then sent as one.
//
// Every event is its own WebSocket message (PROTOCOL.md §3), and a batch of events (a 1-token answer's is
// seven: the output item and part opened, the delta, three closings, response.completed) was seven writes,
// each a syscall and a trip through the event loop. Between hold() and release() the WebSocket stream's
// writes — ours, and the pong or close Beast may send of its own accord — are copied here, in order, and
// reported done at once; release() sends them in one write. Nothing can interleave with a held batch: a
// write that comes while release() is sending is held too and goes out after it.
// Included only by the Asio translation units.
#pragma once
#include <cstddef>
#include <string>
#include <utility>  // also: Boost 1.74 awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket/teardown.hpp>

namespace flint::server {

namespace net = boost::asio;
namespace beast = boost::beast;

class BatchStream {
public:
    using executor_type = beast::tcp_stream::executor_type;

    explicit BatchStream(beast::tcp_stream s) : next_(std::move(s)) {}

    executor_type get_executor() noexcept { return next_.get_executor(); }
    beast::tcp_stream& next_layer() noexcept { return next_; }
    const beast::tcp_stream& next_layer() const noexcept { return next_; }

    template <class Buffers, class Handler>
    auto async_read_some(const Buffers& buffers, Handler&& handler) {
        return next_.async_read_some(buffers, std::forward<Handler>(handler));
    }

    template <class Buffers, class Handler>
    auto async_write_some(const Buffers& buffers, Handler&& handler) {
        return net::async_initiate<Handler, void(boost::system::error_code, std::size_t)>(
            [this](auto h, Buffers b) {
                if (!holding_) {
                    next_.async_write_some(b, std::move(h));
                    return;
                }
                const std::size_t n = net::buffer_size(b);
                const std::size_t at = held_.size();
                held_.resize(at + n);
                net::buffer_copy(net::buffer(held_.data() + at, n), b);
                net::post(next_.get_executor(), beast::bind_front_handler(std::move(h), boost::system::error_code{}, n));
            },
            handler, buffers);
    }

    // From here until release(), writes are held.
    void hold() { holding_ = true; }

    // Sends what was held, in one write (or more, if more was held meanwhile), then lets writes through.
    // The error, if the connection broke: the held writes were reported done, so it is the only word of it.
    net::awaitable<boost::system::error_code> release() {
        boost::system::error_code ec;
        while (!held_.empty() && !ec) {
            sending_.swap(held_);
            held_.clear();
            co_await net::async_write(next_, net::buffer(sending_), net::redirect_error(net::use_awaitable, ec));
            sending_.clear();
        }
        held_.clear();
        holding_ = false;
        co_return ec;
    }

private:
    beast::tcp_stream next_;
    bool holding_ = false;
    std::string held_, sending_;
};

// The WebSocket closing handshake's TCP teardown, as for the stream underneath.
inline void teardown(beast::role_type role, BatchStream& s, boost::system::error_code& ec) {
    using beast::websocket::teardown;
    teardown(role, s.next_layer(), ec);
}

template <class Handler>
void async_teardown(beast::role_type role, BatchStream& s, Handler&& handler) {
    using beast::websocket::async_teardown;
    async_teardown(role, s.next_layer(), std::forward<Handler>(handler));
}

}  // namespace flint::server
