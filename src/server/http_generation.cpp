// The generating HTTP endpoints: POST /v1/responses, /v1/chat/completions, /v1/completions — as one JSON
// body, or as a Server-Sent Events stream (chunked transfer, one chunk per batch of events, TCP_NODELAY).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "server/event_channel.h"
#include "server/generation.h"
#include "server/http_context.h"
#include "server/json_fields.h"
#include "server/state.h"
#include "server/tool_stream.h"
#include "tokenizer/tokenizer.h"

namespace flint::server {
namespace {

using Clock = std::chrono::steady_clock;

int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Queues the request on the engine; engine refusals become protocol errors before anything is written.
uint64_t submit(Runtime& rt, const GenerationRequest& gen, EventChannel& chan) {
    try {
        return rt.submit(gen, chan.callback());
    } catch (const ContextLengthError& e) {
        throw bad_request(e.what(), "input", "context_length_exceeded");
    } catch (const InvalidRequestError& e) {
        throw bad_request(e.what(), "", "invalid_value");
    } catch (const OverloadedError& e) {
        throw ApiError{503, "server_error", "server_overloaded", "", std::string("The server is overloaded: ") + e.what() +
                                                                         " Please retry shortly."};
    }
}

// Tracks one in-flight generation: live registry (cancel endpoint, GET), in-flight gauge.
struct InFlight {
    ServerState& st;
    std::string id;
    InFlight(ServerState& s, std::string i, LiveResponse l) : st(s), id(std::move(i)) {
        ++st.metrics.in_flight;
        if (!id.empty()) st.add_live(id, std::move(l));
    }
    // Before the final reply: a client that GETs the response right after must find the stored one.
    void finish() {
        if (done) return;
        done = true;
        --st.metrics.in_flight;
        if (!id.empty()) st.remove_live(id);
    }
    ~InFlight() { finish(); }
    bool done = false;
};

// The open SSE response: header once, then chunks. A failed write marks the client gone (and cancels).
struct SseWriter {
    HttpContext& c;
    bool gone = false;

    net::awaitable<void> begin() {
        http::response<http::empty_body> res{http::status::ok, c.req.version()};
        res.set(http::field::server, "flint");
        res.set(http::field::content_type, "text/event-stream; charset=utf-8");
        res.set(http::field::cache_control, "no-cache");
        res.set("x-request-id", c.request_id);
        // The header leaves before generation: it can only time the parse. The complete Server-Timing
        // (queue, prefill, ttft, decode, total) follows as a trailer after the last chunk.
        res.set("Server-Timing", "parse;dur=" + std::to_string(c.elapsed_ms()));
        res.set(http::field::trailer, "Server-Timing");
        for (auto& [k, v] : c.headers) res.set(k, v);
        res.keep_alive(c.keep_alive);
        res.chunked(true);
        http::response_serializer<http::empty_body> sr{res};
        c.closed = true;  // from here on an error cannot become an HTTP error reply
        c.st.metrics.request(c.endpoint, 200);
        arm();
        boost::system::error_code ec;
        co_await http::async_write_header(c.stream, sr, net::redirect_error(net::use_awaitable, ec));
        gone = static_cast<bool>(ec);
    }
    net::awaitable<void> chunk(const std::string& data) {
        if (gone || data.empty()) co_return;
        arm();
        boost::system::error_code ec;
        co_await net::async_write(c.stream, http::make_chunk(net::buffer(data)), net::redirect_error(net::use_awaitable, ec));
        gone = static_cast<bool>(ec);
    }
    net::awaitable<void> end(const std::string& timing) {
        if (gone) co_return;
        arm();
        http::fields trailer;
        trailer.set("Server-Timing", timing);
        boost::system::error_code ec;
        co_await net::async_write(c.stream, http::make_chunk_last(trailer), net::redirect_error(net::use_awaitable, ec));
        gone = static_cast<bool>(ec);
        if (!gone) c.closed = !c.keep_alive;  // a finished stream leaves the connection reusable
    }
    void arm() {
        c.stream.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.st.cfg.write_timeout_s)));
    }
};

// Notices a client that goes away while its response is generated (the socket becomes readable with EOF
// or an error), and cancels the generation at once — without it a vanished client would only be noticed at
// the next write, and abandoned requests would keep their place in the engine queue. It peeks one byte
// asynchronously (nothing consumed, no stream timeout); pipelined request bytes end the watch without a cancel.
//
// The peek must be asynchronous: readiness from the reactor can be stale (an edge-triggered EPOLLIN left over
// from request bytes Beast already read speculatively), and a synchronous receive on an Asio socket then
// polls until data arrives — blocking this I/O thread and the session's strand until the client gives up.
// That is the stream that "never ended" with 2 I/O threads (tests/server/stream_end_test.cpp).
class ClientWatch {
public:
    ClientWatch(HttpContext& c, Runtime& rt, std::vector<uint64_t> rids) : c_(c) {
        state_ = std::make_shared<State>();
        state_->signal = std::make_shared<Signal>(c.stream.get_executor());
        state_->running = true;
        net::co_spawn(c.stream.get_executor(), watch(c.stream.socket(), state_, &rt, std::move(rids), &c.st.metrics), net::detached);
    }
    bool gone() const { return state_->gone; }
    // A failed write found the client gone first: the watch must not cancel and count it again.
    void mark_gone() { state_->gone = true; }
    // Ends the watch before the socket is used for anything else (the next request, a reply).
    net::awaitable<void> stop() {
        state_->stop = true;  // the watch may not have started yet: it checks this first
        if (state_->running) {
            boost::system::error_code ec;
            c_.stream.socket().cancel(ec);
            while (state_->running) co_await state_->signal->wait();
        }
    }

private:
    struct State {
        std::shared_ptr<Signal> signal;
        bool running = false;
        bool gone = false;
        bool stop = false;
    };
    static net::awaitable<void> watch(tcp::socket& sock, std::shared_ptr<State> st, Runtime* rt, std::vector<uint64_t> rids, Metrics* m) {
        if (!st->stop) {
            char b;
            boost::system::error_code ec;
            co_await sock.async_receive(net::buffer(&b, 1), tcp::socket::message_peek,
                                        net::redirect_error(net::use_awaitable, ec));
            // Bytes (a pipelined request) end the watch quietly; EOF or a reset means the client is gone.
            if (!st->stop && !st->gone && ec && ec != net::error::operation_aborted) {
                st->gone = true;
                for (uint64_t rid : rids) rt->cancel(rid);
                if (!rids.empty()) ++m->disconnects;  // (none: a background response, which goes on)
            }
        }
        st->running = false;
        st->signal->notify();
    }
    HttpContext& c_;
    std::shared_ptr<State> state_;
};

std::string sse_events(const std::vector<WireEvent>& events) {
    std::string s;
    for (const WireEvent& e : events) s.append("event: ").append(e.type).append("\ndata: ").append(e.data).append("\n\n");
    return s;
}

void store_if_asked(ServerState& st, const ResponseRecord& rec) {
    if (!rec.req.store) return;
    try {
        st.put(rec);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "flint: warning: could not store %s: %s\n", rec.id.c_str(), e.what());
    }
}

// Queues a request's choices on the engine (Chat Completions and legacy Completions `n`). n > 1: the
// prompt is prefilled once, by a warm-up (generate:false) whose KV the prefix cache keeps, and the choices
// start from it, each computing only the prompt's last token; its final event goes to `warm`. Choice i samples
// with the seed + i, so a seeded request is reproducible and its choices differ (greedy ones do not).
// Empty: the client left during the shared prefill (which was then cancelled); nothing to answer.
net::awaitable<std::vector<uint64_t>> submit_choices(HttpContext& c, Runtime& rt, GenerationRequest gen, int n,
                                                     EventChannel& chan, std::optional<Event>& warm) {
    if (n > 1) {
        GenerationRequest w = gen;
        w.generate = false;
        auto wchan = std::make_shared<EventChannel>(co_await net::this_coro::executor, c.st.metrics);
        ClientWatch watch(c, rt, std::vector<uint64_t>{submit(rt, w, *wchan)});
        for (bool done = false; !done;) {
            std::vector<TimedEvent> batch = co_await wchan->next();
            for (const TimedEvent& ev : batch) {
                if (!ev.done) continue;
                warm = ev;
                done = true;
            }
        }
        co_await watch.stop();
        if (watch.gone()) {
            c.closed = true;
            co_return std::vector<uint64_t>{};
        }
        if (warm->finish == FinishReason::Error) throw server_error("The prompt's prefill failed: " + warm->error);
    }
    std::vector<uint64_t> rids;
    const uint64_t seed = gen.sampling.seed;
    try {
        for (int i = 0; i < n; ++i) {
            gen.sampling.seed = seed + static_cast<uint64_t>(i);
            rids.push_back(submit(rt, gen, chan));
        }
    } catch (...) {  // (the engine refused one: the others must not run for nobody)
        for (uint64_t r : rids) rt.cancel(r);
        throw;
    }
    co_return rids;
}

// The usage of a request's choices: the prompt once (with n > 1, what the shared prefill found cached),
// the completions summed.
Usage combined_usage(const std::vector<Event>& finals, const std::optional<Event>& warm) {
    Usage u = finals[0].usage;
    if (warm) u.cached_tokens = warm->usage.cached_tokens;
    for (size_t i = 1; i < finals.size(); ++i) {
        u.completion_tokens += finals[i].usage.completion_tokens;
        u.accepted_prediction_tokens += finals[i].usage.accepted_prediction_tokens;
        u.rejected_prediction_tokens += finals[i].usage.rejected_prediction_tokens;
    }
    return u;
}

// The timings of a request's choices, from its point of view: the shared prefill, then the choices
// (first token: choice 0's; decode and total: the longest choice's).
Timings combined_timings(const std::vector<Event>& finals, const std::optional<Event>& warm) {
    Timings t = finals[0].timings;
    for (const Event& f : finals) {
        t.decode_ms = std::max(t.decode_ms, f.timings.decode_ms);
        t.total_ms = std::max(t.total_ms, f.timings.total_ms);
    }
    if (warm) {
        const Timings& w = warm->timings;
        t.queued_ms += w.queued_ms;
        t.prefill_ms += w.prefill_ms;
        t.first_token_ms += w.total_ms;
        t.total_ms += w.total_ms;
    }
    return t;
}

// One generation being answered: the engine requests (one per choice), the in-flight registration, the
// client watch and the SSE writer (used when streaming). drain() is the event loop the three endpoints share.
struct Generation {
    HttpContext& c;
    Runtime& rt;
    std::shared_ptr<EventChannel> chan;
    std::vector<uint64_t> rids;  // choice i's engine request
    bool stream;
    std::optional<Event> warm;   // n > 1: the shared prefill's final event (submit_choices)
    bool keep_running;           // background: a client that leaves does not cancel it
    InFlight live;
    ClientWatch watch;
    SseWriter sse;

    Generation(HttpContext& ctx, Runtime& r, std::shared_ptr<EventChannel> ch, std::vector<uint64_t> ids, bool streaming,
               std::string live_id, LiveResponse l, std::optional<Event> warm_up = std::nullopt, bool background = false)
        : c(ctx), rt(r), chan(std::move(ch)), rids(std::move(ids)), stream(streaming), warm(std::move(warm_up)),
          keep_running(background), live(ctx.st, std::move(live_id), std::move(l)),
          watch(ctx, r, background ? std::vector<uint64_t>{} : rids), sse{ctx} {}

    // Which choice an event belongs to.
    int index_of(uint64_t rid) const { return static_cast<int>(std::find(rids.begin(), rids.end(), rid) - rids.begin()); }

    // Until every choice's final event: `render(event)` returns the SSE text for it ("" when there is
    // nothing to send); `finished(final)` runs once the final events are in, before their text is written —
    // the Responses endpoint stores the response there, so a client reacting to response.completed
    // finds it. A failed write (the client went away) cancels the generation, and draining goes on
    // until the engine confirms, so nothing is left running. `between()` runs after each batch's text is
    // written, unless the generation ended in it: bookkeeping that no client waits for goes there, off the
    // path from engine to client. Returns the final events, by choice.
    template <class Render, class Finished, class Between = void (*)()>
    net::awaitable<std::vector<Event>> drain(Render render, Finished finished, Between between = [] {}) {
        std::vector<Event> finals(rids.size());
        size_t n_done = 0;
        while (n_done < rids.size()) {
            std::vector<TimedEvent> batch = co_await chan->next();
            std::string out;
            for (const TimedEvent& ev : batch) {
                out += render(ev);
                if (ev.done) {
                    finals[index_of(ev.request_id)] = ev;
                    ++n_done;
                }
            }
            if (n_done == rids.size()) {
                co_await watch.stop();
                account(c.st, c.key, combined_usage(finals, warm));
                finished(finals[0]);
                live.finish();
            }
            if (stream) {
                const bool was_gone = sse.gone;
                co_await sse.chunk(out);
                if (sse.gone && !was_gone && !watch.gone() && !keep_running) {
                    watch.mark_gone();
                    for (uint64_t rid : rids) rt.cancel(rid);
                    ++c.st.metrics.disconnects;
                }
            }
            if (n_done < rids.size()) between();
        }
        co_return finals;
    }

    // After drain(): false when the client is gone (nobody to answer; the connection is not reused).
    bool client_here() {
        if (watch.gone()) c.closed = true;
        return !watch.gone();
    }
};

// A background response (`background: true`, not streamed) after its reply: the generation goes on without
// the client; its events build the record, which is stored when it ends. GET /v1/responses/{id} shows it
// in progress meanwhile, POST …/cancel stops it, and a server stopping finishes it like any other.
struct Background {
    Background(ServerState& s, const ApiKey* k, PreparedResponse prep, std::shared_ptr<EventChannel> ch, LiveResponse l)
        : st(s), key(k), p(std::move(prep)), chan(std::move(ch)), live(s, p.rec.id, std::move(l)), events(p.rec, *p.model->tokenizer) {}
    ServerState& st;
    const ApiKey* key;
    PreparedResponse p;  // the record, and the model (held loaded)
    std::shared_ptr<EventChannel> chan;
    InFlight live;
    ResponseEvents events;
};

net::awaitable<void> run_background(std::shared_ptr<Background> b) {
    std::vector<WireEvent> out;
    b->events.start(out);  // (nobody reads these events: they set the record's state)
    LiveRefresh refresh{b->st, b->p.rec.id};
    for (bool done = false; !done;) {
        std::vector<TimedEvent> batch = co_await b->chan->next();
        for (const TimedEvent& ev : batch) {
            out.clear();
            if (!ev.done) {
                b->events.token(ev, out, monotonic_us(ev.at));
                refresh(b->events);
                continue;
            }
            b->events.finish(ev, std::move(b->p.gen.prompt), out, monotonic_us(ev.at));
            account(b->st, b->key, ev.usage);
            store_if_asked(b->st, b->p.rec);
            done = true;
        }
    }
    b->live.finish();
}

}  // namespace

net::awaitable<void> handle_responses_create(HttpContext& c, const json& body) {
    ResponsesRequest req = parse_responses_request(body);
    if (!req.generate) throw bad_request("'generate: false' is a WebSocket warm-up; over HTTP omit it.", "generate");
    PreparedResponse p = prepare_response(c.st, std::move(req), c.key, nullptr);
    const double parse_ms = c.elapsed_ms();
    p.rec.prepare_ms = parse_ms;
    if (p.rec.req.stream_timestamps) p.rec.received_us = monotonic_us(c.t0);
    if (p.rec.req.background && !p.rec.req.store)
        throw bad_request("Background mode needs 'store': true (the response is fetched later with GET /v1/responses/{id}).",
                          "background", "invalid_value");
    auto chan = std::make_shared<EventChannel>(co_await net::this_coro::executor, c.st.metrics);
    Runtime& rt = *p.model->runtime;
    const uint64_t rid = submit(rt, p.gen, *chan);
    const bool stream = p.rec.req.stream;
    if (p.rec.req.background && !stream) {
        const json snapshot = response_object(p.rec);  // status "in_progress"
        auto b = std::make_shared<Background>(c.st, c.key, std::move(p), chan, LiveResponse{&rt, rid, snapshot});
        net::co_spawn(co_await net::this_coro::executor, run_background(b), net::detached);
        co_await write_json(c, 200, snapshot, "parse;dur=" + std::to_string(parse_ms));
        co_return;
    }
    Generation g(c, rt, chan, std::vector<uint64_t>{rid}, stream, p.rec.id, LiveResponse{&rt, rid, response_object(p.rec)},
                 std::nullopt, p.rec.req.background);
    ResponseEvents events(p.rec, *p.model->tokenizer);
    std::vector<WireEvent> out;
    events.start(out);
    if (stream) {
        co_await g.sse.begin();
        const std::string head = sse_events(out);
        co_await g.sse.chunk(head);
    }
    LiveRefresh refresh{c.st, p.rec.id};
    auto render = [&](const TimedEvent& ev) {
        out.clear();
        if (ev.done) {
            events.finish(ev, std::move(p.gen.prompt), out, monotonic_us(ev.at));
        } else {
            events.token(ev, out, monotonic_us(ev.at));
        }
        return stream ? sse_events(out) : std::string();
    };
    auto finished = [&](const Event&) { store_if_asked(c.st, p.rec); };
    const std::vector<Event> finals = co_await g.drain(render, finished, [&] { refresh(events); });
    const Event& final_ev = finals[0];
    if (!g.client_here()) co_return;
    const std::string timing = server_timing(final_ev.timings, parse_ms);
    if (stream) co_await g.sse.end(timing);
    else {
        const json obj = response_object(p.rec);
        co_await write_json(c, 200, obj, timing);
    }
}

net::awaitable<void> handle_chat_completions(HttpContext& c, const json& body) {
    ChatRequest req = parse_chat_request(body);
    PreparedCompletion p = prepare_chat(c.st, req, c.key);
    const double parse_ms = c.elapsed_ms();
    const bool tools = req.tools.is_array() && !req.tools.empty() && req.tool_choice != "none";
    auto chan = std::make_shared<EventChannel>(co_await net::this_coro::executor, c.st.metrics);
    Runtime& rt = *p.model->runtime;
    std::optional<Event> warm;
    std::vector<uint64_t> rids = co_await submit_choices(c, rt, p.gen, req.p.n, *chan, warm);
    if (rids.empty()) co_return;  // the client left during the shared prefill
    Generation g(c, rt, chan, std::move(rids), req.p.stream, "", {}, warm);
    const std::string id = make_id("chatcmpl-");
    const int64_t created = now_s();
    const std::string& model = p.model->name;
    const Tokenizer& tok = *p.model->tokenizer;
    const int n = req.p.n;
    auto data = [](const json& j) { return "data: " + dump(j) + "\n\n"; };
    if (req.p.stream) {
        co_await g.sse.begin();
        // (Braced lists stay out of co_await expressions: GCC 12 miscompiles them in coroutines.)
        const json role = {{"role", "assistant"}, {"content", ""}};
        std::string first;
        for (int i = 0; i < n; ++i) first += data(chat_chunk(id, model, created, i, role, nullptr, nullptr));
        co_await g.sse.chunk(first);
    }
    struct Choice {
        std::string text;      // the message's content: the text, without the calls
        ToolCallStream calls;  // with tools: text shows up to a <tool_call>, the calls are parsed at the end
        json logprobs = json::array();
        LogprobQueue pending;  // a token's entry goes out with its text, which may come later (or never)
    };
    std::vector<Choice> choices(n);
    for (Choice& ch : choices)
        if (tools && !p.forced_prefix.empty()) ch.calls.feed(p.forced_prefix);  // tool_choice: the call the model completes
    auto shown_logprobs = [&](Choice& ch, const std::string& shown) {
        json taken = ch.pending.take(shown, ch.calls.in_call());  // (only fed with tools)
        for (const json& e : taken) ch.logprobs.push_back(e);
        return req.p.logprobs && !taken.empty() ? json{{"content", taken}} : json(nullptr);
    };
    auto render = [&](const TimedEvent& ev) {
        const int i = g.index_of(ev.request_id);
        Choice& ch = choices[i];
        if (req.p.logprobs && ev.token >= 0) ch.pending.push(token_logprobs(tok, ev));
        const std::string shown = tools ? ch.calls.feed(ev.text) : ev.text;
        const json lp = shown_logprobs(ch, shown);
        ch.text += shown;
        if (!req.p.stream || shown.empty()) return std::string();  // empty: held back, it may start a call
        return data(chat_chunk(id, model, created, i, {{"content", shown}}, nullptr, lp));
    };
    const std::vector<Event> finals = co_await g.drain(render, [](const Event&) {});
    if (!g.client_here()) co_return;
    const Usage usage = combined_usage(finals, warm);
    json done = json::array();  // non-streamed: the choices; streamed: the closing chunks
    std::string out;
    for (int i = 0; i < n; ++i) {
        Choice& ch = choices[i];
        json tool_calls = json::array();
        std::string rest;  // with tools: the held tail, a malformed call's text, text after the calls
        json rest_lp;
        if (tools) {
            ParsedOutput parsed = ch.calls.finish(req.parallel_tool_calls);
            rest = parsed.text;
            rest_lp = shown_logprobs(ch, rest);
            ch.text += rest;
            for (size_t k = 0; k < parsed.calls.size(); ++k)
                tool_calls.push_back({{"index", k}, {"id", make_id("call_")}, {"type", "function"},
                                      {"function", {{"name", parsed.calls[k].name}, {"arguments", parsed.calls[k].arguments}}}});
        }
        // The deprecated functions form: its one call is the message's function_call, not a tool call.
        const bool legacy_call = req.legacy_functions && !tool_calls.empty();
        const std::string finish = legacy_call ? "function_call" : finish_reason_string(finals[i].finish, !tool_calls.empty());
        if (!req.p.stream) {
            json lp = req.p.logprobs ? json{{"content", ch.logprobs}} : json(nullptr);
            for (auto& t : tool_calls) t.erase("index");
            done.push_back(chat_choice(i, ch.text, legacy_call ? json::array() : tool_calls, finish, lp));
            if (legacy_call) done.back()["message"]["function_call"] = tool_calls[0]["function"];
            continue;
        }
        if (!rest.empty()) out += data(chat_chunk(id, model, created, i, {{"content", rest}}, nullptr, rest_lp));
        if (legacy_call) out += data(chat_chunk(id, model, created, i, {{"function_call", tool_calls[0]["function"]}}, nullptr, nullptr));
        else if (!tool_calls.empty()) out += data(chat_chunk(id, model, created, i, {{"tool_calls", tool_calls}}, nullptr, nullptr));
        out += data(chat_chunk(id, model, created, i, json::object(), finish, nullptr));
    }
    const std::string timing = server_timing(combined_timings(finals, warm), parse_ms);
    if (!req.p.stream) {
        const json obj = chat_completion_object(id, model, created, done, usage);
        co_await write_json(c, 200, obj, timing);
        co_return;
    }
    if (req.p.include_usage) out += data(chat_usage_chunk(id, model, created, usage));
    out += "data: [DONE]\n\n";
    co_await g.sse.chunk(out);
    co_await g.sse.end(timing);
}

net::awaitable<void> handle_completions(HttpContext& c, const json& body) {
    CompletionRequest req = parse_completion_request(body);
    PreparedCompletion p = prepare_completion(c.st, req, c.key);
    const double parse_ms = c.elapsed_ms();
    auto chan = std::make_shared<EventChannel>(co_await net::this_coro::executor, c.st.metrics);
    Runtime& rt = *p.model->runtime;
    std::optional<Event> warm;
    std::vector<uint64_t> rids = co_await submit_choices(c, rt, p.gen, req.p.n, *chan, warm);
    if (rids.empty()) co_return;  // the client left during the shared prefill
    Generation g(c, rt, chan, std::move(rids), req.p.stream, "", {}, warm);
    const std::string id = make_id("cmpl-");
    const int64_t created = now_s();
    const std::string& model = p.model->name;
    const int n = req.p.n;
    auto data = [](const json& j) { return "data: " + dump(j) + "\n\n"; };
    const Tokenizer& tok = *p.model->tokenizer;
    std::string echo = req.echo ? req.prompt : "";
    if (req.echo && req.prompt_tokens) {  // the ids' text, as a text prompt would echo it: no BOS, no SPM space
        std::span<const int32_t> ids = *req.prompt_tokens;
        if (!ids.empty() && ids[0] == tok.bos()) ids = ids.subspan(1);
        echo = tok.decode(ids, /*strip_space_prefix=*/true);
    }
    if (req.p.stream) {
        co_await g.sse.begin();
        std::string first;
        if (!echo.empty())
            for (int i = 0; i < n; ++i) first += data(completion_chunk(id, model, created, i, echo, nullptr));
        co_await g.sse.chunk(first);
    }
    // logprobs: every token's in the reply, or, streamed, in each chunk those of the tokens since the last
    // one (a token whose bytes do not yet end a character has no text of its own and rides with the next).
    struct Choice {
        std::string text;
        json lp;
    };
    std::vector<Choice> choices(n, Choice{echo, req.p.logprobs ? legacy_logprobs() : json(nullptr)});
    auto render = [&](const TimedEvent& ev) {
        const int i = g.index_of(ev.request_id);
        Choice& ch = choices[i];
        if (req.p.logprobs && ev.token >= 0) add_legacy_logprob(ch.lp, tok, ev, ch.text.size());
        if (ev.text.empty()) return std::string();
        ch.text += ev.text;
        if (!req.p.stream) return std::string();
        std::string out = data(completion_chunk(id, model, created, i, ev.text, nullptr, ch.lp));
        if (req.p.logprobs) ch.lp = legacy_logprobs();
        return out;
    };
    const std::vector<Event> finals = co_await g.drain(render, [](const Event&) {});
    if (!g.client_here()) co_return;
    const Usage usage = combined_usage(finals, warm);
    const std::string timing = server_timing(combined_timings(finals, warm), parse_ms);
    if (!req.p.stream) {
        json list = json::array();
        for (int i = 0; i < n; ++i) list.push_back(completion_choice(i, choices[i].text, finish_reason_string(finals[i].finish, false), choices[i].lp));
        const json obj = completion_object(id, model, created, list, usage);
        co_await write_json(c, 200, obj, timing);
        co_return;
    }
    std::string out;
    for (int i = 0; i < n; ++i) out += data(completion_chunk(id, model, created, i, "", finish_reason_string(finals[i].finish, false)));
    if (req.p.include_usage) {
        json u = completion_chunk(id, model, created, 0, "", nullptr);
        u["choices"] = json::array();
        u["usage"] = chat_usage(usage);
        out += data(u);
    }
    out += "data: [DONE]\n\n";
    co_await g.sse.chunk(out);
    co_await g.sse.end(timing);
}

}  // namespace flint::server
