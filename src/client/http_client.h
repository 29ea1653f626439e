// flint/client/http_client.h — a blocking HTTP/1.1 client (Beast) for one server: keep-alive or a new
// connection per request, bodies read as they arrive (SSE), TCP_NODELAY. Beast stays in the .cpp.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/url.h"

namespace flint::client {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;                            // empty when the body went to on_data
};

class HttpClient {
public:
    // keep_alive=false: a fresh TCP connection for every request (what a naive client does).
    // idle_timeout_s: the longest the server may stay silent — while the request is being sent, before its
    // reply starts (a long prompt's prefill) and between pieces of it — before request() gives up.
    // max_body: the most bytes of one reply's body the client takes, kept or streamed (the WebSocket
    // client's message limit; a 128k-token stream's events are far less), so a hostile or broken server
    // cannot fill the client's memory.
    static constexpr double kDefaultIdleTimeout = 300;
    static constexpr size_t kDefaultMaxBody = size_t(256) << 20;
    HttpClient(Url server, bool keep_alive = true, double idle_timeout_s = kDefaultIdleTimeout,
               size_t max_body = kDefaultMaxBody);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Sends one request. With on_data, each piece of the (de-chunked) body is handed over as soon as it
    // arrives and HttpResponse::body stays empty. Throws flint::Error when the server cannot be reached
    // ("connection refused: is `flint serve` running?"), the connection breaks, or the server is silent
    // for longer than the idle timeout, or the reply's body is larger than max_body (said by its
    // Content-Length before any of it is read, or found on the way).
    HttpResponse request(const std::string& method, const std::string& target, const std::string& body,
                         const Headers& headers = {}, const std::function<void(std::string_view)>& on_data = {});

    int connections_opened() const;  // how many TCP connects so far

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// "Authorization: Bearer K" when key is non-empty.
Headers auth_headers(const std::string& api_key);

// The server's error message from an error body ({"error":{"message"}}), or the body itself.
std::string error_message(const std::string& body);

}  // namespace flint::client
