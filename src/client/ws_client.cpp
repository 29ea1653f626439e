// The client's WebSocket (RFC 6455) over a blocking socket: Beast writes the upgrade request and parses the
// server's answer; the frames are this file's own. A read is poll() then recv() on the socket, and every frame
// that recv() brought is stamped when it returned — the way the SSE reader (http_client.cpp) reads a chunk.
// Beast's asynchronous stream cost each frame the reactor's and the composed read's handlers on top of the
// wake-up (BENCHMARKS.md, Latency), a share of the per-token delivery the latency benchmark measures.
#include "client/ws_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <random>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/detail/hybi13.hpp>

#include "util/error.h"

namespace flint::client {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

enum Opcode : uint8_t { kContinuation = 0x0, kText = 0x1, kBinary = 0x2, kClose = 0x8, kPing = 0x9, kPong = 0xA };
constexpr size_t kMaxMessage = HttpClient::kDefaultMaxBody;  // a larger message is refused, as an HTTP reply's body is

// Whole milliseconds from now until `deadline` (negative once it has passed).
int64_t ms_until(Clock::time_point deadline) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
}

bool has_token(std::string_view list, std::string_view token) {  // "keep-alive, Upgrade" has "upgrade"
    for (size_t i = 0; i < list.size();) {
        size_t j = list.find(',', i);
        if (j == std::string_view::npos) j = list.size();
        std::string_view t = list.substr(i, j - i);
        while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
        if (beast::iequals(t, token)) return true;
        i = j + 1;
    }
    return false;
}
}  // namespace

struct WsClient::Impl {
    net::io_context io;  // the resolver and the connect only
    std::unique_ptr<tcp::socket> sock;
    int fd = -1;
    std::string in;       // bytes received and not yet parsed into frames
    std::string partial;  // a fragmented message so far
    bool in_message = false, open = false, close_sent = false;
    std::deque<WsFrame> inbox;
    std::string reason;
    std::mt19937 rng{std::random_device{}()};

    void lost(const std::string& why) {
        if (!open) return;
        open = false;
        reason = why;
        boost::system::error_code ec;
        sock->shutdown(tcp::socket::shutdown_both, ec);
    }

    void write_all(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t k = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) return lost(std::string("sending failed: ") + (k < 0 && errno == EAGAIN ? "timed out" : std::strerror(errno)));
            bytes.remove_prefix(static_cast<size_t>(k));
        }
    }

    // One whole client frame (FIN set, masked with a fresh key, RFC 6455 §5.3).
    void send_frame(uint8_t opcode, std::string_view payload) {
        std::string f;
        f.reserve(payload.size() + 14);
        f += static_cast<char>(0x80 | opcode);
        const uint64_t n = payload.size();
        if (n < 126) {
            f += static_cast<char>(0x80 | n);
        } else if (n < 65536) {
            f += static_cast<char>(0x80 | 126);
            for (int s = 8; s >= 0; s -= 8) f += static_cast<char>((n >> s) & 0xff);
        } else {
            f += static_cast<char>(0x80 | 127);
            for (int s = 56; s >= 0; s -= 8) f += static_cast<char>((n >> s) & 0xff);
        }
        const uint32_t key = static_cast<uint32_t>(rng());
        char mask[4];
        for (int i = 0; i < 4; ++i) mask[i] = static_cast<char>((key >> (8 * i)) & 0xff);
        f.append(mask, 4);
        const size_t at = f.size();
        f.append(payload);
        for (size_t i = 0; i < n; ++i) f[at + i] = static_cast<char>(f[at + i] ^ mask[i & 3]);
        write_all(f);
    }

    // Takes every whole frame out of `in`: messages go to the inbox stamped `at` (when their last bytes
    // arrived), pings are answered, a close ends the connection.
    void parse(Clock::time_point at) {
        size_t pos = 0;
        while (open && in.size() - pos >= 2) {
            const auto b0 = static_cast<uint8_t>(in[pos]), b1 = static_cast<uint8_t>(in[pos + 1]);
            const bool fin = b0 & 0x80;
            const uint8_t op = b0 & 0x0f;
            size_t head = 2;
            uint64_t n = b1 & 0x7f;
            if (b1 & 0x80) return lost("protocol error: the server masked a frame");
            if (b0 & 0x70) return lost("protocol error: a frame has reserved bits set (no extension was negotiated)");
            if (n >= 126) {
                const int bytes = n == 126 ? 2 : 8;
                if (in.size() - pos < 2 + static_cast<size_t>(bytes)) break;
                n = 0;
                for (int i = 0; i < bytes; ++i) n = (n << 8) | static_cast<uint8_t>(in[pos + 2 + i]);
                head += static_cast<size_t>(bytes);
            }
            if (n > kMaxMessage || partial.size() + n > kMaxMessage)
                return lost("the server sent a message of more than " + std::to_string(kMaxMessage >> 20) + " MiB");
            if (in.size() - pos < head + n) break;
            std::string_view payload(in.data() + pos + head, static_cast<size_t>(n));
            pos += head + static_cast<size_t>(n);
            if (op >= kClose && (!fin || n > 125)) return lost("protocol error: a fragmented or oversized control frame");
            switch (op) {
                case kText:
                case kBinary:
                    if (in_message) return lost("protocol error: a message began inside a fragmented one");
                    if (fin) inbox.push_back(WsFrame{std::string(payload), at});
                    else partial.assign(payload), in_message = true;
                    break;
                case kContinuation:
                    if (!in_message) return lost("protocol error: a continuation frame without a message");
                    partial.append(payload);
                    if (fin) inbox.push_back(WsFrame{std::move(partial), at}), partial.clear(), in_message = false;
                    break;
                case kPing: send_frame(kPong, payload); break;
                case kPong: break;
                case kClose: {
                    if (!close_sent) send_frame(kClose, payload.substr(0, 2)), close_sent = true;  // echo the code
                    std::string why = "the server closed the connection";
                    if (payload.size() > 2) why += ": " + std::string(payload.substr(2));
                    return lost(why);
                }
                default: return lost("protocol error: unknown opcode " + std::to_string(op));
            }
        }
        in.erase(0, pos);
    }

    // Waits up to timeout_ms for the socket to be readable, reads what it holds and parses it. False when the
    // time ran out; true when something happened (bytes, the end, or a signal that cut the wait short).
    bool fill(int timeout_ms) {
        pollfd p{fd, POLLIN, 0};
        const int r = ::poll(&p, 1, timeout_ms);
        if (r == 0) return false;
        if (r < 0) {
            if (errno == EINTR) return true;
            lost(std::string("connection lost: ") + std::strerror(errno));
            return true;
        }
        char buf[65536];
        const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
        const auto at = Clock::now();
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN) return true;
            lost(std::string("connection lost: ") + std::strerror(errno));
            return true;
        }
        if (k == 0) {
            lost("connection lost: the server closed the socket without a close frame");
            return true;
        }
        in.append(buf, static_cast<size_t>(k));
        parse(at);
        return true;
    }
};

WsClient::WsClient() : impl_(std::make_unique<Impl>()) {}
WsClient::~WsClient() { close(); }

void WsClient::connect(const Url& url, const Headers& headers, double timeout_s) {
    Impl& m = *impl_;
    m.sock = std::make_unique<tcp::socket>(m.io);
    m.inbox.clear();
    m.in.clear();
    m.partial.clear();
    m.in_message = m.open = m.close_sent = false;
    m.reason.clear();

    tcp::resolver resolver(m.io);
    boost::system::error_code ec;
    auto results = resolver.resolve(url.host, url.port, ec);
    if (ec) fail("cannot resolve ", url.host, ": ", ec.message());
    net::connect(*m.sock, results, ec);
    if (ec)
        fail("cannot connect to ", url.host, ":", url.port, ": ", ec.message(),
             ec == net::error::connection_refused ? " (is `flint serve` running there?)" : "");
    m.sock->set_option(tcp::no_delay(true));
    m.fd = m.sock->native_handle();
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));

    beast::websocket::detail::sec_ws_key_type key;
    beast::websocket::detail::make_sec_ws_key(key);
    http::request<http::empty_body> req{http::verb::get, url.target, 11};
    req.set(http::field::host, url.host + ":" + url.port);
    req.set(http::field::upgrade, "websocket");
    req.set(http::field::connection, "Upgrade");
    req.set(http::field::sec_websocket_key, std::string_view(key.data(), key.size()));
    req.set(http::field::sec_websocket_version, "13");
    req.set(http::field::user_agent, "flint-client/0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    http::write(*m.sock, req, ec);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> p;
    p.body_limit(1 << 20);
    while (!ec && !p.is_done()) {  // each read waits for bytes first, so the deadline holds
        const int64_t left = ms_until(deadline);
        pollfd pf{m.fd, POLLIN, 0};
        if (left <= 0 || ::poll(&pf, 1, static_cast<int>(left)) == 0)
            fail("the WebSocket handshake with ", to_string(url), " timed out");
        http::read_some(*m.sock, buf, p, ec);
    }
    if (ec) fail("the WebSocket handshake with ", to_string(url), " failed: ", ec.message());
    const auto& res = p.get();
    if (res.result_int() != 101)
        fail("the server refused the WebSocket upgrade: HTTP ", res.result_int(), " ", std::string(res.reason()),
             res.body().empty() ? std::string() : " — " + error_message(res.body()));
    beast::websocket::detail::sec_ws_accept_type accept;
    beast::websocket::detail::make_sec_ws_accept(accept, std::string_view(key.data(), key.size()));
    if (!beast::iequals(res[http::field::upgrade], "websocket") || !has_token(res[http::field::connection], "upgrade") ||
        res[http::field::sec_websocket_accept] != std::string_view(accept.data(), accept.size()))
        fail("the WebSocket handshake with ", to_string(url), " failed: the server's 101 answer is not a WebSocket upgrade");
    const timeval send_limit{30, 0};  // a server that stops reading for 30 s ends the connection (send_frame)
    ::setsockopt(m.fd, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof send_limit);
    m.in = beast::buffers_to_string(buf.data());  // frames the server sent right after its answer
    m.open = true;
    if (!m.in.empty()) m.parse(Clock::now());
}

bool WsClient::is_open() const { return impl_->open; }
const std::string& WsClient::close_reason() const { return impl_->reason; }
bool WsClient::has_frame() const { return !impl_->inbox.empty(); }
int WsClient::native_handle() const { return impl_->open ? impl_->fd : -1; }

void WsClient::service() {
    if (impl_->open) impl_->fill(0);
}

void WsClient::send(const std::string& text) {
    if (impl_->open) impl_->send_frame(kText, text);
}

std::optional<WsFrame> WsClient::next(int timeout_ms) {
    Impl& m = *impl_;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (m.inbox.empty() && m.open) {
        const int64_t left = ms_until(deadline);
        if (left < 0 || !m.fill(static_cast<int>(left))) break;
    }
    if (m.inbox.empty()) return std::nullopt;
    WsFrame f = std::move(m.inbox.front());
    m.inbox.pop_front();
    return f;
}

void WsClient::close() {
    Impl& m = *impl_;
    if (!m.sock) return;
    if (m.open) {
        if (!m.close_sent) {
            const char normal[2] = {char(1000 >> 8), char(1000 & 0xff)};
            m.send_frame(kClose, std::string_view(normal, 2));
            m.close_sent = true;
        }
        // The server answers with its close; what comes before it is dropped.
        const auto deadline = Clock::now() + std::chrono::milliseconds(500);
        while (m.open && Clock::now() < deadline) {
            m.fill(static_cast<int>(ms_until(deadline)) + 1);
            m.inbox.clear();
        }
        m.open = false;
        m.reason = "closed by the client";  // whatever ended it last, the client did
    }
    boost::system::error_code ec;
    m.sock->close(ec);
    m.sock.reset();
    m.fd = -1;
}

}  // namespace flint::client
