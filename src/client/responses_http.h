// flint/client/responses_http.h — one Responses request over HTTP with SSE streaming: POST, parse the
// event stream as it arrives, fold the events into a Turn (responses.h).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "client/http_client.h"
#include "client/responses.h"

namespace flint::client {

struct SseTurn {
    Turn turn;
    int status = 0;                              // HTTP status
    std::string error;                           // the server's message when status != 200
    std::map<std::string, std::string> headers;  // e.g. server-timing
};

// `body` gets "stream": true. Throws flint::Error when the server cannot be reached.
SseTurn post_response_stream(HttpClient& http, const std::string& target, json body, const Headers& headers,
                             const std::function<void(std::string_view)>& on_delta = {});

// "--- 401: Incorrect API key" style one-line description of a failed request.
std::string describe_failure(int status, const std::string& message);

}  // namespace flint::client
