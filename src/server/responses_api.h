// flint/server/responses_api.h — the Responses API at the edge: request JSON → native struct, the
// response object, and the streaming event state machine (PROTOCOL.md §1–§3). Transport-free: HTTP (JSON
// or SSE) and WebSocket sessions feed it runtime events and write what it returns.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/request.h"
#include "server/conversation.h"
#include "server/tool_stream.h"

namespace flint {
class Tokenizer;
}

namespace flint::server {

using json = nlohmann::json;

struct ResponsesRequest {
    std::string model;
    std::vector<InputItem> input;
    json input_json = json::array();   // the items as given, for GET …/input_items
    std::optional<std::string> instructions;
    std::string previous_response_id;
    std::shared_ptr<const JsonSchema> format;  // text.format json_object / json_schema (null: text)
    bool store = true;
    bool background = false;            // answer at once, generate on without the client (needs store)
    bool stream = false;
    bool generate = true;               // WebSocket warm-up: false
    std::optional<int64_t> max_output_tokens;
    std::optional<double> temperature;
    std::optional<double> top_p;
    int top_logprobs = 0;
    bool include_logprobs = false;     // include has "message.output_text.logprobs" (or top_logprobs > 0)
    std::optional<uint64_t> seed;       // extension
    json tools = json::array();
    json tool_choice = "auto";
    bool parallel_tool_calls = true;
    std::string truncation = "disabled";
    json metadata = json::object();
    std::string service_tier = "auto";
    json text = {{"format", {{"type", "text"}}}};
    json reasoning = nullptr;
    std::string prompt_cache_key;
    std::string user;
    std::optional<std::string> prediction;  // extension: predicted output text
    bool stream_timestamps = false;         // extension: engine timestamps on text deltas (see response_object)
};

// Throws ApiError (400 naming the param) for wrong types and invalid values; unknown fields are ignored.
ResponsesRequest parse_responses_request(const json& body);
// Shared by the Responses and Chat Completions parsers: `prediction: {type:"content", content}`.
std::optional<std::string> parse_prediction(const json& body);

// Everything a response object is built from; also what the store keeps.
struct ResponseRecord {
    std::string id;
    int64_t created_at = 0;
    int64_t completed_at = 0;   // 0 → null
    std::string status = "in_progress";
    std::string model;
    json output = json::array();
    json usage = nullptr;
    json error = nullptr;
    json incomplete_details = nullptr;
    ResponsesRequest req;       // echoed fields
    std::vector<int32_t> history;  // prompt + output tokens (continuations start from here)
    Timings timings;
    // Server-side times around the engine's (extension "timings" on the finished response object):
    double prepare_ms = -1;     // request received → handed to the engine (parse, validate, tokenise)
    int64_t received_us = 0;    // monotonic µs when the request was received (stream_timestamps only)
    int64_t finished_us = 0;    // monotonic µs when the engine emitted the final event (stream_timestamps only)
    std::string forced_prefix;  // tool_choice: the call's start written for the model (in the prompt; not stored)
};

// The response object (PROTOCOL.md §1). Once finished it also carries the flint extension `timings`:
// {queued_ms, prefill_ms, first_token_ms, decode_ms, total_ms, compute_ms, steps, prepare_ms} — the engine's
// own times for this request (runtime/request.h) plus the server's preparation before it — and with
// stream_timestamps, received_us/finished_us on the server's monotonic clock. SDKs ignore unknown fields.
json response_object(const ResponseRecord& r);
// The text of the members that stay fixed once a response is prepared (its id, model, the request's
// parameters), run by run between the members that change as it runs (status, output, usage …).
struct FixedMembers {
    std::vector<std::string> runs;
};
// The same object's text, exactly as dump(response_object(r)) writes it, without building the object (the
// terminal event's, on the way from the engine to the client; its members' own values are dumped as they are).
// With `fixed`: its first use keeps the fixed members' text, later ones write it from there, so the terminal
// event makes and dumps only the changing members (the fixed ones must not change in between).
void append_response_object(std::string& out, const ResponseRecord& r, FixedMembers* fixed = nullptr);
json responses_usage(const Usage& u);
// Item ids are added where the client omitted them (input_items lists them).
json input_items_with_ids(const json& items);

// One streamed event, serialized once: its type (SSE's `event:` line) and its JSON text (the `data:` line,
// or the WebSocket frame).
struct WireEvent {
    std::string type;
    std::string data;
};

// The event state machine of one response. Every method appends events (with type and an increasing
// sequence_number) to `out`; the caller writes them as SSE events or WebSocket frames.
class ResponseEvents {
public:
    ResponseEvents(ResponseRecord& rec, const Tokenizer& tok);
    void start(std::vector<WireEvent>& out);                    // response.created, response.in_progress
    // Output items and text deltas. `t_us`: when the engine emitted the token (monotonic µs); with
    // stream_timestamps each delta carries it as "t_us" (flint extension).
    void token(const Event& ev, std::vector<WireEvent>& out, int64_t t_us = 0);
    // The final event: closes open items, fills rec (status, output, usage, history, timings) and appends
    // the terminal event (response.completed / .incomplete / .failed). The prompt becomes the start of
    // rec.history: callers move it in (a long conversation's tokens are not copied on the way out).
    void finish(const Event& ev, std::vector<int32_t> prompt, std::vector<WireEvent>& out, int64_t t_us = 0);
    // The response object while it generates: in_progress, with the message's text so far (a call being
    // written is not shown until it is complete).
    json partial() const;

private:
    json ev(const char* type);
    static void push(json e, std::vector<WireEvent>& out);  // serializes e
    // Appends ,"sequence_number":N, then `tail` (the members whose keys sort between the two, e.g. ,"text":…),
    // then ,"type":"TYPE"} to an event written out directly (keys in dump()'s order), and queues it.
    void close_event(std::string& e, const char* type, std::vector<WireEvent>& out, std::string_view tail = {});
    // {"response": the response object as it stands, written with fixed_} as a `type` event.
    void response_event(const char* type, std::vector<WireEvent>& out);
    json text_part() const;                       // the message's output_text part, as it stands
    json message_item(const char* status) const;  // the message item holding it
    void open_message(std::vector<WireEvent>& out);
    void emit_text(const std::string& delta, std::vector<WireEvent>& out, int64_t t_us);

    ResponseRecord& rec_;
    const Tokenizer& tok_;
    FixedMembers fixed_;         // written by start(), reused by finish()
    int64_t seq_ = 0;
    bool tools_ = false;         // tools given: watch for <tool_call>
    bool message_open_ = false;
    ToolCallStream calls_;       // with tools: the text to show, the calls to parse
    std::string msg_id_;
    std::string text_;           // visible text so far
    json logprobs_ = json::array();
    LogprobQueue pending_lp_;    // entries of tokens whose text is not shown yet
};

json token_logprobs(const Tokenizer& tok, const Event& ev);
// A token's bytes for logprobs, "" for an id outside the vocabulary (a model's padding rows).
std::string token_piece(const Tokenizer& tok, int32_t id);

}  // namespace flint::server
