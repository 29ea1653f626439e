// Responses over WebSocket (PROTOCOL.md §3): one connection, many turns, each answered with the same
// events as SSE, one JSON text frame per event.
//
// Two coroutines on the connection's strand: the reader takes frames as they come (so response.cancel acts
// at once, mid-generation) and queues response.create requests; the processor runs them one at a time and
// is the only writer — except while it is parked waiting for the engine, when the engine thread writes the
// events itself (deliver(): fewer wake-ups between the engine and the client; event_channel.h has the
// handshake, batch_stream.h how the two threads' writes stay whole and in order). The processor also keeps
// this connection's recent token histories, so a previous_response_id continues on the cached KV with
// nothing re-tokenised (also with store:false).
#include <atomic>
#include <deque>

#include <boost/beast/websocket.hpp>

#include "server/batch_stream.h"
#include "server/event_channel.h"
#include "server/generation.h"
#include "server/json_fields.h"
#include "server/sessions.h"
#include "server/state.h"
#include "server/ws_protocol.h"

namespace flint::server {
namespace {

namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;
using WsStream = websocket::stream<BatchStream>;
const char* kEndpoint = "/v1/responses (websocket)";

struct Connection {
    std::shared_ptr<Signal> signal;
    std::deque<ClientFrame> inbox;  // response.create requests and errors to report, in arrival order
    bool reader_done = false;
    // The response in flight (for response.cancel):
    std::string current_id;
    Runtime* current_rt = nullptr;
    uint64_t current_rid = 0;
    std::atomic<bool> in_flight = false;  // cleared by end_turn(), which a direct delivery runs on the engine thread
    // The client's going away has been counted (flint_client_disconnects_total): by the reader when the
    // socket closes with a response in flight, or by a write that failed, whichever comes first.
    std::atomic<bool> gone_counted = false;
    void count_gone(Metrics& m) {
        if (!gone_counted.exchange(true)) ++m.disconnects;
    }
};

net::awaitable<void> reader(WsStream& ws, std::shared_ptr<Connection> conn, ServerState& st) {
    for (;;) {
        beast::flat_buffer buf;
        boost::system::error_code ec;
        co_await ws.async_read(buf, net::redirect_error(net::use_awaitable, ec));
        if (ec) break;
        const auto received = Clock::now();
        ClientFrame f;
        if (!ws.got_text()) {
            f.kind = ClientFrame::Kind::Error;
            f.error = bad_request("Binary frames are not supported; send JSON text frames.", "", "invalid_frame");
        } else {
            f = parse_client_frame(beast::buffers_to_string(buf.data()));
        }
        if (f.kind == ClientFrame::Kind::Ignore) continue;
        f.received = received;
        if (f.kind == ClientFrame::Kind::Cancel) {
            if (conn->in_flight && (f.response_id.empty() || f.response_id == conn->current_id))
                conn->current_rt->cancel(conn->current_rid);
            else if (!f.response_id.empty())
                st.cancel_live(f.response_id);
            continue;
        }
        conn->inbox.push_back(std::move(f));
        conn->signal->notify();
        // Let the processor start the request before this coroutine reads on: re-arming the read (a socket
        // read that finds nothing, Beast's bookkeeping) need not sit between a request and the engine.
        co_await net::post(co_await net::this_coro::executor, net::use_awaitable);
    }
    conn->reader_done = true;
    if (conn->in_flight) {  // closing the socket cancels
        conn->current_rt->cancel(conn->current_rid);
        conn->count_gone(st.metrics);
    }
    conn->signal->notify();
}

class Processor {
public:
    Processor(WsStream& ws, std::shared_ptr<Connection> conn, ServerState& st, const ApiKey* key)
        : ws_(ws), conn_(std::move(conn)), st_(st), key_(key) {}

    net::awaitable<void> run() {
        direct_ = st_.cfg.ws_direct && ws_.next_layer().enable_direct();
        const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(st_.cfg.ws_max_age_s));
        while (!broken_) {
            if (Clock::now() >= deadline) {
                const json frame = ws_error_frame(ApiError{400, "invalid_request_error", "websocket_connection_limit_reached", "",
                                                           "This connection reached its age limit; open a new one."});
                co_await send(frame);
                break;
            }
            if (conn_->inbox.empty()) {
                if (conn_->reader_done || st_.stopping) break;
                co_await conn_->signal->wait(deadline);
                continue;
            }
            ClientFrame f = std::move(conn_->inbox.front());
            conn_->inbox.pop_front();
            if (f.kind == ClientFrame::Kind::Error) {
                st_.metrics.request(kEndpoint, f.error->status);
                const json frame = ws_error_frame(*f.error);
                co_await send(frame);
                continue;
            }
            co_await turn(std::move(f.body), f.received);
        }
    }

private:
    net::awaitable<void> send(const json& j) { co_await send_text(dump(j)); }

    net::awaitable<void> send_text(const std::string& text) {
        if (broken_) co_return;
        ws_.text(true);
        boost::system::error_code ec;
        co_await ws_.async_write(net::buffer(text), net::redirect_error(net::use_awaitable, ec));
        if (ec) broken_ = true;
    }

    // One frame per event (PROTOCOL.md §3), but the frames of one batch leave in one write (BatchStream):
    // one syscall, and one TCP segment, so the client wakes once per batch, not per frame — the same
    // coalescing the SSE path gets from writing a batch as one chunk.
    net::awaitable<void> send_batch(const std::vector<WireEvent>& events) {
        const bool hold = events.size() > 1;
        if (hold) ws_.next_layer().hold();
        for (const WireEvent& e : events) co_await send_text(e.data);
        if (!hold) co_return;
        if (co_await ws_.next_layer().release()) broken_ = true;
    }

    net::awaitable<void> turn(json body, Clock::time_point received) {
        std::optional<PreparedResponse> p;
        std::shared_ptr<EventChannel> chan;
        uint64_t rid = 0;
        std::optional<ApiError> err;
        try {
            HeaderList ignored;
            try {
                st_.limits.admit(key_ ? key_->key : "", ignored);
            } catch (const ApiError&) {
                ++st_.metrics.rate_limited;
                throw;
            }
            if (st_.stopping) throw ApiError{503, "server_error", "server_shutting_down", "", "The server is shutting down."};
            ResponsesRequest req = parse_responses_request(body);
            req.stream = true;  // implicit on a WebSocket
            if (req.background)
                throw bad_request("'background' is for HTTP: on a WebSocket the response streams on the open connection "
                                  "(closing it cancels the response).",
                                  "background", "unsupported_parameter");
            p = prepare_response(st_, std::move(req), key_, &cache_);
            p->rec.prepare_ms = std::chrono::duration<double, std::milli>(Clock::now() - received).count();
            if (p->rec.req.stream_timestamps) p->rec.received_us = monotonic_us(received);
            chan = std::make_shared<EventChannel>(co_await net::this_coro::executor, st_.metrics);
            try {
                rid = p->model->runtime->submit(p->gen, chan->callback());
            } catch (const ContextLengthError& e) {
                throw bad_request(e.what(), "input", "context_length_exceeded");
            } catch (const InvalidRequestError& e) {
                throw bad_request(e.what(), "", "invalid_value");
            } catch (const OverloadedError& e) {
                throw ApiError{503, "server_error", "server_overloaded", "", std::string("The server is overloaded: ") + e.what()};
            }
        } catch (const ApiError& e) {
            err = e;
        } catch (const std::exception& e) {
            err = server_error(e.what());
        }
        if (err) {
            st_.metrics.request(kEndpoint, err->status);
            const json frame = ws_error_frame(*err);
            co_await send(frame);
            co_return;
        }
        st_.metrics.request(kEndpoint, 200);
        Runtime& rt = *p->model->runtime;
        ResponseRecord& rec = p->rec;
        conn_->current_id = rec.id;
        conn_->current_rt = &rt;
        conn_->current_rid = rid;
        conn_->in_flight = true;
        ++st_.metrics.in_flight;
        st_.add_live(rec.id, LiveResponse{&rt, rid, response_object(rec)});
        if (conn_->reader_done) rt.cancel(rid);  // the client left before this turn began
        ResponseEvents events(rec, *p->model->tokenizer);
        LiveRefresh refresh(st_, rec.id);
        // One engine event into its wire events; the final one settles the turn before its events leave.
        auto take = [&](const TimedEvent& ev, std::vector<WireEvent>& into) {
            if (!ev.done) {
                events.token(ev, into, monotonic_us(ev.at));
                return false;
            }
            events.finish(ev, std::move(p->gen.prompt), into, monotonic_us(ev.at));
            end_turn(rec, ev);
            return true;
        };
        if (direct_)
            chan->deliver_directly([&](const TimedEvent& ev) {
                // The engine thread serves others too: its time is theirs, so queue. A store write (SQLite) is
                // not for the engine thread either.
                if (rt.running() > 1 || (ev.done && rec.req.store && st_.store)) return false;
                deliver(ev, take, refresh, events, rt, rid);
                return true;
            });
        std::vector<WireEvent> out;
        events.start(out);
        for (bool done = false, first = true;; first = false) {
            co_await send_batch(out);
            if (ws_.next_layer().failed()) broken_ = true;  // also a direct write's rest, sent meanwhile
            if (broken_ && !cancelled_) lost(rt, rid);
            if (done) break;
            if (!first) refresh(events);  // after the batch is out, unless it ended the response
            out.clear();
            std::vector<TimedEvent> batch = co_await chan->next();
            if (batch.empty()) break;  // the final event was delivered from the engine thread
            for (const TimedEvent& ev : batch) done = take(ev, out) || done;
        }
        chan->deliver_directly(nullptr);
        // After it, the connection's own history (its next turn starts only once this one returns), moved
        // rather than copied: at a long conversation that copy sat between the engine and the client.
        cache_.put(rec.id, History{rec.model, std::move(rec.history), rec.req.instructions});
    }

    // On the engine thread, while the processor is parked: what the loop in turn() does with an event, and
    // one non-blocking write of its frames.
    template <class Take>
    void deliver(const TimedEvent& ev, Take& take, LiveRefresh& refresh, ResponseEvents& events, Runtime& rt, uint64_t rid) {
        std::vector<WireEvent> out;
        bool done = ev.done;
        try {
            done = take(ev, out);
        } catch (const std::exception& e) {  // not into the engine's loop: this connection's trouble only
            std::fprintf(stderr, "flint: websocket: could not write an event: %s\n", e.what());
            broken_ = true;
        }
        frames_.clear();
        for (const WireEvent& e : out) append_text_frame(frames_, e.data);
        if (!broken_) {
            if (ws_.next_layer().write_direct(frames_)) ++st_.metrics.ws_direct_writes;
            else broken_ = true;
        }
        if (broken_ && !cancelled_) lost(rt, rid);
        if (!done) refresh(events);
    }

    // The client is gone: stop generating for it (the response still ends, with its final event unsent).
    void lost(Runtime& rt, uint64_t rid) {
        rt.cancel(rid);
        cancelled_ = true;
        conn_->count_gone(st_.metrics);
    }

    // What must be in place before the terminal event goes out: a client that has it may at once, from any
    // connection, fetch the response (store), find it no longer live, or read the metrics.
    void end_turn(const ResponseRecord& rec, const Event& final_ev) {
        conn_->in_flight = false;
        --st_.metrics.in_flight;
        st_.remove_live(rec.id);
        account(st_, key_, final_ev.usage);
        if (rec.req.store) {
            try {
                st_.put(rec);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "flint: warning: could not store %s: %s\n", rec.id.c_str(), e.what());
            }
        }
    }

    WsStream& ws_;
    std::shared_ptr<Connection> conn_;
    ServerState& st_;
    const ApiKey* key_;
    ConnectionCache cache_;
    bool direct_ = false;    // the engine thread may deliver events (ServerConfig::ws_direct)
    // Touched by the engine thread only while the processor is parked (event_channel.h):
    bool broken_ = false;
    bool cancelled_ = false;
    std::string frames_;     // deliver()'s frames, reused
};

}  // namespace

net::awaitable<void> run_websocket_session(std::shared_ptr<ServerState> st, beast::tcp_stream stream,
                                           http::request<http::string_body> upgrade, const ApiKey* key, std::string request_id) {
    WsStream ws(std::move(stream));
    websocket::stream_base::timeout to{};
    to.handshake_timeout = std::chrono::seconds(30);
    to.idle_timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(st->cfg.idle_timeout_s));
    to.keep_alive_pings = true;  // an idle but healthy client answers pings, so only dead peers time out
    ws.set_option(to);
    ws.set_option(websocket::stream_base::decorator([request_id](websocket::response_type& res) {
        res.set(http::field::server, "flint");
        res.set("x-request-id", request_id);
    }));
    ws.read_message_max(static_cast<std::uint64_t>(st->cfg.body_limit));
    boost::system::error_code ec;
    co_await ws.async_accept(upgrade, net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
    ++st->metrics.websockets;
    ++st->metrics.websockets_total;
    auto conn = std::make_shared<Connection>();
    auto ex = co_await net::this_coro::executor;
    conn->signal = std::make_shared<Signal>(ex);
    net::co_spawn(ex, reader(ws, conn, *st), net::detached);

    Processor proc(ws, conn, *st, key);
    co_await proc.run();

    // Close, then wait for the reader to finish: it holds a reference to `ws`, which lives in this frame.
    if (!conn->reader_done) {
        co_await ws.async_close(websocket::close_code::normal, net::redirect_error(net::use_awaitable, ec));
        auto until = Clock::now() + std::chrono::seconds(2);
        while (!conn->reader_done && Clock::now() < until) co_await conn->signal->wait(until);
        if (!conn->reader_done) beast::get_lowest_layer(ws).close();
        while (!conn->reader_done) co_await conn->signal->wait(Clock::now() + std::chrono::milliseconds(50));
    }
    --st->metrics.websockets;
}

}  // namespace flint::server
