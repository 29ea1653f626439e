// flint/server/http_context.h — one HTTP request being answered (internal to the Asio translation units).
#pragma once
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "server/rate_limit.h"
#include "server/sessions.h"

namespace flint::server {

struct HttpContext {
    beast::tcp_stream& stream;
    const http::request<http::string_body>& req;
    ServerState& st;
    std::string request_id;
    const ApiKey* key = nullptr;
    HeaderList headers;  // added to the reply (x-ratelimit-*)
    std::chrono::steady_clock::time_point t0;
    std::string endpoint;  // metrics label
    bool keep_alive = true;
    bool closed = false;   // the connection must not be reused (a stream was cut short)

    double elapsed_ms() const { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); }
};

// Writes a complete reply. Adds x-request-id, the extra headers and (when given) Server-Timing.
net::awaitable<void> write_reply(HttpContext& c, int status, const std::string& content_type, std::string body,
                                 const std::string& timing = "");
net::awaitable<void> write_json(HttpContext& c, int status, const nlohmann::json& body, const std::string& timing = "");
net::awaitable<void> write_error(HttpContext& c, const ApiError& e);

// Generation endpoints (http_generation.cpp): JSON or SSE.
net::awaitable<void> handle_responses_create(HttpContext& c, const nlohmann::json& body);
net::awaitable<void> handle_chat_completions(HttpContext& c, const nlohmann::json& body);
net::awaitable<void> handle_completions(HttpContext& c, const nlohmann::json& body);

}  // namespace flint::server
