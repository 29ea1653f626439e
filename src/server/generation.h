// flint/server/generation.h — request structs → what the engine runs (GenerationRequest), transport-free.
//
// Shared by the HTTP and WebSocket sessions: model lookup and key checks, the prompt (conversation.h),
// sampling defaults, context-length checks, and where a continuation's history comes from.
#pragma once
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/request.h"
#include "server/chat_completions_api.h"
#include "server/conversation.h"
#include "server/responses_api.h"

namespace flint::server {

struct ServerState;
struct ModelEntry;
struct ApiKey;

// Per WebSocket connection: the most recent responses' token histories (also for store:false), so a
// continuation needs neither the store nor re-tokenisation. Small: clients chain from the latest turn.
class ConnectionCache {
public:
    void put(const std::string& id, History h);
    const History* find(const std::string& id) const;

private:
    std::deque<std::pair<std::string, History>> entries_;  // most recent last
};

struct PreparedResponse {
    std::shared_ptr<ModelEntry> model;  // held until the response is done (the model may be unloaded meanwhile)
    ResponseRecord rec;
    GenerationRequest gen;
};

// Throws ApiError: unknown model (404 model_not_found), key not allowed (403), previous response not found
// (400 previous_response_not_found), context too long (400 context_length_exceeded), bad input (400).
PreparedResponse prepare_response(ServerState& st, ResponsesRequest req, const ApiKey* key, const ConnectionCache* cache);

// POST /v1/responses/input_tokens: how many tokens the request's prompt would be — the prompt
// prepare_response builds (history, instructions, tools, a forced call's start; truncation "auto" applied),
// counted even when it is longer than the context. Throws as prepare_response does, but never for length.
int64_t count_input_tokens(ServerState& st, ResponsesRequest req, const ApiKey* key);

struct PreparedCompletion {
    std::shared_ptr<ModelEntry> model;
    GenerationRequest gen;
    std::string forced_prefix;  // chat: tool_choice's start of a call, already in gen.prompt
};
PreparedCompletion prepare_chat(ServerState& st, const ChatRequest& req, const ApiKey* key);
PreparedCompletion prepare_completion(ServerState& st, const CompletionRequest& req, const ApiKey* key);

std::shared_ptr<ModelEntry> resolve_model(ServerState& st, const std::string& name, const ApiKey* key);

// Counts a finished generation in the metrics and the caller's token bucket.
void account(ServerState& st, const ApiKey* key, const Usage& u);

// Refreshes a live response's snapshot (what GET /v1/responses/{id} shows while it generates) at most every
// 100 ms: building it costs as much as the text so far. Call after the token events are written (it is
// bookkeeping no client waits for), not between a token and its delivery.
class LiveRefresh {
public:
    LiveRefresh(ServerState& st, std::string id) : st_(st), id_(std::move(id)) {}
    void operator()(const ResponseEvents& events);

private:
    ServerState& st_;
    std::string id_;
    std::chrono::steady_clock::time_point next_{};
};

// The Server-Timing header value for a finished generation (README, "Server-Timing").
std::string server_timing(const Timings& t, double parse_ms);

}  // namespace flint::server
