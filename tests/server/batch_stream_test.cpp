// BatchStream, the WebSocket's next layer: held frames leave together and in order, and what Beast sends
// of its own accord (a ping here, a pong or close in a session) never lands inside a batch — also when it
// comes while the batch is still being sent to a client that does not read.
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <thread>

#include <boost/beast/websocket.hpp>

#include "server/batch_stream.h"

namespace flint::server {
namespace {

namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

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
        ws.next_layer().open(tcp::v4());
        ws.next_layer().set_option(net::socket_base::receive_buffer_size(4096));
        ws.next_layer().connect(endpoint);
        ws.handshake("127.0.0.1", "/");
        ws.read_message_max(8 << 20);
        ws.control_callback([&](websocket::frame_type kind, beast::string_view) {
            if (kind == websocket::frame_type::ping) got.push_back("ping");
        });
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

}  // namespace
}  // namespace flint::server
