#include "client/http_client.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>

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
}  // namespace

struct HttpClient::Impl {
    Url server;
    bool keep_alive;
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

    // One attempt; returns false when a reused connection turned out to be closed before any reply.
    bool attempt(const http::request<http::string_body>& req, HttpResponse& out,
                 const std::function<void(std::string_view)>& on_data, bool reused) {
        boost::system::error_code ec;
        http::write(stream.socket(), req, ec);
        if (ec) {
            disconnect();
            if (reused) return false;
            fail("sending the request failed: ", ec.message());
        }
        http::response_parser<http::buffer_body> p;
        p.body_limit(std::numeric_limits<std::uint64_t>::max());  // not boost::none: Boost 1.74 compares len_ > none as true
        http::read_header(stream.socket(), buf, p, ec);
        if (ec) {
            disconnect();
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
            http::read_some(stream.socket(), buf, p, ec);
            if (ec == http::error::need_buffer) ec = {};
            if (ec) {
                disconnect();
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

HttpClient::HttpClient(Url server, bool keep_alive) : impl_(std::make_unique<Impl>()) {
    impl_->server = std::move(server);
    impl_->keep_alive = keep_alive;
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
