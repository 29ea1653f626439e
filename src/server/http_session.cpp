// One HTTP/1.1 connection as a coroutine: read a request (header and body limits, timeouts), route it,
// answer, repeat while keep-alive holds. A WebSocket upgrade on /v1/responses hands the connection over.
#include <boost/beast/websocket.hpp>

#include "server/http_context.h"
#include "server/json_fields.h"
#include "server/router.h"
#include "server/state.h"

namespace flint::server {
namespace {

namespace websocket = beast::websocket;

std::string request_id_for(const http::request<http::string_body>& req) {
    // Echo a client's own id (for tracing across hops) when it is short and printable; else make one.
    auto it = req.find("x-request-id");
    if (it != req.end()) {
        std::string_view v = it->value();
        bool ok = !v.empty() && v.size() <= 128;
        for (char ch : v) ok = ok && ch > 32 && ch < 127;
        if (ok) return std::string(v);
    }
    return make_id("req_");
}

std::optional<std::string_view> authorization(const http::request<http::string_body>& req) {
    auto it = req.find(http::field::authorization);
    if (it == req.end()) return std::nullopt;
    return std::string_view(it->value().data(), it->value().size());
}

net::awaitable<void> dispatch(HttpContext& c, bool loopback) {
    Route r = route(std::string_view(c.req.method_string().data(), c.req.method_string().size()),
                    std::string_view(c.req.target().data(), c.req.target().size()));
    c.endpoint = endpoint_name(r.endpoint);
    if (!(r.endpoint == Endpoint::Health && !c.st.auth.open())) c.key = c.st.auth.authenticate(authorization(c.req), loopback);
    if (r.endpoint == Endpoint::ResponsesSocket && websocket::is_upgrade(c.req))
        throw ApiError{426, "invalid_request_error", "upgrade_required", "", "WebSocket is disabled on this server; use HTTP."};
    if (!is_generation(r.endpoint)) {
        Reply rep = handle_simple(c.st, r, c.req.body(), c.key);
        if (rep.content_type == "application/json") co_await write_json(c, rep.status, rep.body);
        else co_await write_reply(c, rep.status, rep.content_type, std::move(rep.text));
        co_return;
    }
    if (c.st.stopping) throw ApiError{503, "server_error", "server_shutting_down", "", "The server is shutting down."};
    try {
        c.st.limits.admit(c.key ? c.key->key : "", c.headers);
    } catch (const ApiError&) {
        ++c.st.metrics.rate_limited;
        throw;
    }
    json body = parse_body(c.req.body());
    if (r.endpoint == Endpoint::ResponsesCreate) co_await handle_responses_create(c, body);
    else if (r.endpoint == Endpoint::ChatCompletions) co_await handle_chat_completions(c, body);
    else co_await handle_completions(c, body);
}

}  // namespace

net::awaitable<void> write_reply(HttpContext& c, int status, const std::string& content_type, std::string body,
                                 const std::string& timing) {
    http::response<http::string_body> res{static_cast<http::status>(status), c.req.version()};
    res.set(http::field::server, "flint");
    res.set(http::field::content_type, content_type);
    res.set("x-request-id", c.request_id);
    for (auto& [k, v] : c.headers) res.set(k, v);
    res.set("Server-Timing", timing.empty() ? "total;dur=" + std::to_string(c.elapsed_ms()) : timing);
    res.keep_alive(c.keep_alive && !c.closed);
    res.body() = std::move(body);
    res.prepare_payload();
    c.st.metrics.request(c.endpoint, status);
    c.stream.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(c.st.cfg.write_timeout_s)));
    co_await http::async_write(c.stream, res, net::use_awaitable);
}

net::awaitable<void> write_json(HttpContext& c, int status, const json& body, const std::string& timing) {
    const std::string type = "application/json";
    co_await write_reply(c, status, type, dump(body), timing);
}

net::awaitable<void> write_error(HttpContext& c, const ApiError& e) {
    if (e.status == 429) {
        c.headers.emplace_back("retry-after", std::to_string(static_cast<int64_t>(std::ceil(e.retry_after_s))));
        c.headers.emplace_back("retry-after-ms", std::to_string(static_cast<int64_t>(std::ceil(e.retry_after_s * 1000))));
    }
    const json body = error_body(e);
    co_await write_json(c, e.status, body);
}

net::awaitable<void> run_http_session(std::shared_ptr<ServerState> st, tcp::socket socket) {
    boost::system::error_code ec;
    const bool loopback = socket.remote_endpoint(ec).address().is_loopback();
    socket.set_option(tcp::no_delay(true), ec);  // one event per write must leave at once
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    ++st->metrics.connections;
    ++st->metrics.connections_total;
    struct Count {
        std::atomic<int64_t>& n;
        ~Count() { --n; }
    } count{st->metrics.connections};
    auto secs = [](double s) { return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s)); };

    bool linger = false;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(static_cast<std::uint64_t>(st->cfg.body_limit));
        parser.header_limit(64 * 1024);
        stream.expires_after(secs(st->cfg.idle_timeout_s));
        co_await http::async_read_header(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
        // A Content-Length over the limit is refused here already (body_limit), before any body is read.
        if (ec && ec != http::error::body_limit) break;  // closed, timed out or unparseable: nothing to answer
        auto t0 = std::chrono::steady_clock::now();
        if (!ec && parser.get()[http::field::expect] == "100-continue") {
            http::response<http::empty_body> cont{http::status::continue_, 11};
            co_await http::async_write(stream, cont, net::redirect_error(net::use_awaitable, ec));
            if (ec) break;
        }
        if (!ec) {
            stream.expires_after(secs(st->cfg.body_timeout_s));
            co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
        }
        const auto& req = parser.get();
        HttpContext c{stream, req, *st, request_id_for(req), nullptr, {}, t0, "", req.keep_alive(), false};
        if (ec == http::error::body_limit) {
            c.keep_alive = false;  // the rest of the body is still in flight: the connection is unusable
            c.endpoint = "body_too_large";
            // Named, not a temporary in the co_await expression: GCC 12 destroys such aggregates twice.
            const ApiError too_large{413, "invalid_request_error", "request_too_large", "",
                                     "Request body exceeds the limit of " + std::to_string(st->cfg.body_limit) + " bytes."};
            co_await write_error(c, too_large);
            linger = true;
            break;
        }
        if (ec) break;

        if (beast::websocket::is_upgrade(req) && st->cfg.websocket &&
            route("GET", std::string_view(req.target().data(), req.target().size())).endpoint == Endpoint::ResponsesSocket) {
            const ApiKey* key = nullptr;
            std::optional<ApiError> refused;
            try {
                key = st->auth.authenticate(authorization(req), loopback);
            } catch (const ApiError& e) {
                refused = e;
            }
            if (refused) {
                c.keep_alive = false;
                c.endpoint = "/v1/responses (websocket)";
                co_await write_error(c, *refused);
                break;
            }
            stream.expires_never();  // the WebSocket stream keeps its own timeouts
            co_await run_websocket_session(st, std::move(stream), parser.release(), key, c.request_id);
            co_return;
        }

        // co_await is not allowed inside a handler: remember the error, answer after the try.
        std::optional<ApiError> err;
        bool broken = false;
        try {
            co_await dispatch(c, loopback);
        } catch (const ApiError& e) {
            err = e;
        } catch (const boost::system::system_error&) {
            broken = true;  // the client went away mid-reply
        } catch (const std::exception& e) {
            err = server_error(e.what());
        }
        if (broken) break;
        if (err && !c.closed) co_await write_error(c, *err);
        if (c.closed || !c.keep_alive) break;
    }
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (linger) {
        // Lingering close after a 413: a client still sending its body would get a reset, losing our
        // reply, if we closed with its bytes unread. We stopped sending; discard input briefly until it stops.
        stream.expires_after(std::chrono::seconds(2));
        std::vector<char> sink(16384);
        for (int64_t n = 0; n < 4 * st->cfg.body_limit + (1 << 20);) {
            size_t got = co_await stream.async_read_some(net::buffer(sink), net::redirect_error(net::use_awaitable, ec));
            if (ec) break;
            n += static_cast<int64_t>(got);
        }
    }
}

}  // namespace flint::server
