#include "client/http_client.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>

#include <poll.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace flint::client {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// The socket as Beast reads and writes it, with a wait of at most idle_ms for it to become readable (or
// writable) before each read (or write), so a server that goes silent, mid-reply too, ends the request
// with timed_out instead of holding it forever. (SO_RCVTIMEO would not do: Asio's blocking read polls
// again, without a limit, when recv() gives up.)
class IdleLimitedSocket {
public:
    using executor_type = tcp::socket::executor_type;
    IdleLimitedSocket(tcp::socket& s, int idle_ms) : s_(s), idle_ms_(idle_ms) {}
    executor_type get_executor() { return s_.get_executor(); }

    template <typename Buffers>
    size_t read_some(const Buffers& b, boost::system::error_code& ec) {
        return wait(POLLIN, ec) ? s_.read_some(b, ec) : 0;
    }
    template <typename Buffers>
    size_t write_some(const Buffers& b, boost::system::error_code& ec) {
        return wait(POLLOUT, ec) ? s_.write_some(b, ec) : 0;
    }
    template <typename Buffers>
    size_t read_some(const Buffers& b) { return throwing([&](auto& ec) { return read_some(b, ec); }); }
    template <typename Buffers>
    size_t write_some(const Buffers& b) { return throwing([&](auto& ec) { return write_some(b, ec); }); }

private:
    bool wait(short events, boost::system::error_code& ec) {
        pollfd p{s_.native_handle(), events, 0};
        int r;
        do r = ::poll(&p, 1, idle_ms_);
        while (r < 0 && errno == EINTR);
        if (r == 0) ec = net::error::timed_out;
        else if (r < 0) ec = boost::system::error_code(errno, boost::system::system_category());
        return r > 0;
    }
    template <typename Op>
    size_t throwing(Op op) {
        boost::system::error_code ec;
        const size_t n = op(ec);
        if (ec) throw boost::system::system_error(ec);
        return n;
    }
    tcp::socket& s_;
    int idle_ms_;
};

}  // namespace

struct HttpClient::Impl {
    Url server;
    bool keep_alive;
    double idle_timeout_s;
    size_t max_body;
    net::io_context io;
    beast::tcp_stream stream{io};
    beast::flat_buffer buf;
    bool connected = false;
    int connects = 0;

    void connect() {
        tcp::resolver resolver(io);
        boost::system::error_code ec;
        auto results = resolver.resolve(server.host, server.port, ec);
        if (ec) fail("cannot resolve ", server.host, ": ", ec.message());
        stream.expires_after(std::chrono::seconds(10));
        stream.connect(results, ec);
        if (ec)
            fail("cannot connect to ", server.host, ":", server.port, ": ", ec.message(),
                 ec == net::error::connection_refused ? " (is `flint serve` running there?)" : "");
        stream.socket().set_option(tcp::no_delay(true));
        buf.clear();
        connected = true;
        ++connects;
    }

    void disconnect() {
        boost::system::error_code ec;
        stream.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream.close();
        connected = false;
    }

    // After a failed read or write: the connection is closed; a timeout is reported as the server's silence,
    // and a body over max_body (Beast's body_limit) as too large.
    void broke(const boost::system::error_code& ec) {
        disconnect();
        if (ec == net::error::timed_out)
            fail("the server at ", server.host, ":", server.port, " sent nothing for ", idle_timeout_s,
                 " s (busy with a long prompt, or stuck)");
        if (ec == http::error::body_limit)
            fail("the server at ", server.host, ":", server.port, " sent a reply of more than ", max_body,
                 " bytes (the client's limit); refused");
    }

    // One attempt; returns false when a reused connection turned out to be closed before any reply.
    bool attempt(const http::request<http::string_body>& req, HttpResponse& out,
                 const std::function<void(std::string_view)>& on_data, bool reused) {
        IdleLimitedSocket sock(stream.socket(), static_cast<int>(std::min(idle_timeout_s * 1000.0, 2e9)));
        boost::system::error_code ec;
        http::write(sock, req, ec);
        if (ec) {
            broke(ec);
            if (reused) return false;
            fail("sending the request failed: ", ec.message());
        }
        http::response_parser<http::buffer_body> p;
        p.body_limit(max_body);  // a number, not boost::none: Boost 1.74 compares len_ > none as true
        http::read_header(sock, buf, p, ec);
        if (ec) {
            broke(ec);
            if (reused && (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset))
                return false;
            fail("reading the reply failed: ", ec.message());
        }
        out.status = static_cast<int>(p.get().result_int());
        for (const auto& f : p.get()) {
            std::string name(f.name_string());
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            out.headers[name] = std::string(f.value());
        }
        std::array<char, 16384> chunk;
        while (!p.is_done()) {
            p.get().body().data = chunk.data();
            p.get().body().size = chunk.size();
            http::read_some(sock, buf, p, ec);
            if (ec == http::error::need_buffer) ec = {};
            if (ec) {
                broke(ec);
                fail("the connection broke while reading the reply: ", ec.message());
            }
            const size_t n = chunk.size() - p.get().body().size;
            if (n == 0) continue;
            if (on_data) on_data(std::string_view(chunk.data(), n));
            else out.body.append(chunk.data(), n);
        }
        if (!keep_alive || !p.keep_alive()) disconnect();
        return true;
    }
};

HttpClient::HttpClient(Url server, bool keep_alive, double idle_timeout_s, size_t max_body)
    : impl_(std::make_unique<Impl>()) {
    if (!(idle_timeout_s > 0)) fail("the idle timeout must be a positive number of seconds, not ", idle_timeout_s);
    if (max_body == 0) fail("the reply size limit must be at least one byte");
    impl_->server = std::move(server);
    impl_->keep_alive = keep_alive;
    impl_->idle_timeout_s = idle_timeout_s;
    impl_->max_body = max_body;
}

HttpClient::~HttpClient() {
    if (impl_->connected) impl_->disconnect();
}

int HttpClient::connections_opened() const { return impl_->connects; }

HttpResponse HttpClient::request(const std::string& method, const std::string& target, const std::string& body,
                                 const Headers& headers, const std::function<void(std::string_view)>& on_data) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, impl_->server.host + ":" + impl_->server.port);
    req.set(http::field::user_agent, "flint-client/0.1");
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.keep_alive(impl_->keep_alive);
    req.body() = body;
    req.prepare_payload();
    for (int tries = 0;; ++tries) {
        const bool reused = impl_->connected;
        if (!impl_->connected) impl_->connect();
        HttpResponse out;
        if (impl_->attempt(req, out, on_data, reused && tries == 0)) return out;
    }
}

Headers auth_headers(const std::string& api_key) {
    if (api_key.empty()) return {};
    return {{"Authorization", "Bearer " + api_key}};
}

std::string error_message(const std::string& body) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
        j["error"]["message"].is_string())
        return j["error"]["message"].get<std::string>();
    return body.size() > 300 ? body.substr(0, 300) + "…" : body;
}

}  // namespace flint::client
