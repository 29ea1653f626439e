// The WebSocket client against a scripted peer: a Beast server on a thread that sends frames exactly as a
// test wants them to arrive.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "client/scripted_peers.h"
#include "client/ws_client.h"
#include "util/error.h"

namespace flint::client {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

// An unmasked server text frame (RFC 6455 §5.2), payload under 126 bytes.
std::string text_frame(const std::string& payload) {
    std::string f;
    f += static_cast<char>(0x81);  // FIN, text
    f += static_cast<char>(payload.size());
    return f + payload;
}

Url peer_url(const test::WsPeer& p) { return Url{"ws", "127.0.0.1", std::to_string(p.port()), "/"}; }

// Frames that arrive in one TCP segment (as a server's terminal batch does) are each stamped when the
// segment arrives, not when the caller asks for them after handling the ones before.
TEST(WsClient, FramesOfOneSegmentAreStampedOnArrival) {
    net::io_context sio;
    tcp::acceptor acceptor(sio, {net::ip::make_address("127.0.0.1"), 0});
    const int port = acceptor.local_endpoint().port();
    std::thread server([&] {
        beast::websocket::stream<tcp::socket> ws(sio);
        acceptor.accept(ws.next_layer());
        ws.accept();
        beast::flat_buffer buf;
        ws.read(buf);  // the client's "go"
        // Three whole frames in one write: nothing of Beast's own is in flight on this stream meanwhile.
        net::write(ws.next_layer(), net::buffer(text_frame("one") + text_frame("two") + text_frame("three")));
        boost::system::error_code ec;
        ws.read(buf, ec);  // until the client closes
    });

    WsClient c;
    c.connect(Url{"ws", "127.0.0.1", std::to_string(port), "/"}, {});
    c.send("go");
    auto first = c.next(5000);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->text, "one");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the caller busy with the first frame
    const auto asked = Clock::now();
    for (const char* want : {"two", "three"}) {
        auto f = c.next(5000);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->text, want);
        EXPECT_LT(f->at, asked) << want << " was stamped when it was asked for, "
                                << std::chrono::duration<double, std::milli>(f->at - first->at).count()
                                << " ms after the first frame of its segment";
    }
    c.close();
    EXPECT_FALSE(c.is_open());
    EXPECT_EQ(c.close_reason(), "closed by the client");
    server.join();
}

// Lengths on both sides of the 7- and 16-bit length forms, each way; a fragmented message with a ping
// between its fragments (answered with a pong carrying the ping's payload); a close with a reason.
TEST(WsClient, FramesOfEveryLengthFormFragmentsPingsAndTheServersClose) {
    const std::vector<size_t> sizes = {0, 125, 126, 65535, 65536, 300000};
    auto body = [](size_t n) {
        std::string t(n, 'x');
        for (size_t i = 0; i < n; ++i) t[i] = static_cast<char>('a' + i % 26);
        return t;
    };
    std::string pong_payload;
    std::vector<size_t> peer_got;
    {
        test::WsPeer peer([&](beast::websocket::stream<tcp::socket>& ws) {
            ws.control_callback([&](beast::websocket::frame_type kind, beast::string_view payload) {
                if (kind == beast::websocket::frame_type::pong) pong_payload = std::string(payload);
            });
            beast::flat_buffer buf;
            for (size_t i = 0; i < sizes.size(); ++i) {  // the client's messages, echoed
                ws.read(buf);
                const std::string got = beast::buffers_to_string(buf.data());
                buf.consume(buf.size());
                peer_got.push_back(got == body(got.size()) ? got.size() : size_t(-1));
                ws.text(true);
                ws.write(net::buffer(got));
            }
            ws.ping("are you there");
            ws.auto_fragment(false);
            ws.write_some(false, net::buffer(std::string("frag")));  // first fragment, a ping, the rest
            ws.ping("mid-message");
            ws.write_some(true, net::buffer(std::string("mented")));
            ws.read(buf);  // the client's "bye"; its pongs were handled by this read
            ws.close(beast::websocket::close_reason(beast::websocket::close_code::policy_error, "time is up"));
        });
        WsClient c;
        c.connect(peer_url(peer), {});
        for (size_t n : sizes) {
            c.send(body(n));
            auto f = c.next(5000);
            ASSERT_TRUE(f) << n << ": " << c.close_reason();
            EXPECT_EQ(f->text.size(), n);
            EXPECT_TRUE(f->text == body(n)) << "echo of " << n << " bytes differs";
        }
        auto f = c.next(5000);
        ASSERT_TRUE(f) << c.close_reason();
        EXPECT_EQ(f->text, "fragmented");
        c.send("bye");
        EXPECT_FALSE(c.next(5000));
        EXPECT_FALSE(c.is_open());
        EXPECT_EQ(c.close_reason(), "the server closed the connection: time is up");
        c.close();
    }  // the peer's thread has ended: what it recorded can be read
    EXPECT_EQ(peer_got, sizes) << "the peer read what the client sent, byte for byte";
    EXPECT_EQ(pong_payload, "mid-message");
}

// A frame no server may send (masked) ends the connection with a reason; next() waits no longer than asked.
TEST(WsClient, TimeoutsAndAProtocolError) {
    test::WsPeer peer([](beast::websocket::stream<tcp::socket>& ws) {
        beast::flat_buffer buf;
        ws.read(buf);
        // A masked text frame "hi" (mask 0): RFC 6455 §5.1 has the client fail the connection.
        const char masked[] = {char(0x81), char(0x82), 0, 0, 0, 0, 'h', 'i'};
        net::write(ws.next_layer(), net::buffer(masked, sizeof masked));
        boost::system::error_code ec;
        ws.read(buf, ec);  // until the client goes
    });
    WsClient c;
    c.connect(peer_url(peer), {});
    const auto t0 = Clock::now();
    EXPECT_FALSE(c.next(50));
    const double waited = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    EXPECT_GE(waited, 45);
    EXPECT_LT(waited, 2000);
    EXPECT_TRUE(c.is_open());
    c.send("go");
    EXPECT_FALSE(c.next(5000));
    EXPECT_FALSE(c.is_open());
    EXPECT_EQ(c.close_reason(), "protocol error: the server masked a frame");
    c.close();
}

// An upgrade the server answers with an HTTP error: the status and the error's message, not a bare failure.
TEST(WsClient, ARefusedUpgradeSaysWhy) {
    net::io_context io;
    tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
    const int port = acceptor.local_endpoint().port();
    std::thread server([&] {
        tcp::socket s(io);
        acceptor.accept(s);
        beast::flat_buffer buf;
        beast::http::request<beast::http::string_body> req;
        beast::http::read(s, buf, req);
        beast::http::response<beast::http::string_body> res{beast::http::status::unauthorized, 11};
        res.body() = R"({"error":{"message":"invalid API key","type":"invalid_request_error"}})";
        res.prepare_payload();
        beast::http::write(s, res);
    });
    WsClient c;
    try {
        c.connect(Url{"ws", "127.0.0.1", std::to_string(port), "/v1/responses"}, {});
        ADD_FAILURE() << "connected";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("HTTP 401 Unauthorized — invalid API key"), std::string::npos) << e.what();
    }
    server.join();
}

// A server that takes the connection and never answers the upgrade: connect() gives up at its deadline.
TEST(WsClient, AnUnansweredUpgradeTimesOut) {
    net::io_context io;
    tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
    const int port = acceptor.local_endpoint().port();
    WsClient c;
    const auto t0 = Clock::now();
    try {
        c.connect(Url{"ws", "127.0.0.1", std::to_string(port), "/"}, {}, 0.2);  // the kernel completes the TCP connect
        ADD_FAILURE() << "connected";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
}

}  // namespace
}  // namespace flint::client
