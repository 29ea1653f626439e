// flint/server/router.h — method + path → endpoint, and the endpoints that answer with one JSON body
// (everything except generation). Transport-free, so tests and the fuzzer can call it directly.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace flint::server {

struct ServerState;
struct ApiKey;

enum class Endpoint {
    Health, Metrics, Models, Model,
    ResponsesCreate, ResponsesSocket, ResponseGet, ResponseDelete, ResponseCancel, ResponseInputItems, ResponsesInputTokens,
    ChatCompletions, Completions, AdminLimitsGet, AdminLimitsSet, ModelLoad, ModelUnload,
    NotFound, MethodNotAllowed,
};

struct Route {
    Endpoint endpoint = Endpoint::NotFound;
    std::string id;     // {id} in the path
    bool stream = false;  // the query asks for a stream (stream=true)
};

// `target` may carry a query string: of it only `stream` is looked at (GET /v1/responses/{id}?stream=true,
// a stream resume, is refused rather than answered with JSON the client cannot read as a stream).
Route route(std::string_view method, std::string_view target);
const char* endpoint_name(Endpoint e);  // label for metrics
bool is_generation(Endpoint e);         // ResponsesCreate, ChatCompletions, Completions

struct Reply {
    int status = 200;
    nlohmann::json body;     // JSON replies
    std::string text;        // non-JSON replies (metrics)
    std::string content_type = "application/json";
};

// Answers a non-generation endpoint; throws ApiError.
Reply handle_simple(ServerState& st, const Route& r, const std::string& body, const ApiKey* key);

}  // namespace flint::server
