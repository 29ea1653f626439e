// Servers that say exactly what a client test wants, for replies `flint serve` never sends: a WebSocket
// peer that runs a script on its one connection, and an HTTP server of one canned exchange. Each runs on
// its own thread and listens on a free port of 127.0.0.1.
#pragma once
#include <exception>
#include <string>
#include <thread>
#include <utility>  // before Boost: 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace flint::test {

using PeerSocket = boost::beast::websocket::stream<boost::asio::ip::tcp::socket>;

// Accepts one WebSocket client, then runs `script(ws)`. The destructor waits for the script to end.
class WsPeer {
public:
    template <typename Script>
    explicit WsPeer(Script script) : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this, script] {
            PeerSocket ws(io_);
            acceptor_.accept(ws.next_layer());
            ws.accept();
            script(ws);
        });
    }
    ~WsPeer() { thread_.join(); }
    WsPeer(const WsPeer&) = delete;
    WsPeer& operator=(const WsPeer&) = delete;
    int port() const { return port_; }

private:
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    int port_ = 0;
    std::thread thread_;
};

// Answers the first HTTP request with `body` (200, JSON), then closes.
class CannedHttpServer {
public:
    explicit CannedHttpServer(std::string body) : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
        namespace http = boost::beast::http;
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this, body = std::move(body)] {
            try {
                boost::asio::ip::tcp::socket s(io_);
                acceptor_.accept(s);
                boost::beast::flat_buffer buf;
                http::request<http::string_body> req;
                http::read(s, buf, req);
                http::response<http::string_body> res{http::status::ok, 11};
                res.set(http::field::content_type, "application/json");
                res.body() = body;
                res.prepare_payload();
                http::write(s, res);
            } catch (const std::exception&) {
                // the client went away: the test's own checks say what it got
            }
        });
    }
    ~CannedHttpServer() {
        try {  // releases an accept() that no client reached
            boost::asio::io_context io;
            boost::asio::ip::tcp::socket poke(io);
            poke.connect(acceptor_.local_endpoint());
        } catch (const std::exception&) {
        }
        thread_.join();
    }
    CannedHttpServer(const CannedHttpServer&) = delete;
    CannedHttpServer& operator=(const CannedHttpServer&) = delete;
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

private:
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    int port_ = 0;
    std::thread thread_;
};

}  // namespace flint::test
