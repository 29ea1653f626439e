#include "client/ws_client.h"

#include <deque>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "util/error.h"

namespace flint::client {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
}  // namespace

struct WsClient::Impl {
    net::io_context io;
    std::unique_ptr<websocket::stream<beast::tcp_stream>> ws;
    beast::flat_buffer rbuf;
    std::deque<WsFrame> inbox;
    std::deque<std::string> outbox;
    bool reading = false, writing = false, open = false;
    std::string reason;

    void lost(const std::string& why) {
        if (!open) return;
        open = false;
        reason = why;
        boost::system::error_code ec;
        beast::get_lowest_layer(*ws).socket().close(ec);
    }

    void start_read() {
        if (reading || !open) return;
        reading = true;
        ws->async_read(rbuf, [this](boost::system::error_code ec, size_t) {
            reading = false;
            if (ec) {
                lost(ec == websocket::error::closed ? "the server closed the connection" : "connection lost: " + ec.message());
                return;
            }
            inbox.push_back(WsFrame{beast::buffers_to_string(rbuf.data()), Clock::now()});
            rbuf.consume(rbuf.size());
            start_read();
        });
    }

    void start_write() {
        if (writing || outbox.empty() || !open) return;
        writing = true;
        ws->text(true);
        ws->async_write(net::buffer(outbox.front()), [this](boost::system::error_code ec, size_t) {
            writing = false;
            outbox.pop_front();
            if (ec) {
                lost("sending failed: " + ec.message());
                return;
            }
            start_write();
        });
    }

    // Runs handlers until `done()` or the deadline. After each wake-up, every handler already ready runs too:
    // the frames that arrived in one TCP segment (a terminal batch is 4-5 frames) are then all taken from the
    // read buffer, and stamped, on arrival, rather than one per call, after the caller has handled the one
    // before (as an SSE reader stamps every event of a chunk when the chunk arrives).
    template <typename Pred>
    void run_until(Pred done, Clock::time_point deadline) {
        io.restart();
        io.poll();
        while (!done() && Clock::now() < deadline) {
            io.restart();
            if (io.run_one_until(deadline) == 0 && io.stopped() && !reading && !writing) break;
            io.restart();
            io.poll();
        }
    }
};

WsClient::WsClient() : impl_(std::make_unique<Impl>()) {}
WsClient::~WsClient() { close(); }

void WsClient::connect(const Url& url, const Headers& headers, double timeout_s) {
    Impl& m = *impl_;
    m.ws = std::make_unique<websocket::stream<beast::tcp_stream>>(m.io);
    m.inbox.clear();
    m.outbox.clear();
    m.rbuf.clear();
    m.reading = m.writing = m.open = false;
    m.reason.clear();
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));

    tcp::resolver resolver(m.io);
    boost::system::error_code ec;
    auto results = resolver.resolve(url.host, url.port, ec);
    if (ec) fail("cannot resolve ", url.host, ": ", ec.message());
    beast::get_lowest_layer(*m.ws).connect(results, ec);
    if (ec)
        fail("cannot connect to ", url.host, ":", url.port, ": ", ec.message(),
             ec == net::error::connection_refused ? " (is `flint serve` running there?)" : "");
    beast::get_lowest_layer(*m.ws).socket().set_option(tcp::no_delay(true));
    m.ws->set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
        req.set(http::field::user_agent, "flint-client/0.1");
        for (const auto& [k, v] : headers) req.set(k, v);
    }));
    websocket::response_type res;
    bool done = false;
    beast::get_lowest_layer(*m.ws).expires_at(deadline);
    m.ws->async_handshake(res, url.host + ":" + url.port, url.target, [&](boost::system::error_code e) {
        ec = e;
        done = true;
    });
    m.run_until([&] { return done; }, deadline + std::chrono::seconds(1));
    beast::get_lowest_layer(*m.ws).expires_never();
    if (!done) fail("the WebSocket handshake with ", to_string(url), " timed out");
    if (ec) {
        const int status = res.result_int();
        if (status != 0 && status != 101)
            fail("the server refused the WebSocket upgrade: HTTP ", status, " ", std::string(res.reason()),
                 res.body().empty() ? std::string() : " — " + error_message(res.body()));
        fail("the WebSocket handshake with ", to_string(url), " failed: ", ec.message());
    }
    m.open = true;
    m.start_read();
}

bool WsClient::is_open() const { return impl_->open; }
const std::string& WsClient::close_reason() const { return impl_->reason; }
bool WsClient::has_frame() const { return !impl_->inbox.empty(); }

void WsClient::send(const std::string& text) {
    Impl& m = *impl_;
    if (!m.open) return;
    m.outbox.push_back(text);
    m.start_write();
    m.io.restart();
    m.io.poll();
}

std::optional<WsFrame> WsClient::next(int timeout_ms) {
    Impl& m = *impl_;
    if (m.inbox.empty() && m.open) {
        m.start_read();
        m.run_until([&] { return !m.inbox.empty() || !m.open; }, Clock::now() + std::chrono::milliseconds(timeout_ms));
    }
    if (m.inbox.empty()) return std::nullopt;
    WsFrame f = std::move(m.inbox.front());
    m.inbox.pop_front();
    return f;
}

void WsClient::close() {
    Impl& m = *impl_;
    if (!m.ws) return;
    if (m.open) {
        bool done = false;
        m.ws->async_close(websocket::close_code::normal, [&](boost::system::error_code) { done = true; });
        m.run_until([&] { return done; }, Clock::now() + std::chrono::milliseconds(500));
        m.lost("closed by the client");
    }
    // Let cancelled handlers run before the stream goes away.
    m.io.restart();
    m.io.poll();
    m.ws.reset();
}

}  // namespace flint::client
