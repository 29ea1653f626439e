// flint/server/errors.h — protocol errors: an HTTP status plus the OpenAI error body.
//
// Every failure the server reports to a client is an ApiError, thrown from parsing or handling code and
// caught at the session edge, which writes `{"error":{"message","type","param","code"}}` (HTTP) or the
// WebSocket error frame (which also carries `status`). Nothing else escapes a session.
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace flint::server {

struct ApiError {
    int status = 400;
    std::string type = "invalid_request_error";
    std::string code;   // "" → null
    std::string param;  // "" → null
    std::string message;
    double retry_after_s = 0;  // 429 only: when the client may retry
};

ApiError bad_request(std::string message, std::string param = "", std::string code = "");
ApiError not_found(std::string message, std::string param = "", std::string code = "");
ApiError server_error(std::string message);

// {"error":{...}} for HTTP bodies.
nlohmann::json error_body(const ApiError& e);
// {"type":"error","status":…,"error":{...}} for WebSocket frames (PROTOCOL.md §3).
nlohmann::json ws_error_frame(const ApiError& e);

// Random ids: "resp_" + 32 hex digits, etc.
std::string make_id(const char* prefix);

}  // namespace flint::server
