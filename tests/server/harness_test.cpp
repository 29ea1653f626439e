// The server test harness (harness.h) — in-process server, blocking Beast clients whose every wait is bounded —
// and its own checks.
#include "harness.h"

#include <array>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <utility>

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <gtest/gtest.h>

namespace flint::test {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

RuntimeConfig test_runtime() {
    RuntimeConfig rc;
    rc.threads = 1;
    rc.ctx = 512;
    rc.max_running = 16;
    rc.kv_type = DType::F32;
    return rc;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

template <class Msg>
std::map<std::string, std::string> header_map(const Msg& m) {
    std::map<std::string, std::string> h;
    for (const auto& f : m) h[lower(std::string(f.name_string()))] = std::string(f.value());
    return h;
}

tcp::socket connect(net::io_context& ioc, int port) {
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    return s;
}

http::request<http::string_body> make_request(const std::string& method, const std::string& target, const std::string& body,
                                              const Headers& headers) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    return req;
}

}  // namespace

TestModels::TestModels(bool with_code, std::function<void(const std::vector<uint64_t>&)> on_step) {
    RuntimeConfig rc = test_runtime();
    server::ModelEntry& m = registry.load({"stories", shared_path("models/stories260K.gguf")}, rc, "", false);
    if (on_step) m.runtime->on_step = on_step;
    if (with_code) registry.load({"code", shared_path("models/flint-tiny-code.gguf")}, rc, "", false);
}

TestServer::TestServer(server::ServerConfig cfg, bool with_code, std::function<void(const std::vector<uint64_t>&)> on_step)
    : own_(std::make_unique<TestModels>(with_code, std::move(on_step))), models_(own_.get()) {
    start(std::move(cfg));
}

TestServer::TestServer(server::ServerConfig cfg, TestModels& shared) : models_(&shared) { start(std::move(cfg)); }

void TestServer::start(server::ServerConfig cfg) {
    cfg.port = 0;
    cfg.quiet = true;
    srv_ = std::make_unique<server::Server>(std::move(cfg), models_->registry);
    srv_->start();
    port_ = srv_->port();
    th_ = std::thread([this] { srv_->run(); });
}

void TestServer::stop() {
    if (!srv_) return;
    srv_->stop();
    if (th_.joinable()) th_.join();
    srv_.reset();
}

TestServer::~TestServer() { stop(); }

TempStore::TempStore(const std::string& name)
    : path((std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".db")).string()) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

TempStore::~TempStore() {
    std::error_code ignored;  // a destructor must not throw
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ignored);
}

namespace {

// Writes the request and reads the whole response within `timeout_s`. Asynchronously, because Beast's
// stream expiry bounds only asynchronous operations: a reply that never comes, or never ends, must fail the
// test (error::timeout), not hang it.
boost::system::error_code exchange(int port, const http::request<http::string_body>& req,
                                   http::response_parser<http::string_body>& parser, double timeout_s) {
    net::io_context ioc;
    beast::tcp_stream stream(connect(ioc, port));
    stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    beast::flat_buffer buf;
    parser.body_limit(1 << 30);
    boost::system::error_code ec;
    http::async_write(stream, req, [&](boost::system::error_code e, size_t) {
        ec = e;
        if (!e) http::async_read(stream, buf, parser, [&](boost::system::error_code e2, size_t) { ec = e2; });
    });
    ioc.run();
    return ec;
}

// Reads into `got` while `more(got)`, until the peer closes or the stream expires; asynchronously, like
// exchange(), so the expiry bounds a server that neither answers nor closes. Runs on the stream's io_context.
struct Reader {
    beast::tcp_stream& stream;
    std::string& got;
    std::function<bool(const std::string&)> more;
    std::array<char, 4096> buf{};

    void next() {
        if (!more(got)) return;
        stream.async_read_some(net::buffer(buf), [this](boost::system::error_code e, size_t n) {
            if (e) return;
            got.append(buf.data(), n);
            next();
        });
    }
};

}  // namespace

HttpResult http(int port, const std::string& method, const std::string& target, const std::string& body, const Headers& headers) {
    http::response_parser<http::string_body> parser;
    if (auto ec = exchange(port, make_request(method, target, body, headers), parser, 60))
        throw boost::system::system_error(ec, method + " " + target);
    HttpResult r;
    r.status = static_cast<int>(parser.get().result_int());
    r.headers = header_map(parser.get());
    r.body = parser.get().body();
    return r;
}

SseResult sse(int port, const std::string& target, const json& body, const Headers& headers, double timeout_s) {
    http::response_parser<http::string_body> parser;
    const boost::system::error_code ec = exchange(port, make_request("POST", target, body.dump(), headers), parser, timeout_s);
    if (ec == beast::error::timeout)
        throw std::runtime_error("sse: the stream did not end within " + std::to_string(timeout_s) + " s (got " +
                                 std::to_string(parser.get().body().size()) + " bytes)");
    if (ec) throw boost::system::system_error(ec);
    SseResult r;
    r.status = static_cast<int>(parser.get().result_int());
    r.headers = header_map(parser.get());
    r.body = parser.get().body();
    if (r.status != 200) return r;
    // Parse "event: x\ndata: y\n\n" blocks.
    std::istringstream in(r.body);
    std::string line;
    SseEvent cur;
    while (std::getline(in, line)) {
        if (line.empty()) {
            if (!cur.data.empty() || !cur.event.empty()) r.events.push_back(cur);
            cur = {};
        } else if (line.rfind("event: ", 0) == 0) {
            cur.event = line.substr(7);
        } else if (line.rfind("data: ", 0) == 0) {
            cur.data += line.substr(6);
        }
    }
    return r;
}

void sse_and_disconnect(int port, const std::string& target, const json& body, size_t bytes) {
    net::io_context ioc;
    beast::tcp_stream stream(connect(ioc, port));
    stream.expires_after(std::chrono::seconds(30));
    const auto req = make_request("POST", target, body.dump(), {});
    std::string got;
    auto refused = [](const std::string& g) { return g.size() >= 12 && g.compare(0, 12, "HTTP/1.1 200") != 0; };
    Reader reader{stream, got, [&](const std::string& g) { return g.size() < bytes && !refused(g); }};
    http::async_write(stream, req, [&](boost::system::error_code e, size_t) {
        if (!e) reader.next();
    });
    ioc.run();
    if (refused(got))
        throw std::runtime_error("sse_and_disconnect: " + got.substr(0, got.find("\r\n")));
    // Reset rather than a polite FIN: the server's next write fails at once.
    boost::system::error_code ec;
    stream.socket().set_option(net::socket_base::linger(true, 0), ec);
    stream.socket().close(ec);
}

void post_and_vanish(int port, const std::string& target, const json& body, int after_ms) {
    net::io_context ioc;
    tcp::socket s = connect(ioc, port);
    auto req = make_request("POST", target, body.dump(), {});
    http::write(s, req);
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    boost::system::error_code ec;
    s.set_option(net::socket_base::linger(true, 0), ec);
    s.close(ec);
}

std::string raw(int port, const std::string& bytes, double timeout_s) {
    net::io_context ioc;
    beast::tcp_stream stream(connect(ioc, port));
    stream.expires_after(std::chrono::milliseconds(static_cast<int>(timeout_s * 1000)));
    // Whatever the write's fate, what the server sent back is read.
    std::string got;
    Reader reader{stream, got, [](const std::string&) { return true; }};
    net::async_write(stream, net::buffer(bytes), [&](boost::system::error_code, size_t) { reader.next(); });
    ioc.run();
    return got;
}

struct WsClient::Impl {
    net::io_context ioc;
    websocket::stream<beast::tcp_stream> ws{ioc};

    // Starts one asynchronous operation (`start(handler)`) and runs it to its end or for `seconds`, when it
    // ends with error::timeout. Every call goes through here: tcp_stream's expiry bounds only asynchronous
    // operations, and a frame, handshake or close the server never answers must fail the test, not hang it.
    template <class Start>
    boost::system::error_code await(double seconds, Start start) {
        auto& lowest = beast::get_lowest_layer(ws);
        lowest.expires_after(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
        boost::system::error_code ec;
        start([&ec](boost::system::error_code e, auto&&...) { ec = e; });
        ioc.restart();
        ioc.run();
        lowest.expires_never();
        return ec;
    }
};

WsClient::WsClient(int port, const Headers& headers, const std::string& target) : impl_(std::make_unique<Impl>()) {
    beast::get_lowest_layer(impl_->ws).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    impl_->ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
        for (auto& [k, v] : headers) req.set(k, v);
    }));
    if (auto ec = impl_->await(30, [&](auto done) { impl_->ws.async_handshake("127.0.0.1", target, done); }))
        throw boost::system::system_error(ec, "WebSocket handshake");
}

WsClient::~WsClient() {
    boost::system::error_code ec;
    beast::get_lowest_layer(impl_->ws).socket().close(ec);
}

void WsClient::send(const json& j) { send_text(j.dump()); }

void WsClient::send_text(const std::string& s) {
    impl_->ws.text(true);
    if (auto ec = impl_->await(30, [&](auto done) { impl_->ws.async_write(net::buffer(s), done); }))
        throw boost::system::system_error(ec, "WebSocket send");
}

json WsClient::recv(double timeout_s) {
    beast::flat_buffer buf;
    if (auto ec = impl_->await(timeout_s, [&](auto done) { impl_->ws.async_read(buf, done); }))
        throw boost::system::system_error(ec);
    return json::parse(beast::buffers_to_string(buf.data()));
}

std::vector<json> WsClient::recv_until(const std::vector<std::string>& types, double timeout_s) {
    std::vector<json> out;
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
    for (;;) {
        double left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
        if (left <= 0) throw std::runtime_error("recv_until: timeout");
        out.push_back(recv(left));
        std::string t = out.back().value("type", "");
        if (t == "error") return out;
        for (const auto& want : types)
            if (t == want) return out;
    }
}

bool WsClient::wait_closed(double timeout_s) {
    try {
        for (;;) recv(timeout_s);
    } catch (const boost::system::system_error& e) {
        return e.code() == websocket::error::closed || e.code() == net::error::eof || e.code() == net::error::connection_reset;
    } catch (...) {
        return false;
    }
}

void WsClient::close() {
    impl_->await(10, [&](auto done) { impl_->ws.async_close(websocket::close_code::normal, done); });  // errors: already gone
}

int ws_handshake_status(int port, const Headers& headers) {
    // A plain HTTP request carrying the upgrade headers: a refused upgrade is an ordinary HTTP reply.
    Headers h = headers;
    h.emplace_back("Connection", "Upgrade");
    h.emplace_back("Upgrade", "websocket");
    h.emplace_back("Sec-WebSocket-Version", "13");
    h.emplace_back("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
    return flint::test::http(port, "GET", "/v1/responses", "", h).status;
}

double metric(const std::string& text, const std::string& series) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return -1;
}

// ---- the harness's own checks ----------------------------------------------------------------------

TEST(ServerHarness, HealthOnAFreeLoopbackPort) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestServer s;
    EXPECT_GT(s.port(), 0);
    HttpResult r = flint::test::http(s.port(), "GET", "/health");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.json_body()["status"], "ok");
    EXPECT_FALSE(r.headers["x-request-id"].empty());
}

// A peer that accepts connections (the kernel completes them) and never answers: the harness's calls end
// with a timeout instead of waiting for ever.
TEST(ServerHarness, ASilentPeerTimesOut) {
    net::io_context io;
    tcp::acceptor silent(io, {net::ip::make_address("127.0.0.1"), 0});
    const int port = silent.local_endpoint().port();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(raw(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0.2), "");
    try {
        sse(port, "/v1/responses", json{{"stream", true}}, {}, 0.2);
        ADD_FAILURE() << "sse returned";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("did not end within"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0) << "bounded, not hung";
}

}  // namespace flint::test
