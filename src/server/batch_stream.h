// flint/server/batch_stream.h — the WebSocket stream's next layer: a TCP stream whose writes can be held
// and sent as one, and which another thread may write whole frames to directly.
//
// Every event is its own WebSocket message (PROTOCOL.md §3), and a batch of events (a 1-token answer's is
// seven: the output item and part opened, the delta, three closings, response.completed) was seven writes,
// each a syscall and a trip through the event loop. Between hold() and release() the WebSocket stream's
// writes — ours, and the pong or close Beast may send of its own accord — are copied here, in order, and
// reported done at once; release() sends them in one write.
//
// write_direct() lets the engine thread send a response's frames itself while the session's coroutine is
// parked (websocket_session.cpp), without waking the I/O thread. One rule keeps frames whole and in order
// across the two threads: at most one write is on the socket at a time (`writing`, under the lock), and
// whatever comes while one is — a direct write, a frame Beast sends, a released batch — is queued behind
// it and sent by the I/O thread when it ends. A direct write never blocks: what the socket does not take
// at once is queued the same way. Writes on the I/O thread are always whole (write_some writes everything
// it is given), so Beast's frames never have a direct write inside them.
// Included only by the Asio translation units.
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>  // also: Boost 1.74 awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket/teardown.hpp>

namespace flint::server {

namespace net = boost::asio;
namespace beast = boost::beast;

// Appends one unmasked, unfragmented WebSocket text frame (a server's, RFC 6455 §5.2) holding `payload`.
inline void append_text_frame(std::string& out, std::string_view payload) {
    const uint64_t n = payload.size();
    out += char(0x81);  // FIN, opcode 1 (text)
    if (n < 126) {
        out += char(n);
    } else if (n < 65536) {
        out += char(126);
        out += char(n >> 8);
        out += char(n & 0xff);
    } else {
        out += char(127);
        for (int i = 7; i >= 0; --i) out += char((n >> (8 * i)) & 0xff);
    }
    out += payload;
}

class BatchStream {
public:
    using executor_type = beast::tcp_stream::executor_type;

    explicit BatchStream(beast::tcp_stream s) : next_(std::move(s)), box_(std::make_shared<Outbox>()) {}
    BatchStream(BatchStream&&) = default;
    ~BatchStream() {
        if (!box_) return;
        std::lock_guard lk(box_->mu);
        box_->gone = true;  // completions and posted flushes that come after this touch nothing
    }

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
                const std::size_t n = net::buffer_size(b);
                std::unique_lock lk(box_->mu);
                if (framed_ && is_close_frame(b)) box_->close_sent = true;  // no data frame may follow it (RFC 6455 §5.5.1)
                if (box_->holding) {
                    append(held_, b);
                    return done(std::move(h), {}, n);
                }
                if (box_->error) return done(std::move(h), box_->error, 0);
                if (box_->writing || !box_->queued.empty()) {  // behind what is on its way
                    append(box_->queued, b);
                    return done(std::move(h), {}, n);
                }
                box_->writing = true;
                lk.unlock();
                net::async_write(next_, b, [this, box = box_, h = std::move(h)](boost::system::error_code ec, std::size_t k) mutable {
                    written(this, *box, ec);
                    std::move(h)(ec, k);
                });
            },
            handler, buffers);
    }

    // From here until release(), writes are held.
    void hold() {
        std::lock_guard lk(box_->mu);
        box_->holding = true;
    }

    // Sends what was held, in one write, then lets writes through. The error, if the connection broke (the
    // held writes were reported done, so it is the only word of it). If a write is on the socket already
    // (a direct write's rest), the batch is queued behind it and this returns at once.
    net::awaitable<boost::system::error_code> release() {
        std::unique_lock lk(box_->mu);
        box_->holding = false;
        if (box_->error || held_.empty()) {
            held_.clear();
            co_return box_->error;
        }
        if (box_->writing || !box_->queued.empty()) {
            box_->queued += held_;
            held_.clear();
            if (!box_->writing && !box_->flush_posted) flush(*box_);  // else the posted flush takes it
            co_return boost::system::error_code{};
        }
        box_->writing = true;
        lk.unlock();
        boost::system::error_code ec;
        co_await net::async_write(next_, net::buffer(held_), net::redirect_error(net::use_awaitable, ec));
        held_.clear();
        written(this, *box_, ec);
        co_return ec;
    }

    // Opens the descriptor write_direct() uses: a duplicate, so that if the I/O thread closes the socket
    // meanwhile, a direct write still goes to this connection (and fails there) and never to another one
    // that was given the same number. On the I/O thread, after the handshake; false if it could not be made.
    bool enable_direct() {
        framed_ = true;  // past the handshake: every write is a frame now
        std::lock_guard lk(box_->mu);
        if (box_->fd < 0) box_->fd = ::dup(next_.socket().native_handle());
        return box_->fd >= 0;
    }

    // From any thread, after enable_direct(): sends `frames` (whole WebSocket frames) without blocking.
    // What the socket does not take now is queued for the I/O thread, in order. False if the connection
    // failed, or a close frame went out (nothing is sent then).
    bool write_direct(std::string_view frames) {
        std::lock_guard lk(box_->mu);
        Outbox& o = *box_;
        if (o.gone || o.close_sent || o.error || o.fd < 0) return false;
        if (o.writing || o.holding || !o.queued.empty()) {
            o.queued += frames;
            if (!o.writing) post_flush(o);
            return true;
        }
        std::size_t off = 0;
        while (off < frames.size()) {
            const ssize_t k = ::send(o.fd, frames.data() + off, frames.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k > 0) {
                off += static_cast<std::size_t>(k);
            } else if (k < 0 && errno == EINTR) {
                continue;
            } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                o.queued.append(frames.substr(off));
                post_flush(o);
                break;
            } else {
                o.error = boost::system::error_code(k < 0 ? errno : EPIPE, boost::system::system_category());
                return false;
            }
        }
        return true;
    }

    // The connection failed on a write (any thread's).
    bool failed() const {
        std::lock_guard lk(box_->mu);
        return bool(box_->error);
    }

private:
    // What both threads share, kept alive by the writes in flight: a completion that comes after the
    // stream is gone finds `gone` set and stops there.
    struct Outbox {
        std::mutex mu;
        std::string queued;    // bytes to send once the write on the socket ends, in order
        std::string sending;   // the queued bytes being sent now
        bool writing = false;  // a write is on the socket (the I/O thread's)
        bool flush_posted = false;
        bool holding = false;  // between hold() and release(): writes go to held_
        bool close_sent = false;
        bool gone = false;
        boost::system::error_code error;  // the first failed write's
        int fd = -1;                      // for write_direct
        ~Outbox() {
            if (fd >= 0) ::close(fd);
        }
    };

    template <class Handler>
    void done(Handler h, boost::system::error_code ec, std::size_t n) {
        net::post(next_.get_executor(), beast::bind_front_handler(std::move(h), ec, n));
    }

    template <class Buffers>
    static void append(std::string& to, const Buffers& b) {
        const std::size_t n = net::buffer_size(b), at = to.size();
        to.resize(at + n);
        net::buffer_copy(net::buffer(to.data() + at, n), b);
    }

    // Every write here starts a frame (Beast hands each frame to one write, and these writes are whole).
    template <class Buffers>
    static bool is_close_frame(const Buffers& b) {
        unsigned char first = 0;
        if (net::buffer_copy(net::buffer(&first, 1), b) != 1) return false;
        return (first & 0x0f) == 0x8;
    }

    // A write on the socket ended (on the I/O thread): start sending what was queued meanwhile. Static: the
    // stream may be gone by then (its socket's pending writes end with operation_aborted when it closes).
    static void written(BatchStream* self, Outbox& o, boost::system::error_code ec) {
        std::lock_guard lk(o.mu);
        o.writing = false;
        if (ec && !o.error) o.error = ec;
        if (o.gone) return;
        if (o.error) o.queued.clear();
        else if (!o.queued.empty()) self->flush(o);
    }

    // Under the lock, on the I/O thread, with nothing on the socket: sends everything queued.
    void flush(Outbox& o) {
        o.sending.clear();
        o.sending.swap(o.queued);
        o.writing = true;
        net::async_write(next_, net::buffer(o.sending), [this, box = box_](boost::system::error_code ec, std::size_t) {
            written(this, *box, ec);
        });
    }

    // Under the lock, from any thread: has the I/O thread flush the queue (once, however often asked).
    void post_flush(Outbox& o) {
        if (o.flush_posted) return;
        o.flush_posted = true;
        net::post(next_.get_executor(), [self = this, box = box_] {
            std::lock_guard lk(box->mu);
            box->flush_posted = false;
            if (box->gone || box->writing || box->error || box->queued.empty()) return;
            self->flush(*box);
        });
    }

    beast::tcp_stream next_;
    std::shared_ptr<Outbox> box_;
    // I/O thread only:
    bool framed_ = false;  // the WebSocket handshake is over (enable_direct() was called)
    std::string held_;
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
