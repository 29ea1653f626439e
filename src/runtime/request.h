// flint/runtime/request.h — what the runtime is asked to do and what it reports back. Native structs only:
// the server translates JSON to these at its edge, the engine never sees JSON.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sample/json_schema.h"
#include "sample/sampler.h"

namespace flint {

enum class Priority { Interactive = 0, Background = 1 };  // service_tier "priority"/default vs "flex"

enum class FinishReason {
    Length,       // max_tokens reached
    Eos,          // the model ended its turn (EOS/EOT)
    Stop,         // a stop sequence matched
    Cancelled,    // cancel() or the client went away
    ContextFull,  // the sequence reached the context length
    Prefilled,    // generate=false: prompt prefilled, nothing generated
    Error,        // see Event::error
};
const char* finish_reason_name(FinishReason r);

struct GenerationRequest {
    std::vector<int32_t> prompt;          // the whole token history to continue (cached prefixes are reused)
    SamplingParams sampling;
    int max_tokens = 256;                 // tokens to generate at most
    std::vector<std::string> stop;        // stop sequences (not emitted)
    bool ignore_eos = false;
    Priority priority = Priority::Interactive;
    bool generate = true;                 // false: warm-up, prefill the prompt into the KV and finish
    std::vector<int32_t> prediction;      // predicted output tokens (speculative drafts), may be empty
    bool prompt_lookup = true;            // draft from n-gram matches when there is no prediction, or once
                                          // the output has run past the prediction (PredictionDrafter::behind)
    std::shared_ptr<const JsonSchema> json_schema;  // set: the output must be JSON that fits it (JsonSchema::
                                          // any_object() for "json_object"): constrained sampling (drafts are
                                          // kept only where the draw they match fits, so they change nothing);
                                          // the answer ends (Stop) when the value is complete
    // Tool calls: after call_open (<tool_call>), leading whitespace and then the call's JSON must fit
    // call_schema (constrained as json_schema is) until the value is complete; then, with a
    // call_close token (</tool_call>), whitespace and that token; then sampling is free again (the model may
    // call again), unless one_call: then the answer ends (Stop) there (parallel_tool_calls: false).
    // call_prefix: the call's text the prompt already ends with (a forced tool_choice writes the opener and
    // the start of the object), so the output starts inside a call. With json_schema, call_open is also
    // allowed as the answer's first token, which then goes on as a call instead of JSON.
    std::shared_ptr<const JsonSchema> call_schema;
    int32_t call_open = -1;
    int32_t call_close = -1;
    bool one_call = false;
    std::string call_prefix;
    std::string tag;                      // free text for logs and metrics (e.g. the response id)
};

struct Usage {
    int prompt_tokens = 0;
    int cached_tokens = 0;                // prompt tokens whose KV was reused, not prefilled
    int completion_tokens = 0;
    int accepted_prediction_tokens = 0;   // prediction tokens that appeared in the output (aligned, in order)
    int rejected_prediction_tokens = 0;   // prediction tokens that did not make it into the output
                                          // (OpenAI's definition: accepted + rejected = prediction length)
};

struct Timings {
    double queued_ms = 0;       // submit → admitted (KV assigned)
    double prefill_ms = 0;      // admitted → prompt prefilled
    double first_token_ms = 0;  // submit → first token produced
    double decode_ms = 0;       // first token → last token
    double total_ms = 0;        // submit → finished
    double compute_ms = 0;      // time spent inside forward passes that included this sequence
    int steps = 0;              // engine steps this sequence took part in
};

// One streamed update. Token events carry a text delta (valid UTF-8, possibly empty while a multi-byte
// character or a possible stop sequence is held back); the final event has done = true.
struct Event {
    uint64_t request_id = 0;
    bool done = false;
    // Token events:
    int32_t token = -1;
    std::string text;
    float logprob = 0;
    std::vector<TokenProb> top_logprobs;  // id and logprob
    double step_ms = 0;                   // engine time of the step that produced this token
    // Final event:
    FinishReason finish = FinishReason::Length;
    std::string error;                    // for FinishReason::Error
    Usage usage;
    Timings timings;
    std::vector<int32_t> output;          // every generated token (the history to chain the next turn)
};

}  // namespace flint
