// flint/server/sessions.h — the coroutine entry points of the Asio translation units (internal).
#pragma once
#include <memory>

#include <utility>  // Boost 1.74 awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace flint::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

struct ServerState;
struct ApiKey;

// One HTTP/1.1 connection: keep-alive requests until the client closes, a timeout, or an upgrade.
net::awaitable<void> run_http_session(std::shared_ptr<ServerState> st, tcp::socket socket);

// A WebSocket connection on /v1/responses, after the upgrade request was read and authenticated.
net::awaitable<void> run_websocket_session(std::shared_ptr<ServerState> st, beast::tcp_stream stream,
                                           http::request<http::string_body> upgrade, const ApiKey* key, std::string request_id);

}  // namespace flint::server
