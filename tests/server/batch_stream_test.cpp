// BatchStream, the WebSocket's next layer: held frames leave together and in order, and what Beast sends
// of its own accord (a ping here, a pong or close in a session) never lands inside a batch — also when it
// comes while the batch is still being sent to a client that does not read. Frames written directly from
// another thread (the engine's) arrive whole and in order among Beast's, and are refused once the
// connection broke or a close frame went out.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>

#include <boost/beast/websocket.hpp>

#include "server/batch_stream.h"

namespace flint::server {
namespace {

namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

// Connects and handshakes a client with a 4 KiB receive buffer (so that the server's sends back up while it
// does not read); `on_ping` runs for each ping it reads.
void open_client(websocket::stream<tcp::socket>& ws, const tcp::endpoint& to, std::uint64_t max_message, std::function<void()> on_ping) {
    ws.next_layer().open(tcp::v4());
    ws.next_layer().set_option(net::socket_base::receive_buffer_size(4096));
    ws.next_layer().connect(to);
    ws.handshake("127.0.0.1", "/");
    ws.read_message_max(max_message);
    ws.control_callback([on_ping = std::move(on_ping)](websocket::frame_type kind, beast::string_view) {
        if (kind == websocket::frame_type::ping) on_ping();
    });
}

TEST(BatchStream, HeldFramesLeaveInOrderAndNothingLandsInsideABatch) {
    net::io_context io;
    tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
    const auto endpoint = acceptor.local_endpoint();
    const std::string big(4 << 20, 'x');  // far more than the socket buffers hold
    std::promise<void> go;                // the client reads the big batch only once the server says so
    std::vector<std::string> got;         // what the client saw, in order: messages, and "ping" for pings

    // The client reads asynchronously on its own io_context, for 30 s at most, so a broken stream fails
    // the test instead of hanging it: its socket closes, and the server's writes fail.
    std::thread client([&, wait_for_go = go.get_future()] {
        net::io_context cio;
        websocket::stream<tcp::socket> ws(cio);
        open_client(ws, endpoint, 8 << 20, [&] { got.push_back("ping"); });
        beast::flat_buffer buf;
        std::function<void()> read_next = [&] {
            ws.async_read(buf, [&](boost::system::error_code ec, size_t) {
                if (ec) return;  // the close, or a broken stream
                const std::string m = beast::buffers_to_string(buf.data());
                got.push_back(m.size() == big.size() && m == big ? "big" : m.substr(0, 16));
                buf.clear();
                if (got.back() == "two") wait_for_go.wait_for(std::chrono::seconds(10));  // then the big batch, …
                read_next();
            });
        };
        read_next();
        cio.run_for(std::chrono::seconds(30));
    });

    boost::system::error_code release_ec{net::error::fault}, second_ec{net::error::fault};
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            websocket::stream<BatchStream> ws(beast::tcp_stream(co_await acceptor.async_accept(net::use_awaitable)));
            ws.next_layer().next_layer().socket().set_option(net::socket_base::send_buffer_size(4096));
            co_await ws.async_accept(net::use_awaitable);
            ws.text(true);

            ws.next_layer().hold();
            co_await ws.async_write(net::buffer(std::string("one")), net::use_awaitable);
            co_await ws.async_ping({}, net::use_awaitable);
            co_await ws.async_write(net::buffer(std::string("two")), net::use_awaitable);
            release_ec = co_await ws.next_layer().release();

            // A batch the client does not read yet: release() cannot finish, and a ping sent meanwhile must
            // wait for it rather than go out through the middle of it.
            ws.next_layer().hold();
            co_await ws.async_write(net::buffer(big), net::use_awaitable);
            auto ex = co_await net::this_coro::executor;
            net::co_spawn(
                ex,
                [&]() -> net::awaitable<void> {
                    net::steady_timer t(co_await net::this_coro::executor, std::chrono::milliseconds(50));
                    co_await t.async_wait(net::use_awaitable);
                    co_await ws.async_ping({}, net::use_awaitable);
                    go.set_value();
                },
                net::detached);
            second_ec = co_await ws.next_layer().release();
            co_await ws.async_write(net::buffer(std::string("three")), net::use_awaitable);
            co_await ws.async_close(websocket::close_code::normal, net::use_awaitable);
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run_for(std::chrono::seconds(30));
    client.join();

    EXPECT_FALSE(release_ec) << release_ec.message();
    EXPECT_FALSE(second_ec) << second_ec.message();
    EXPECT_EQ(got, (std::vector<std::string>{"one", "ping", "two", "big", "ping", "three"}));
}

// The payload of direct message i: its number, then filler of a size that makes some frames long enough for
// 16- and 64-bit lengths and for partial sends into the small socket buffers.
std::string direct_payload(int i) {
    const size_t filler = i % 7 == 0 ? 70000 : i % 3 == 0 ? 3000 : 100 + i;
    return "d" + std::to_string(i) + ":" + std::string(filler, char('a' + i % 26));
}

TEST(BatchStream, DirectWritesFromAnotherThreadArriveWholeAndInOrderAmongBeastsFrames) {
    net::io_context io;
    tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
    const auto endpoint = acceptor.local_endpoint();
    const int n = 400;
    std::vector<std::string> got;  // the client's messages, in order
    int pings_seen = 0, pings_sent = 0;

    std::thread client([&] {
        net::io_context cio;
        websocket::stream<tcp::socket> ws(cio);
        open_client(ws, endpoint, 1 << 20, [&] { ++pings_seen; });
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // not reading yet: the server's sends back up
        beast::flat_buffer buf;
        std::function<void()> read_next = [&] {
            ws.async_read(buf, [&](boost::system::error_code ec, size_t) {
                if (ec) return;  // the close, or a broken stream (the test then fails on what is missing)
                got.push_back(beast::buffers_to_string(buf.data()));
                buf.clear();
                read_next();
            });
        };
        read_next();
        cio.run_for(std::chrono::seconds(30));
    });

    std::atomic<int> refused{0};
    std::thread engine;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            websocket::stream<BatchStream> ws(beast::tcp_stream(co_await acceptor.async_accept(net::use_awaitable)));
            ws.next_layer().next_layer().socket().set_option(net::socket_base::send_buffer_size(4096));
            co_await ws.async_accept(net::use_awaitable);
            EXPECT_TRUE(ws.next_layer().enable_direct());
            std::atomic<bool> engine_done{false};
            engine = std::thread([&] {
                std::string frames;
                for (int i = 0; i < n; ++i) {
                    frames.clear();
                    append_text_frame(frames, direct_payload(i));
                    if (i % 5 == 0) append_text_frame(frames, direct_payload(++i));  // two frames in one write
                    if (!ws.next_layer().write_direct(frames)) ++refused;
                }
                engine_done = true;
            });
            // Meanwhile Beast pings from the I/O thread: each ping frame must land between direct frames.
            net::steady_timer t(co_await net::this_coro::executor);
            while (!engine_done) {
                co_await ws.async_ping({}, net::use_awaitable);
                ++pings_sent;
                t.expires_after(std::chrono::microseconds(300));
                co_await t.async_wait(net::use_awaitable);
            }
            engine.join();
            co_await ws.async_close(websocket::close_code::normal, net::use_awaitable);
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run_for(std::chrono::seconds(30));
    client.join();

    EXPECT_EQ(refused, 0);
    ASSERT_EQ(got.size(), size_t(n));
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], direct_payload(i)) << "message " << i;
    EXPECT_GT(pings_sent, 0);
    EXPECT_EQ(pings_seen, pings_sent);
}

TEST(BatchStream, DirectWritesAreRefusedAfterACloseFrameOrOnABrokenConnection) {
    net::io_context io;
    tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
    const auto endpoint = acceptor.local_endpoint();
    std::promise<void> closed_sent, client_gone;
    std::vector<std::string> got;

    // First connection: the server closes the WebSocket; the client reads until the close.
    // Second: the client drops the socket without a close.
    std::thread client([&] {
        net::io_context cio;
        {
            websocket::stream<tcp::socket> ws(cio);
            ws.next_layer().connect(endpoint);
            ws.handshake("127.0.0.1", "/");
            beast::flat_buffer buf;
            boost::system::error_code ec;
            while (!ec) {
                ws.read(buf, ec);
                if (!ec) got.push_back(beast::buffers_to_string(buf.data()));
                buf.clear();
            }
            EXPECT_EQ(ec, websocket::error::closed) << ec.message();
            closed_sent.get_future().wait_for(std::chrono::seconds(10));
        }
        websocket::stream<tcp::socket> ws(cio);
        ws.next_layer().connect(endpoint);
        ws.handshake("127.0.0.1", "/");
        ws.next_layer().close();
        client_gone.set_value();
    });

    bool after_close = true, after_reset = true, failed = false;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            {
                websocket::stream<BatchStream> ws(beast::tcp_stream(co_await acceptor.async_accept(net::use_awaitable)));
                co_await ws.async_accept(net::use_awaitable);
                EXPECT_TRUE(ws.next_layer().enable_direct());
                std::string frames;
                append_text_frame(frames, "before");
                EXPECT_TRUE(ws.next_layer().write_direct(frames));
                co_await ws.async_close(websocket::close_code::normal, net::use_awaitable);
                frames.clear();
                append_text_frame(frames, "after the close");
                after_close = ws.next_layer().write_direct(frames);
                closed_sent.set_value();
            }
            websocket::stream<BatchStream> ws(beast::tcp_stream(co_await acceptor.async_accept(net::use_awaitable)));
            co_await ws.async_accept(net::use_awaitable);
            EXPECT_TRUE(ws.next_layer().enable_direct());
            client_gone.get_future().wait_for(std::chrono::seconds(10));
            std::string frames;
            append_text_frame(frames, std::string(1 << 16, 'x'));
            // The first sends may still be taken by the kernel; the peer's reset refuses the next ones.
            for (int i = 0; i < 200 && after_reset; ++i) {
                after_reset = ws.next_layer().write_direct(frames);
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            failed = ws.next_layer().failed();
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run_for(std::chrono::seconds(30));
    client.join();

    EXPECT_EQ(got, (std::vector<std::string>{"before"}));
    EXPECT_FALSE(after_close) << "a data frame may not follow the close frame";
    EXPECT_FALSE(after_reset) << "direct writes went on into a connection the peer had dropped";
    EXPECT_TRUE(failed);
}

}  // namespace
}  // namespace flint::server
