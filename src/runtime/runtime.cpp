// The engine thread: admit → build a batch (decode tokens, draft blocks, prefill chunks) → forward →
// sample / verify → stream events → retire finished sequences into the prefix cache.
#include "runtime/runtime.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "runtime/sequence.h"
#include "spec/verify.h"
#include "tensor/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace flint {

const char* finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::Length: return "length";
        case FinishReason::Eos: return "eos";
        case FinishReason::Stop: return "stop";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::ContextFull: return "context_full";
        case FinishReason::Prefilled: return "prefilled";
        case FinishReason::Error: return "error";
    }
    return "?";
}

namespace {
double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

struct Runtime::Impl {
    Runtime& rt;
    const Model& model;
    const Tokenizer& tok;
    RuntimeConfig cfg;
    std::unique_ptr<KVCache> kv;
    std::unique_ptr<PrefixCache> cache;
    std::unique_ptr<ThreadPool> pool;
    ForwardScratch scratch;
    std::vector<float> logits;
    std::vector<Sampler::Prepared> rows_prepared;  // a verify step's rows, prepared on every thread
    double ms_per_token = 0;  // the last step's time per token fed (sizes background chunks)
    Clock::time_point last_interactive{};  // last step with an interactive request queued or running

    // Shared with submitting threads (guarded by mu).
    mutable std::mutex mu;
    std::condition_variable cv, idle_cv;
    std::deque<std::shared_ptr<PendingRequest>> incoming;
    std::unordered_map<uint64_t, std::shared_ptr<PendingRequest>> live;
    int64_t queued_tokens = 0;
    bool stopping = false;
    std::string closed_reason;  // set by close(): why submit() refuses
    uint64_t next_id = 1;

    // Requests waiting to run (mu held): the engine's waiting list as of its last step, and what was
    // submitted since, less what was cancelled meanwhile. A client that left must not hold a queue slot
    // until the engine gets to it: on a busy host, or behind a long step, a stream of vanishing clients
    // would otherwise fill the queue and get live ones refused.
    int queued() const {
        int n = n_waiting.load();
        for (const auto& p : incoming) n += !p->cancelled;
        return n;
    }

    // Engine thread only.
    std::vector<std::shared_ptr<PendingRequest>> waiting;
    std::vector<std::unique_ptr<Sequence>> running;

    // Published for stats().
    std::atomic<int> n_waiting{0}, n_running{0};
    std::atomic<int64_t> blocks_used{0}, blocks_cached{0};
    uint64_t counted_version = ~uint64_t(0);  // the prefix cache version blocks_cached was counted at (engine thread)
    std::atomic<uint64_t> requests_total{0}, prompt_total{0}, cached_total{0}, prefilled_total{0}, generated_total{0},
        steps_total{0}, drafted_prediction{0}, accepted_prediction{0}, drafted_lookup{0}, accepted_lookup{0};

    std::thread thread;

    Impl(Runtime& r, const Model& m, const Tokenizer& t, RuntimeConfig c) : rt(r), model(m), tok(t), cfg(c) {
        const ModelConfig& mc = model.config;
        const size_t per_token = KVCache::bytes_per_token(mc.n_layers, mc.kv_dim(), cfg.kv_type);
        int64_t bytes = cfg.kv_memory_bytes > 0 ? cfg.kv_memory_bytes : int64_t(2) << 30;
        int64_t tokens = std::max<int64_t>(bytes / static_cast<int64_t>(per_token), cfg.ctx + cfg.block_size);
        KVConfig kc{mc.n_layers, mc.kv_dim(), cfg.block_size, cfg.kv_type, (tokens + cfg.block_size - 1) / cfg.block_size};
        kv = std::make_unique<KVCache>(kc);
        cache = std::make_unique<PrefixCache>(*kv);
        int threads = cfg.threads > 0 ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
        if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
        thread = std::thread([this] { loop(); });
    }

    ~Impl() {
        {
            std::lock_guard lk(mu);
            stopping = true;
            for (auto& [id, p] : live) p->cancelled = true;
        }
        cv.notify_all();
        thread.join();
    }

    // ---- engine loop -------------------------------------------------------------------------------
    void loop() {
        for (;;) {
            {
                std::unique_lock lk(mu);
                cv.wait(lk, [&] { return stopping || !incoming.empty() || !running.empty() || !waiting.empty(); });
                for (auto& p : incoming) waiting.push_back(std::move(p));
                incoming.clear();
                if (stopping && running.empty() && waiting.empty()) break;
            }
            step();
        }
    }

    // Admission: a background request that has waited aging_ms is admitted like an interactive one.
    bool effectively_interactive(const PendingRequest& p, Clock::time_point now) const {
        return p.req.priority == Priority::Interactive || ms_between(p.submitted, now) >= cfg.aging_ms;
    }
    // Prefill order: interactive prompts before background ones, except that a background prompt that has
    // gone aging_ms without a chunk goes first for one chunk. Aging counts from its last chunk, not from
    // submit: a long background prompt that is being served must not outrank the interactive requests that
    // arrive while it runs (it did, and starved them until its whole prompt was prefilled).
    int prefill_rank(const Sequence& s, Clock::time_point now) const {
        if (s.req().priority == Priority::Interactive) return 1;
        return ms_between(s.served, now) >= cfg.aging_ms ? 0 : 2;
    }

    void emit(Sequence& s, Event& ev) {
        ev.request_id = s.pending->id;
        if (s.pending->callback) s.pending->callback(ev);
    }

    void finish(Sequence& s, FinishReason reason, std::string error = {}) {
        if (s.finished) return;
        s.finished = true;
        s.finish = reason;
        s.error = std::move(error);
    }

    void finish_cancelled(Sequence& s) {
        // abort_error is written before the flag is set (Runtime::close), so it is visible here.
        if (s.pending->abort_error.empty()) finish(s, FinishReason::Cancelled);
        else finish(s, FinishReason::Error, s.pending->abort_error);
    }

    // Emits the final event, hands the KV to the prefix cache, forgets the request. The event goes first: the
    // answer's last token was emitted a moment before, and a consumer woken by it then finds the final event
    // already queued (one wake-up, one write) instead of waiting out the trie walk for a second one. Nothing
    // is lost by the order: the next request is admitted on this thread, after the insert.
    void retire(Sequence& s) {
        auto now = Clock::now();
        Event ev;
        ev.done = true;
        ev.finish = s.finish;
        ev.error = s.error;
        if (s.decoder) {
            std::string rest = s.decoder->flush();
            ev.text = s.stops.stopped() ? "" : s.stops.push(rest) + s.stops.flush();
        }
        s.timings.total_ms = ms_between(s.pending->submitted, now);
        if (!s.output.empty()) s.timings.decode_ms = ms_between(s.first_token, now);
        if (s.prediction) {
            s.prediction->advance(s.output);
            s.usage.accepted_prediction_tokens = s.prediction->matched();
        }
        if (!s.req().prediction.empty())  // OpenAI's definition: prediction tokens that did not appear in the completion
            s.usage.rejected_prediction_tokens =
                std::max(0, static_cast<int>(s.req().prediction.size()) - s.usage.accepted_prediction_tokens);
        ev.usage = s.usage;
        ev.timings = s.timings;
        ev.output = s.output;
        generated_total += s.output.size();
        emit(s, ev);
        // That was the callback's last call. It goes now, before the request leaves `live`: whoever waits in
        // drain() or close() for an idle engine may free what it holds (a server's channel, whose timer lives
        // on the server's I/O context) the moment this returns; it must not be destroyed later with the sequence.
        s.pending->callback = nullptr;
        cache->insert(s.tokens, s.n_past, s.blocks);
        s.blocks.clear();
        std::lock_guard lk(mu);
        live.erase(s.pending->id);
        if (live.empty()) idle_cv.notify_all();
    }

    void admit(std::shared_ptr<PendingRequest> p) {
        auto s = std::make_unique<Sequence>();
        s->pending = std::move(p);
        const GenerationRequest& r = s->pending->req;
        s->admitted = Clock::now();
        s->served = s->admitted;
        s->timings.queued_ms = ms_between(s->pending->submitted, s->admitted);
        s->tokens = r.prompt;
        s->n_prompt = static_cast<int>(r.prompt.size());
        // Reuse the longest cached prefix, always leaving the last prompt token to compute its logits.
        PrefixCache::Match m = cache->acquire(r.prompt, s->n_prompt - 1);
        s->blocks = std::move(m.blocks);
        s->n_past = m.n_tokens;
        s->usage.prompt_tokens = s->n_prompt;
        s->usage.cached_tokens = m.n_tokens;
        s->sampler.emplace(r.sampling, model.config.n_vocab);
        if (r.json_schema) s->json.emplace(r.json_schema);
        if (r.call_schema && !r.call_prefix.empty()) open_call(*s, r.call_prefix);
        s->decoder.emplace(tok);
        s->stops = StopMatcher(r.stop);
        // Lookup also drafts once the output outgrows a prediction.
        if (cfg.speculative && cfg.prompt_lookup && r.prompt_lookup) s->lookup.emplace();
        if (cfg.speculative && !r.prediction.empty()) {
            s->prediction.emplace(r.prediction);
            s->draft_len.emplace(cfg.max_draft, cfg.max_draft);  // predictions are usually good: start long
        } else if (s->lookup) {
            s->draft_len.emplace(4, cfg.max_draft);
        }
        requests_total++;
        prompt_total += s->n_prompt;
        cached_total += m.n_tokens;
        {
            std::lock_guard lk(mu);
            queued_tokens -= s->n_prompt;
        }
        running.push_back(std::move(s));
    }

    // Makes the block table cover positions [0, n). False when the pool cannot supply the blocks.
    bool ensure_blocks(Sequence& s, int n) {
        const int need = (n + cfg.block_size - 1) / cfg.block_size;
        while (static_cast<int>(s.blocks.size()) < need) {
            int32_t b = cache->alloc_block();
            if (b < 0) return false;
            s.blocks.push_back(b);
        }
        return true;
    }

    // Appends one generated token: text, stop conditions, event. Returns false when the sequence finished.
    bool accept_token(Sequence& s, const Sampled& smp, double step_ms) {
        const GenerationRequest& r = s.req();
        if (!r.ignore_eos && tok.is_eog(smp.token)) {
            finish(s, FinishReason::Eos);
            return false;
        }
        s.tokens.push_back(smp.token);
        s.output.push_back(smp.token);
        s.usage.completion_tokens++;
        if (s.output.size() == 1) {
            s.first_token = Clock::now();
            s.timings.first_token_ms = ms_between(s.pending->submitted, s.first_token);
        }
        Event ev;
        ev.token = smp.token;
        ev.text = s.stops.push(s.decoder->push(smp.token));
        ev.logprob = smp.logprob;
        ev.top_logprobs = smp.top;
        ev.step_ms = step_ms;
        emit(s, ev);
        if (r.call_schema && smp.token == r.call_open && !s.call) open_call(s, "");
        if (s.stops.stopped() || (s.json && s.json->complete()) || (r.one_call && s.calls_closed > 0)) finish(s, FinishReason::Stop);
        else if (static_cast<int>(s.output.size()) >= r.max_tokens) finish(s, FinishReason::Length);
        else if (static_cast<int>(s.tokens.size()) >= cfg.ctx) finish(s, FinishReason::ContextFull);
        return !s.finished;
    }

    // Tool calls whose JSON is constrained (GenerationRequest::call_schema). Before the JSON starts, leading
    // whitespace is skipped (Qwen writes "<tool_call>\n{"), at most kMaxWhitespace bytes of it; once the value
    // is complete, whitespace again and the closing token (if the request names one) end the call.
    void open_call(Sequence& s, std::string_view text) {
        s.call.emplace(s.req().call_schema);
        s.call_begun = false;
        s.call_closing = false;
        s.call_whitespace = 0;
        if (!text.empty()) feed_call(s, text);
    }
    static size_t leading_whitespace(std::string_view p) {
        size_t n = 0;
        while (n < p.size() && (p[n] == ' ' || p[n] == '\n' || p[n] == '\r' || p[n] == '\t')) ++n;
        return n;
    }
    bool call_accepts(const Sequence& s, std::string_view p) const {
        if (s.call_closing)
            return leading_whitespace(p) == p.size() && s.call_whitespace + static_cast<int>(p.size()) <= JsonSchemaPrefix::kMaxWhitespace;
        if (!s.call_begun) {
            const size_t ws = leading_whitespace(p);
            if (s.call_whitespace + static_cast<int>(ws) > JsonSchemaPrefix::kMaxWhitespace) return false;
            p.remove_prefix(ws);
            if (p.empty()) return true;
        }
        return s.call->accepts(p);
    }
    void feed_call(Sequence& s, std::string_view p) {
        if (s.call_closing) {
            s.call_whitespace += static_cast<int>(p.size());
            return;
        }
        if (!s.call_begun) {
            const size_t ws = leading_whitespace(p);
            s.call_whitespace += static_cast<int>(ws);
            p.remove_prefix(ws);
            if (p.empty()) return;
            s.call_begun = true;
        }
        s.call->feed(p);
        if (!s.call->complete()) return;
        if (s.req().call_close < 0) {
            s.call.reset();
            return;
        }
        s.call_closing = true;
        s.call_whitespace = 0;
    }

    // The next token of a sequence whose output is constrained: a json_object / json_schema answer, or the
    // JSON of a tool call. Drawn as plain sampling draws it, except that a draw whose bytes cannot continue
    // the JSON text is masked out of the row and drawn again; after a few such refusals every token that
    // cannot continue is masked before the last draw. Control tokens (end of turn included) never fit: an
    // answer ends when the value is complete, a call goes on unconstrained. Nothing fits → the request fails.
    // The one exception, call_open as an answer's first token, lifts the answer's constraint (a call).
    // `drawn`: the row's first draw, already made (a verify step draws as plain sampling does, on the same
    // RNG): it stands if it fits, else the row is drawn again as here — so drafts change nothing.
    Sampled sample_constrained(Sequence& s, float* row, const Sampled* drawn = nullptr) {
        const bool in_call = s.call.has_value();
        const int32_t call = !in_call && s.output.empty() ? s.req().call_open : -1;
        const int32_t close = in_call && s.call_closing ? s.req().call_close : -1;
        auto accepts = [&](std::string_view p) { return in_call ? call_accepts(s, p) : s.json->accepts(p); };
        // `first` (the full pass): which first bytes may come next, filled as met — a token whose first byte
        // may not is out without a closer look (most tokens, where only a few bytes may follow).
        auto fits = [&](int32_t t, std::array<int8_t, 256>* first = nullptr) {
            if ((t == call || t == close) && t >= 0) return true;
            if (t < 0 || t >= tok.n_vocab() || tok.is_special(t)) return false;  // (model rows past the vocab: padding)
            const std::string p = tok.piece(t);
            if (p.empty()) return false;  // (a token that adds nothing is never taken)
            if (first) {
                int8_t& f = (*first)[static_cast<unsigned char>(p[0])];  // 0 unknown, 1 may come next, -1 may not
                if (f == 0) f = accepts(std::string_view(p.data(), 1)) ? 1 : -1;
                if (f < 0) return false;
                if (p.size() == 1) return true;
            }
            return accepts(p);
        };
        constexpr int kRedraws = 8;
        constexpr size_t kMasks = 16;
        Sampled x;
        for (int i = 0; i <= kRedraws; ++i) {
            if (i == kRedraws) {
                // Every token that cannot continue is masked; the set is cached by the recogniser's state
                // (and whether a call may open here, or whether a call's JSON has begun), most recently used first.
                const std::string key = !in_call        ? s.json->signature() + (call >= 0 ? "+call" : "")
                                        : s.call_closing ? "call-close" + std::to_string(s.call_whitespace)
                                        : s.call_begun   ? "call:" + s.call->signature()
                                                         : "call-ws" + std::to_string(s.call_whitespace) + ":" + s.call->signature();
                auto hit = std::find_if(s.json_masks.begin(), s.json_masks.end(), [&](const auto& m) { return m.first == key; });
                if (hit == s.json_masks.end()) {
                    std::array<int8_t, 256> first{};
                    std::vector<bool> fit(model.config.n_vocab);
                    for (int32_t t = 0; t < model.config.n_vocab; ++t) fit[t] = fits(t, &first);
                    s.json_masks.insert(s.json_masks.begin(), {key, std::move(fit)});
                    if (s.json_masks.size() > kMasks) s.json_masks.pop_back();
                } else {
                    std::rotate(s.json_masks.begin(), hit, hit + 1);
                }
                const std::vector<bool>& fit = s.json_masks.front().second;
                for (int32_t t = 0; t < model.config.n_vocab; ++t)
                    if (!fit[t]) row[t] = -std::numeric_limits<float>::infinity();
            }
            x = i == 0 && drawn ? *drawn : s.sampler->sample(row, s.tokens);
            if (fits(x.token)) {
                if (x.token == call) s.json.reset();  // a tool call, not JSON text
                else if (x.token == close) {
                    s.call.reset();
                    ++s.calls_closed;
                }
                else if (in_call) feed_call(s, tok.piece(x.token));
                else s.json->feed(tok.piece(x.token));
                return x;
            }
            row[x.token] = -std::numeric_limits<float>::infinity();
        }
        finish(s, FinishReason::Error, in_call ? "no token can continue the tool call's JSON" : "no token can continue the JSON output");
        return x;
    }

    void propose_drafts(Sequence& s) {
        s.drafts.clear();
        if (!s.draft_len) return;
        const int room = std::min(cfg.ctx - static_cast<int>(s.tokens.size()) - 1,
                                  s.req().max_tokens - static_cast<int>(s.output.size()) - 1);
        const int k = std::min(s.draft_len->next(), room);
        if (k <= 0) return;
        if (s.prediction) {
            // Once the output has run past what the prediction offers (behind()), its own history drafts
            // better: e.g. an output longer than the prediction, or one that lost its place on repetitive text.
            s.prediction->update(s.output);
            if (s.lookup && s.prediction->behind()) {
                s.prediction->skip(s.output);
                s.lookup->propose(s.tokens, k, s.drafts);
                s.drafts_from_prediction = false;
            } else {
                s.prediction->propose(s.output, k, s.drafts);
                s.drafts_from_prediction = true;
            }
        } else if (s.lookup) {
            s.lookup->propose(s.tokens, k, s.drafts);
            s.drafts_from_prediction = false;
        }
    }

    struct Entry {
        Sequence* seq;
        int n;            // tokens fed this step
        bool decode;      // last token + drafts (true) or a prefill chunk
        Logits logits;
    };

    void step() {
        auto now = Clock::now();
        // Cancellation and admission.
        for (auto& p : waiting)
            if (p->cancelled) {
                Sequence s;
                s.pending = p;
                s.usage.prompt_tokens = static_cast<int>(p->req.prompt.size());
                finish_cancelled(s);
                {
                    std::lock_guard lk(mu);
                    queued_tokens -= s.usage.prompt_tokens;
                }
                retire(s);
                p = nullptr;
            }
        std::erase(waiting, nullptr);
        for (auto& s : running)
            if (s->pending->cancelled) finish_cancelled(*s);
        std::stable_sort(waiting.begin(), waiting.end(), [&](const auto& a, const auto& b) {
            return effectively_interactive(*a, now) > effectively_interactive(*b, now);
        });
        size_t admitted = 0;
        while (admitted < waiting.size() && static_cast<int>(running.size()) < cfg.max_running)
            admit(std::move(waiting[admitted++]));
        waiting.erase(waiting.begin(), waiting.begin() + admitted);

        // Batch: every decoding sequence, then prefill chunks within the budget, interactive first.
        std::vector<Entry> entries;
        for (auto& s : running) {
            if (s->finished || s->prefilling()) continue;
            propose_drafts(*s);
            int n = 1 + static_cast<int>(s->drafts.size());
            if (!ensure_blocks(*s, s->n_past + n)) {
                s->drafts.clear();
                n = 1;
                if (!ensure_blocks(*s, s->n_past + 1)) {
                    finish(*s, FinishReason::Error, "KV memory exhausted (raise --kv-memory)");
                    continue;
                }
            }
            entries.push_back({s.get(), n, true, s->drafts.empty() ? Logits::Last : Logits::All});
        }
        std::vector<Sequence*> pre;
        for (auto& s : running)
            if (!s->finished && s->prefilling()) pre.push_back(s.get());
        std::stable_sort(pre.begin(), pre.end(),
                         [&](Sequence* a, Sequence* b) { return prefill_rank(*a, now) < prefill_rank(*b, now); });
        int budget = std::max(1, cfg.prefill_chunk);
        int decode_tokens = 0;
        for (const Entry& e : entries) decode_tokens += e.n;
        auto interactive = [](const GenerationRequest& r) { return r.priority == Priority::Interactive; };
        if (std::any_of(running.begin(), running.end(), [&](const auto& s) { return interactive(s->req()); }) ||
            std::any_of(waiting.begin(), waiting.end(), [&](const auto& p) { return interactive(p->req); }))
            last_interactive = now;
        int background = background_budget(decode_tokens, now);
        for (Sequence* s : pre) {
            if (budget <= 0) break;
            const bool is_background = s->req().priority == Priority::Background;
            int n = std::min({budget, s->remaining_prompt(), is_background ? background : budget});
            if (n <= 0) continue;
            if (!ensure_blocks(*s, s->n_past + n)) {
                if (entries.empty()) finish(*s, FinishReason::Error, "KV memory exhausted (raise --kv-memory)");
                continue;  // wait for blocks to come back
            }
            const bool completes = s->n_past + n == s->n_prompt;
            entries.push_back({s, n, false, completes ? Logits::Last : Logits::None});
            s->served = now;
            budget -= n;
            if (is_background) background -= n;
        }

        if (!entries.empty()) run_batch(entries);

        // Retire finished sequences.
        for (auto& s : running)
            if (s->finished) retire(*s);
        std::erase_if(running, [](const auto& s) { return s->finished; });
        publish_stats();
    }

    // Background prefill tokens this step may take: all of prefill_chunk, or, with background_step_ms and
    // interactive traffic, as many as fit in that time at the last step's cost per token after the decode
    // tokens (at least one, so a background prompt always advances).
    int background_budget(int decode_tokens, Clock::time_point now) const {
        if (cfg.background_step_ms <= 0 || ms_per_token <= 0 || last_interactive == Clock::time_point{} ||
            ms_between(last_interactive, now) > cfg.interactive_window_ms)
            return cfg.prefill_chunk;
        const int fit = static_cast<int>(cfg.background_step_ms / ms_per_token) - decode_tokens;
        return std::clamp(fit, 1, std::max(1, cfg.prefill_chunk));
    }

    void run_batch(std::vector<Entry>& entries) {
        std::vector<SeqBatch> batch;
        batch.reserve(entries.size());
        for (Entry& e : entries) {
            Sequence& s = *e.seq;
            if (e.decode) {
                // The last sampled token, then the drafts, written after it in the token history for the
                // forward pass only (they are removed again below).
                s.tokens.insert(s.tokens.end(), s.drafts.begin(), s.drafts.end());
            }
            batch.push_back({std::span<const int32_t>(s.tokens).subspan(s.n_past, e.n), s.n_past, s.blocks, e.logits});
        }
        logits.resize(static_cast<size_t>(logits_rows(batch)) * model.config.n_vocab);
        auto t0 = Clock::now();
        forward(model, batch, *kv, scratch, pool.get(), logits.data());
        const double step_ms = ms_between(t0, Clock::now());
        int batch_tokens = 0;  // tokens fed to this step, all entries together
        for (const Entry& e : entries) batch_tokens += e.n;
        steps_total++;
        ms_per_token = step_ms / batch_tokens;
        std::vector<uint64_t> ids;
        size_t row = 0;
        const size_t V = model.config.n_vocab;
        for (Entry& e : entries) {
            Sequence& s = *e.seq;
            ids.push_back(s.pending->id);
            s.timings.compute_ms += step_ms;
            s.timings.steps++;
            if (!e.decode) {
                s.n_past += e.n;
                prefilled_total += e.n;
                if (s.prefilling()) continue;
                s.timings.prefill_ms = ms_between(s.admitted, Clock::now());
                if (!s.req().generate) {
                    finish(s, FinishReason::Prefilled);
                    ++row;
                    continue;
                }
                const Sampled first = s.json || s.call ? sample_constrained(s, &logits[row * V]) : s.sampler->sample(&logits[row * V], s.tokens);
                if (!s.finished) accept_token(s, first, step_ms);
                ++row;
                continue;
            }
            // Decode with k drafts: rows 0..k verify them in order.
            const int k = static_cast<int>(s.drafts.size());
            s.tokens.resize(s.tokens.size() - k);
            s.n_past += 1;
            int accepted = 0;
            // The rows' passes over the vocabulary (argmax, exponentials) on every thread at once; the
            // draws stay in order below. Not with penalties: a row's depend on the drafts accepted before it.
            const bool prepared = k > 0 && pool && s.sampler->preparable(s.tokens);
            if (prepared) {
                if (rows_prepared.size() < size_t(k + 1)) rows_prepared.resize(size_t(k + 1));
                const Sampler& smp = *s.sampler;
                pool->parallel_for(k + 1, [&](int64_t a, int64_t b) {
                    for (int64_t j = a; j < b; ++j) smp.prepare(&logits[(row + size_t(j)) * V], rows_prepared[size_t(j)]);
                });
            }
            for (int j = 0; j <= k; ++j) {
                const int32_t draft = j < k ? s.drafts[j] : -1;
                // Sampled exactly as plain decoding would, the draft accepted iff it is that token.
                Verdict v = prepared ? verify_position(*s.sampler, rows_prepared[size_t(j)], draft)
                                     : verify_position(*s.sampler, &logits[(row + j) * V], s.tokens, draft);
                if (s.json || s.call) {  // constrained output: the draw stands if it fits, else the row is drawn again
                    v.chosen = sample_constrained(s, &logits[(row + j) * V], &v.chosen);
                    if (s.finished) break;
                    v.accepted = draft >= 0 && v.chosen.token == draft;
                }
                const bool match = v.accepted;
                if (!accept_token(s, v.chosen, step_ms)) {
                    if (match) ++accepted;
                    break;
                }
                if (!match) break;
                ++accepted;
                s.n_past += 1;  // the draft's KV at this position is the accepted token's
            }
            (s.drafts_from_prediction ? drafted_prediction : drafted_lookup) += k;
            (s.drafts_from_prediction ? accepted_prediction : accepted_lookup) += accepted;
            // A re-synchronisation probe's outcome says nothing about how good the prediction is; its cost
            // (like every step's) feeds the length controller's cost model.
            if (s.draft_len) s.draft_len->observe_step(batch_tokens, step_ms);
            if (s.draft_len && k > 0 && !(s.prediction && s.prediction->probing())) s.draft_len->update(k, accepted);
            row += e.logits == Logits::All ? e.n : 1;
        }
        if (rt.on_step) rt.on_step(ids);
    }

    void publish_stats() {
        n_waiting = static_cast<int>(waiting.size());
        n_running = static_cast<int>(running.size());
        blocks_used = kv->used_blocks();
        if (cache->version() != counted_version) {  // a walk of the whole trie: only after it changed
            counted_version = cache->version();
            blocks_cached = cache->cached_blocks();
        }
    }
};

Runtime::Runtime(std::shared_ptr<const Model> model, std::shared_ptr<const Tokenizer> tok, RuntimeConfig cfg)
    : model_(std::move(model)), tok_(std::move(tok)), cfg_(cfg) {
    if (cfg_.ctx <= 1) fail("runtime: context length ", cfg_.ctx, " is too small");
    if (cfg_.max_running < 1) fail("runtime: max_running must be at least 1");
    impl_ = std::make_unique<Impl>(*this, *model_, *tok_, cfg_);
}

Runtime::~Runtime() { impl_.reset(); }

uint64_t Runtime::submit(GenerationRequest req, Callback on_event) {
    const int n = static_cast<int>(req.prompt.size());
    auto invalid = [](const std::string& m) { throw InvalidRequestError(m); };
    if (n == 0) invalid("the prompt is empty: nothing to continue from");
    if (n >= cfg_.ctx) {
        // Servers default to at most 4k of a model's context; say when the model itself takes more.
        const int trained = model_->config.ctx_train;
        throw ContextLengthError("the prompt is " + std::to_string(n) + " tokens but the context is " + std::to_string(cfg_.ctx) +
                                 " tokens" +
                                 (trained > cfg_.ctx ? " (the model takes up to " + std::to_string(trained) +
                                                           ": a longer context can be configured, e.g. flint serve --ctx)"
                                                     : std::string()));
    }
    if (static_cast<int64_t>(n) + cfg_.block_size > impl_->kv->n_blocks() * cfg_.block_size)
        throw ContextLengthError("the prompt is " + std::to_string(n) + " tokens but the KV memory holds " +
                                 std::to_string(impl_->kv->n_blocks() * cfg_.block_size));
    const int V = model_->config.n_vocab;
    for (int32_t t : req.prompt)
        if (t < 0 || t >= V) invalid("token id " + std::to_string(t) + " is outside the vocabulary (" + std::to_string(V) + ")");
    for (int32_t t : req.prediction)
        if (t < 0 || t >= V) invalid("prediction token id " + std::to_string(t) + " is outside the vocabulary");
    if (req.max_tokens < 0) invalid("max_tokens must be >= 0, got " + std::to_string(req.max_tokens));
    try {
        Sampler probe(req.sampling, V);  // validates the parameters now, not on the engine
    } catch (const Error& e) {
        invalid(e.what());
    }
    auto p = std::make_shared<PendingRequest>();
    p->req = std::move(req);
    p->callback = std::move(on_event);
    p->submitted = Clock::now();
    {
        std::lock_guard lk(impl_->mu);
        if (impl_->stopping)
            throw OverloadedError(impl_->closed_reason.empty() ? "the model is shutting down" : impl_->closed_reason);
        const int queued = impl_->queued();
        if (queued >= cfg_.max_queued)
            throw OverloadedError("overloaded: " + std::to_string(queued) + " requests are already waiting");
        if (impl_->queued_tokens + n > cfg_.max_queued_tokens)
            throw OverloadedError("overloaded: " + std::to_string(impl_->queued_tokens) + " prompt tokens are already waiting");
        impl_->queued_tokens += n;
        p->id = impl_->next_id++;
        impl_->live.emplace(p->id, p);
        impl_->incoming.push_back(p);
    }
    impl_->cv.notify_one();
    return p->id;
}

bool Runtime::cancel(uint64_t id) {
    {
        std::lock_guard lk(impl_->mu);
        auto it = impl_->live.find(id);
        if (it == impl_->live.end()) return false;
        it->second->cancelled = true;
    }
    impl_->cv.notify_one();
    return true;
}

void Runtime::drain() {
    std::unique_lock lk(impl_->mu);
    for (auto& [id, p] : impl_->live) p->cancelled = true;
    impl_->cv.notify_one();
    impl_->idle_cv.wait(lk, [&] { return impl_->live.empty(); });
}

void Runtime::close(const std::string& reason) {
    std::unique_lock lk(impl_->mu);
    impl_->stopping = true;
    impl_->closed_reason = reason;
    for (auto& [id, p] : impl_->live) {
        if (p->cancelled) continue;  // already on its way out as cancelled
        p->abort_error = reason;
        p->cancelled = true;
    }
    impl_->cv.notify_one();
    impl_->idle_cv.wait(lk, [&] { return impl_->live.empty(); });
}

int Runtime::running() const { return impl_->n_running; }

RuntimeStats Runtime::stats() const {
    RuntimeStats s;
    {
        std::lock_guard lk(impl_->mu);
        s.queued = impl_->queued();
    }
    s.running = impl_->n_running;
    s.kv_blocks_total = impl_->kv->n_blocks();
    s.kv_blocks_used = impl_->blocks_used;
    s.kv_blocks_cached = impl_->blocks_cached;
    s.requests_total = impl_->requests_total;
    s.prompt_tokens_total = impl_->prompt_total;
    s.cached_tokens_total = impl_->cached_total;
    s.prefilled_tokens_total = impl_->prefilled_total;
    s.generated_tokens_total = impl_->generated_total;
    s.steps_total = impl_->steps_total;
    s.drafted_prediction_total = impl_->drafted_prediction;
    s.accepted_prediction_total = impl_->accepted_prediction;
    s.drafted_lookup_total = impl_->drafted_lookup;
    s.accepted_lookup_total = impl_->accepted_lookup;
    return s;
}

}  // namespace flint
