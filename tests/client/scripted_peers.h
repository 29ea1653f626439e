// Servers that say exactly what a client test wants, for replies `flint serve` never sends: a WebSocket
// peer that runs a script on its one connection, and an HTTP server of one canned exchange. Each runs on
// its own thread and listens on a free port of 127.0.0.1.
#pragma once
#include <algorithm>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>  // before Boost: 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace flint::test {

using PeerSocket = boost::beast::websocket::stream<boost::asio::ip::tcp::socket>;

// A listener on a free port of 127.0.0.1 whose first connection `serve` handles on its own thread. The
// destructor waits for `serve` to end (after connecting to itself, so that an accept() no client reached
// returns), so what `serve` wrote may be read after it, not before. An exception ends `serve` quietly: the
// client went away, or never came; the test's own checks say what the client got.
class OneConnectionServer {
public:
    explicit OneConnectionServer(std::function<void(boost::asio::ip::tcp::socket&)> serve)
        : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}), port_(acceptor_.local_endpoint().port()) {
        thread_ = std::thread([this, serve = std::move(serve)] {
            try {
                boost::asio::ip::tcp::socket s(io_);
                acceptor_.accept(s);
                serve(s);
            } catch (const std::exception&) {
            }
        });
    }
    ~OneConnectionServer() {
        try {
            boost::asio::io_context io;
            boost::asio::ip::tcp::socket poke(io);
            poke.connect(acceptor_.local_endpoint());
        } catch (const std::exception&) {
        }
        thread_.join();
    }
    OneConnectionServer(const OneConnectionServer&) = delete;
    OneConnectionServer& operator=(const OneConnectionServer&) = delete;
    int port() const { return port_; }

private:
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    int port_;
    std::thread thread_;
};

// Accepts one WebSocket client, then runs `script(ws)`.
class WsPeer : public OneConnectionServer {
public:
    template <typename Script>
    explicit WsPeer(Script script)
        : OneConnectionServer([script](boost::asio::ip::tcp::socket& s) {
              PeerSocket ws(std::move(s));
              ws.accept();
              script(ws);
          }) {}
};

// The whole reply an HTTP server sends, status line and headers included, byte for byte.
struct RawReply {
    std::string bytes;
};

// Answers the first HTTP request with `body` (200, JSON), then closes; or with a raw reply, for headers
// and framings `flint serve` never sends. With stall_after, only that many bytes of the reply go out (0:
// none), and the server then says nothing more until the client hangs up.
class CannedHttpServer : public OneConnectionServer {
public:
    static constexpr size_t kWhole = static_cast<size_t>(-1);
    // request_body, if given, receives the request's body (read it after the server is destroyed).
    explicit CannedHttpServer(std::string body, size_t stall_after = kWhole, std::string* request_body = nullptr)
        : CannedHttpServer(RawReply{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body},
                           stall_after, request_body) {}
    explicit CannedHttpServer(RawReply reply, size_t stall_after = kWhole, std::string* request_body = nullptr)
        : OneConnectionServer([reply = std::move(reply.bytes), stall_after, request_body](boost::asio::ip::tcp::socket& s) {
              namespace http = boost::beast::http;
              boost::beast::flat_buffer buf;
              http::request<http::string_body> req;
              http::read(s, buf, req);
              if (request_body) *request_body = req.body();
              boost::asio::write(s, boost::asio::buffer(reply.data(), std::min(stall_after, reply.size())));
              if (stall_after < reply.size()) {
                  char c;
                  s.read_some(boost::asio::buffer(&c, 1));  // until the client hangs up (throws at EOF)
              }
          }) {}
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
};

}  // namespace flint::test
