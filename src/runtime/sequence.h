// flint/runtime/sequence.h — the engine's view of one request in flight (engine thread only).
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/request.h"
#include "runtime/stop_matcher.h"
#include "sample/json_schema.h"
#include "sample/sampler.h"
#include "spec/drafter.h"
#include "tokenizer/tokenizer.h"

namespace flint {

using Clock = std::chrono::steady_clock;

// Shared between the submitting thread and the engine: the request and its cancel flag.
struct PendingRequest {
    uint64_t id = 0;
    GenerationRequest req;
    std::function<void(const Event&)> callback;
    Clock::time_point submitted;
    std::atomic<bool> cancelled{false};
    std::string abort_error;          // set before `cancelled` by Runtime::close: finish with this error instead
};

struct Sequence {
    std::shared_ptr<PendingRequest> pending;
    std::vector<int32_t> tokens;      // prompt, then generated tokens
    int n_prompt = 0;
    int n_past = 0;                   // tokens[0, n_past) have their KV written
    std::vector<int32_t> blocks;      // block table (references owned by this sequence)
    std::vector<int32_t> output;      // generated tokens
    Usage usage;
    Timings timings;
    Clock::time_point admitted, first_token;
    Clock::time_point served;         // admitted or last given a prefill chunk: a background prefill ages from here
    std::optional<Sampler> sampler;
    std::optional<StreamDecoder> decoder;
    StopMatcher stops;
    std::optional<PredictionDrafter> prediction;
    std::optional<LookupDrafter> lookup;
    std::optional<AdaptiveLength> draft_len;
    std::optional<JsonSchemaPrefix> json;  // json_object / json_schema requests: the output so far, as JSON
    // The tokens that fit, per recogniser state (JsonSchemaPrefix::signature; a call's marked apart), most
    // recent first: the full-vocabulary pass is costly and states recur (inside a string, after a key, …).
    std::vector<std::pair<std::string, std::vector<bool>>> json_masks;
    std::optional<JsonSchemaPrefix> call;  // inside a tool call (GenerationRequest::call_schema): its JSON so far
    bool call_begun = false;               // the call's JSON has started (before: whitespace may come first)
    bool call_closing = false;             // the call's JSON is complete: whitespace, then the closing token
    int call_whitespace = 0;               // whitespace bytes before the JSON, or after it
    int calls_closed = 0;                  // calls ended by GenerationRequest::call_close
    std::vector<int32_t> drafts;      // proposed for the current step
    bool drafts_from_prediction = false;  // their source: the prediction, or prompt lookup
    bool finished = false;
    FinishReason finish = FinishReason::Length;
    std::string error;

    bool prefilling() const { return n_past < n_prompt; }
    int remaining_prompt() const { return n_prompt - n_past; }
    const GenerationRequest& req() const { return pending->req; }
};

}  // namespace flint
