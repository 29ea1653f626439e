// The WebSocket client against a scripted peer: a Beast server on a thread that sends frames exactly as a
// test wants them to arrive.
#include <gtest/gtest.h>

#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "client/ws_client.h"

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
    server.join();
}

}  // namespace
}  // namespace flint::client
