// flint/runtime/runtime.h — one model's engine: admission, scheduling, continuous batching, cancel.
//
// One engine thread per model owns the KV cache, the prefix index and every running sequence. Each step
// batches one decode token for every running sequence (or a block of draft tokens to verify) plus a bounded
// chunk of pending prefill, so a long prompt cannot stall the others. Requests enter through submit()
// from any thread; events come back through the callback, called on the engine thread (keep it short:
// post to your own executor). cancel() takes effect at the next token boundary.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "runtime/request.h"
#include "tensor/dtype.h"
#include "util/error.h"

namespace flint {

struct Model;
class Tokenizer;

// submit() refusals, mapped by the server to protocol errors.
struct OverloadedError : Error { using Error::Error; };          // 503 / 429
struct ContextLengthError : Error { using Error::Error; };       // 400 context_length_exceeded
struct InvalidRequestError : Error { using Error::Error; };      // 400: empty prompt, bad ids or sampling values

struct RuntimeConfig {
    int threads = 0;                  // kernel threads (0: all cores)
    int ctx = 4096;                   // max positions per sequence
    int64_t kv_memory_bytes = 0;      // KV pool size; 0: room for max_running sequences of ctx positions
    DType kv_type = DType::F16;
    int block_size = 16;
    int max_running = 16;             // sequences decoding at once
    int max_queued = 256;             // waiting requests beyond this are refused (overloaded)
    int64_t max_queued_tokens = 1 << 20;  // prompt tokens waiting beyond this are refused
    int prefill_chunk = 64;           // prompt tokens per engine step (all sequences together)
    double aging_ms = 2000;           // a background request waiting this long for admission, or a background
                                      // prefill not served for this long, is scheduled as interactive once
    double background_step_ms = 200;  // > 0: while there is interactive traffic, background prefill chunks are
                                      // sized from the measured cost per token so a step takes about this long
                                      // (bounds an interactive request's wait for the step in flight and its
                                      // time between tokens); 0: prefill_chunk only
    double interactive_window_ms = 5000;  // "interactive traffic": an interactive request queued or running now
                                          // or within this long; without it background chunks are full-size
    bool speculative = true;          // drafts from predictions / prompt lookup (false: neither)
    bool prompt_lookup = true;        // n-gram drafts for requests without a prediction (and once an output
                                      // outruns its prediction); a request can also turn them off for itself
    int max_draft = 16;               // draft tokens verified per step at most
};

struct RuntimeStats {
    int queued = 0;
    int running = 0;
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_used = 0;       // held by sequences or the prefix cache
    int64_t kv_blocks_cached = 0;     // held only by the prefix cache (evictable)
    uint64_t requests_total = 0;
    uint64_t prompt_tokens_total = 0;
    uint64_t cached_tokens_total = 0;
    uint64_t prefilled_tokens_total = 0;  // prompt tokens computed (not reused), counted chunk by chunk
    uint64_t generated_tokens_total = 0;
    uint64_t steps_total = 0;
    // Speculation, by draft source: tokens proposed for verification, and those the model agreed with.
    uint64_t drafted_prediction_total = 0, accepted_prediction_total = 0;
    uint64_t drafted_lookup_total = 0, accepted_lookup_total = 0;
};

class Runtime {
public:
    using Callback = std::function<void(const Event&)>;

    Runtime(std::shared_ptr<const Model> model, std::shared_ptr<const Tokenizer> tok, RuntimeConfig cfg);
    ~Runtime();  // cancels everything still running, joins the engine thread
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // Queues a request. Throws ContextLengthError, InvalidRequestError or OverloadedError (nothing is queued then).
    // Returns the request id used in its events and by cancel().
    uint64_t submit(GenerationRequest req, Callback on_event);
    // Stops a request at the next token boundary; it finishes with FinishReason::Cancelled and its partial
    // output (and KV, for a follow-up) kept. Unknown or finished ids are ignored; returns whether it was live.
    bool cancel(uint64_t request_id);
    // Cancels every request and waits until none is running (graceful shutdown).
    void drain();
    // Takes the engine out of service (a model being unloaded): submit() refuses from now on, every queued
    // or running request finishes with FinishReason::Error and `reason` at the next token boundary, and
    // this returns once none is left. The engine thread itself ends with the destructor.
    void close(const std::string& reason);

    RuntimeStats stats() const;
    // Sequences running as of the last step (one atomic load: cheap enough for every event).
    int running() const;
    const RuntimeConfig& config() const { return cfg_; }
    const Model& model() const { return *model_; }
    const Tokenizer& tokenizer() const { return *tok_; }

    // Test hook: called on the engine thread after each step with the ids of the sequences in it.
    std::function<void(const std::vector<uint64_t>&)> on_step;

private:
    struct Impl;
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const Tokenizer> tok_;
    RuntimeConfig cfg_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace flint
