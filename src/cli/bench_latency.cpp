// `flint bench latency` — what the persistent WebSocket buys, measured against a running `flint serve`.
// The same multi-turn coding conversation (a source file attached per turn, a short answer, then a
// 1-token follow-up) is run three ways, each with its own conversation prefix so no mode reuses another's KV:
//   (a) naive:  a new TCP connection per request, SSE, the whole conversation resent every turn
//   (b) http:   HTTP keep-alive, SSE, previous_response_id
//   (c) ws:     one persistent WebSocket, previous_response_id
//   (w) ws + warm-up: as (c), with each turn's attached file sent first as a generate:false warm-up (what
//               `flint chat` does on /file while the user types the question), the question after it
// and, with --no-reuse-turns N, (a) once more for the first N turns with every prompt made new (a per-request nonce at the top of the
// instructions): the work of a server without cross-request KV reuse, which re-prefills everything.
//
// Server compute comes from the server itself, per request (flint extension, README "Server-Timing"): the
// finished response's `timings` and, with stream_timestamps, the engine's emission time of every delta on
// the server's monotonic clock — the same clock as ours when both run on one host (checked: every stamp
// must lie between our send and our receipt).
//   round-trip overhead = client (sent → terminal event) − the engine's part, for a 1-token answer, where the
//                         engine's part runs from submission to the emission of its final event (timings:
//                         finished_us − received_us − prepare_ms; total_ms stops before the engine's
//                         bookkeeping after the last token, which is engine work, not the wire's);
//   per-token overhead  = client receipt of a delta − engine emission of its token, per token;
//   TTFT                = client, sent → first delta.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "client/http_client.h"
#include "client/responses.h"
#include "client/responses_http.h"
#include "client/ws_client.h"
#include "util/error.h"

namespace flint::cli {
namespace {

using namespace client;

struct LatencyOptions {
    std::string url = "http://127.0.0.1:8080";
    std::string model;
    int turns = 16;
    int chunk_bytes = 1150;   // source attached per turn (~1k tokens with stories260K's 512-piece tokenizer)
    int answer_tokens = 32;
    int round_trips = 3;      // 1-token follow-ups per turn
    std::string csv;
    int no_reuse_turns = 0;   // > 0: also the no-reuse row, for this many turns (its full prefills grow quadratically)
};

// The conversation's user turns: this repository's sources, chunk_bytes at a time.
std::vector<std::string> code_chunks(int n, int bytes) {
    std::string all;
    for (const char* dir : {"src/runtime", "src/server", "src/model", "src/tokenizer", "src/kv", "src/tensor"}) {
        std::error_code ec;
        for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(FLINT_SOURCE_DIR) + "/" + dir, ec)) {
            if (e.path().extension() != ".cpp") continue;
            std::ifstream in(e.path());
            std::stringstream ss;
            ss << in.rdbuf();
            all += ss.str();
            if (all.size() > static_cast<size_t>(n + 1) * bytes) break;
        }
    }
    if (all.empty()) fail("no sources under ", FLINT_SOURCE_DIR, " to build the conversation from");
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
        size_t from = (static_cast<size_t>(i) * bytes) % all.size();
        out.push_back(all.substr(from, bytes));
    }
    return out;
}

struct TurnRow {
    char mode;
    int turn;
    int prompt_tokens;        // the answer request's input tokens (conversation size)
    int cached_tokens;
    double ttft_ms;           // client: sent → first delta
    double server_ttft_ms;    // engine: submitted → first token
    double gap_overhead_ms;   // client mean gap between deltas − engine mean gap between their tokens
    double warmup_ms;         // (w): the warm-up ahead of this turn's question, sent → completed
    std::vector<double> delivery_ms;  // per token of the answer: engine emission → client receipt
    // Per 1-token follow-up (round trip):
    std::vector<double> rt_ms;         // client: sent → terminal event
    std::vector<double> server_rt_ms;  // engine: submitted → final event emitted
    std::vector<double> retire_ms;     // engine: of that, after total_ms (last token → final event: KV to the prefix cache)
    std::vector<double> queued_ms;     // engine: submitted → admitted (includes the engine thread's wake-up)
    std::vector<double> up_ms;         // client sent → server received the request (connect, send, read)
    std::vector<double> prepare_ms;    // server received → engine submitted (parse, validate, tokenise)
    std::vector<double> down_ms;       // engine's final event → client has the terminal event (events, write, read)
};

double num(const json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : NAN;
}

class Mode {
public:
    Mode(char kind, const LatencyOptions& o) : kind_(kind), o_(o), url_(parse_url(o.url)) {
        if (kind == 'b') http_ = std::make_unique<HttpClient>(url_, true);
        if (kind == 'c' || kind == 'w') {
            ws_ = std::make_unique<WsClient>();
            ws_->connect(with_scheme(url_, "ws", "/v1/responses"), {});
        }
    }

    // One request; the conversation (and previous id) advances with it. `attachment` (may be empty) is
    // sent after `question` in the same message, or by (w) ahead of it as a warm-up of its own, untimed.
    // `fresh_turn`: the no-reuse mode changes its nonce here, so this request's whole prompt is new; its
    // follow-ups reuse that prefix (their round trip is what is measured, not their prefill).
    Turn ask(const std::string& question, const std::string& attachment, int max_tokens, bool fresh_turn) {
        if (fresh_turn) ++nonce_;
        if (kind_ == 'w' && !attachment.empty()) {
            json warm = {{"type", "response.create"}, {"input", json::array({message_item("user", attachment)})},
                         {"generate", false}, {"store", false}, {"instructions", instructions()}};
            if (!o_.model.empty()) warm["model"] = o_.model;
            if (!prev_.empty()) warm["previous_response_id"] = prev_;
            const Turn w = exchange(warm);
            prev_ = w.response_id;
            last_warmup_ms_ = w.total_ms();
        }
        json item = message_item("user", kind_ == 'w' ? question : question + attachment);
        json body = {{"input", json::array()}, {"max_output_tokens", max_tokens}, {"temperature", 0}};
        if (!o_.model.empty()) body["model"] = o_.model;
        body["instructions"] = instructions();
        if (kind_ == 'a' || kind_ == 'n' || prev_.empty()) {
            for (const json& it : history_) body["input"].push_back(it);
        } else {
            body["previous_response_id"] = prev_;
        }
        body["input"].push_back(item);
        if (kind_ == 'n') body["instructions"] = body["instructions"].get<std::string>() + " Request " + std::to_string(nonce_) + ".";
        body["store"] = kind_ == 'b';  // HTTP chaining reads the store; the WebSocket keeps its own state
        body["stream_timestamps"] = true;
        Turn t;
        if (ws_) {
            body["type"] = "response.create";
            t = exchange(body);
        } else {
            std::unique_ptr<HttpClient> fresh;
            HttpClient* h = http_.get();
            if (kind_ == 'a' || kind_ == 'n') {
                fresh = std::make_unique<HttpClient>(url_, false);
                h = fresh.get();
            }
            SseTurn s = post_response_stream(*h, "/v1/responses", body, {});
            if (s.status != 200) fail("mode ", kind_, ": ", describe_failure(s.status, s.error));
            t = std::move(s.turn);
        }
        check_ok(t);
        history_.push_back(item);
        history_.push_back(message_item("assistant", t.text));
        prev_ = t.response_id;
        return t;
    }

    // (w): the last warm-up's round trip (the file's prefill, ahead of the question).
    double last_warmup_ms() const { return last_warmup_ms_; }

private:
    // A per-mode first line keeps each mode's conversation out of the others' prefix cache.
    std::string instructions() const { return std::string("You review C++ code. Session ") + kind_ + "."; }

    void check_ok(const Turn& t) const {
        if (!t.finished || t.status == "failed" || t.status == "error")
            fail("mode ", kind_, ": the request failed: ", t.error_message.empty() ? t.status : t.error_message);
    }

    // One response.create over the WebSocket, read to its terminal event.
    Turn exchange(const json& body) {
        Turn t;
        const std::string text = body.dump();  // before the clock starts, as post_response_stream does
        t.sent = Clock::now();
        ws_->send(text);
        while (!t.finished) {
            auto f = ws_->next(60000);
            if (!f) fail("the WebSocket closed mid-benchmark: ", ws_->close_reason());
            t.apply(json::parse(f->text), f->at);
        }
        check_ok(t);
        return t;
    }

    char kind_;
    const LatencyOptions& o_;
    Url url_;
    std::unique_ptr<HttpClient> http_;
    std::unique_ptr<WsClient> ws_;
    json history_ = json::array();
    std::string prev_;
    int nonce_ = 0;
    double last_warmup_ms_ = 0;
};

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double idx = p * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(idx);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// The server's stamps must fall between our own send and receipt, else the clocks are not the same
// (server on another host) and the split would be meaningless.
void check_same_clock(const Turn& t) {
    const double received = num(t.timings, "received_us"), finished = num(t.timings, "finished_us");
    if (std::isnan(received) || std::isnan(finished))
        fail("the server sent no timings.received_us/finished_us: it does not support stream_timestamps (flint serve does)");
    if (received < static_cast<double>(monotonic_us(t.sent)) || finished > static_cast<double>(monotonic_us(t.done)))
        fail("the server's monotonic clock is not ours (is it on another host?): per-request splits need one host");
}

TurnRow measure(char kind, int turn, const Turn& a, const std::vector<Turn>& follow_ups) {
    TurnRow r{};
    r.mode = kind;
    r.turn = turn;
    check_same_clock(a);
    r.prompt_tokens = a.input_tokens;
    r.cached_tokens = a.cached_tokens;
    r.ttft_ms = a.ttft_ms();
    r.server_ttft_ms = num(a.timings, "first_token_ms");
    for (size_t i = 0; i < a.delta_times.size(); ++i)
        if (a.delta_engine_us[i] > 0)
            r.delivery_ms.push_back(static_cast<double>(monotonic_us(a.delta_times[i]) - a.delta_engine_us[i]) / 1000.0);
    const size_t n = a.delta_times.size();
    if (n > 1 && a.delta_engine_us.front() > 0 && a.delta_engine_us.back() > 0) {
        const double client_gap = ms_between(a.delta_times.front(), a.delta_times.back()) / static_cast<double>(n - 1);
        const double engine_gap = static_cast<double>(a.delta_engine_us.back() - a.delta_engine_us.front()) / 1000.0 / static_cast<double>(n - 1);
        r.gap_overhead_ms = client_gap - engine_gap;
    }
    for (const Turn& b : follow_ups) {
        check_same_clock(b);
        r.rt_ms.push_back(b.total_ms());
        const double engine = (num(b.timings, "finished_us") - num(b.timings, "received_us")) / 1000.0 - num(b.timings, "prepare_ms");
        r.server_rt_ms.push_back(engine);
        r.retire_ms.push_back(engine - num(b.timings, "total_ms"));
        r.queued_ms.push_back(num(b.timings, "queued_ms"));
        r.up_ms.push_back((num(b.timings, "received_us") - static_cast<double>(monotonic_us(b.sent))) / 1000.0);
        r.prepare_ms.push_back(num(b.timings, "prepare_ms"));
        r.down_ms.push_back((static_cast<double>(monotonic_us(b.done)) - num(b.timings, "finished_us")) / 1000.0);
    }
    return r;
}

// The modes take turns (turn 1 of a, b, c, then turn 2 …) so the shared machine's load drifts over all
// of them alike instead of favouring whichever ran in a quiet minute.
std::vector<TurnRow> run_all(const std::vector<char>& kinds, const LatencyOptions& o, const std::vector<std::string>& chunks) {
    std::vector<std::unique_ptr<Mode>> modes;
    for (char k : kinds) modes.push_back(std::make_unique<Mode>(k, o));
    std::vector<TurnRow> rows;
    for (int i = 0; i < o.turns; ++i)
        for (size_t m = 0; m < kinds.size(); ++m) {
            if (kinds[m] == 'n' && i >= o.no_reuse_turns) continue;
            Turn a = modes[m]->ask("Review this part of the file:\n", "```cpp\n" + chunks[static_cast<size_t>(i)] + "\n```\n",
                                   o.answer_tokens, true);
            std::vector<Turn> follow_ups;
            for (int k = 0; k < o.round_trips; ++k) {
                static const char* kFollowUps[] = {"Anything else?", "Is that all?", "More?", "Go on."};
                follow_ups.push_back(modes[m]->ask(kFollowUps[k % 4], "", 1, false));
            }
            rows.push_back(measure(kinds[m], i + 1, a, follow_ups));
            rows.back().warmup_ms = modes[m]->last_warmup_ms();
            const TurnRow& r = rows.back();
            std::fprintf(stderr, "  turn %2d/%d mode %c: %6d prompt tokens (%d cached), ttft %8.2f ms\n", i + 1, o.turns, kinds[m],
                         r.prompt_tokens, r.cached_tokens, r.ttft_ms);
            std::fflush(stderr);
        }
    return rows;
}

struct Summary {
    double rt_p50, rt_p90, tok_p50, tok_p90, ttft_p50, ttft_p90;
    double gap_p50, up_p50, prepare_p50, engine_p50, down_p50, server_ttft_p50, queued_p50, retire_p50;
    double warmup_p50, warmup_p90;
};

Summary summarize(const std::vector<TurnRow>& all, char kind) {
    std::vector<double> rt, tok, ttft, gap, up, prep, engine, down, sttft, queued, retire, warm;
    auto add = [](std::vector<double>& to, const std::vector<double>& from) { to.insert(to.end(), from.begin(), from.end()); };
    for (const TurnRow& r : all) {
        if (r.mode != kind) continue;
        for (size_t k = 0; k < r.rt_ms.size(); ++k) rt.push_back(r.rt_ms[k] - r.server_rt_ms[k]);
        add(tok, r.delivery_ms);
        ttft.push_back(r.ttft_ms);
        gap.push_back(r.gap_overhead_ms);
        add(up, r.up_ms);
        add(prep, r.prepare_ms);
        add(engine, r.server_rt_ms);
        add(queued, r.queued_ms);
        add(retire, r.retire_ms);
        add(down, r.down_ms);
        sttft.push_back(r.server_ttft_ms);
        warm.push_back(r.warmup_ms);
    }
    return Summary{pct(rt, .5),  pct(rt, .9), pct(tok, .5),  pct(tok, .9),    pct(ttft, .5), pct(ttft, .9),
                   pct(gap, .5), pct(up, .5), pct(prep, .5), pct(engine, .5), pct(down, .5), pct(sttft, .5), pct(queued, .5), pct(retire, .5),
                   pct(warm, .5),  pct(warm, .9)};
}

const char* mode_name(char kind) {
    switch (kind) {
        case 'a': return "(a) new connection + SSE, full resend";
        case 'b': return "(b) keep-alive + SSE, previous_response_id";
        case 'c': return "(c) persistent WebSocket, previous_response_id";
        case 'w': return "(c) + warm-up: the turn's file sent ahead (generate:false), then the question";
        default: return "(a, no KV reuse) as (a), every prompt new (nonce): no prefix-cache hit";
    }
}

void bench_latency(const LatencyOptions& o) {
    const std::vector<std::string> chunks = code_chunks(o.turns, o.chunk_bytes);
    {
        HttpClient probe(parse_url(o.url), false);
        HttpResponse r = probe.request("GET", "/v1/models", "");  // fails early when the server is not there
        if (r.status != 200) fail("GET /v1/models answered ", r.status);
    }
    std::vector<char> kinds = {'a', 'b', 'c', 'w'};
    if (o.no_reuse_turns > 0) kinds.push_back('n');
    const std::vector<TurnRow> all = run_all(kinds, o, chunks);
    std::vector<Summary> s;
    for (char kind : kinds) s.push_back(summarize(all, kind));
    std::printf("\n%d turns per mode (interleaved), %d-token answers, %d 1-token round trips per turn; conversation %d → %d prompt "
                "tokens\n",
                o.turns, o.answer_tokens, o.round_trips, all.front().prompt_tokens, all.back().prompt_tokens);
    std::printf("| mode | round-trip overhead p50 / p90 (ms) | per-token overhead p50 / p90 (ms) | TTFT p50 / p90 (ms) |\n");
    std::printf("|---|---|---|---|\n");
    for (size_t i = 0; i < kinds.size(); ++i)
        std::printf("| %s | %.3f / %.3f | %.3f / %.3f | %.1f / %.1f |\n", mode_name(kinds[i]), s[i].rt_p50, s[i].rt_p90,
                    s[i].tok_p50, s[i].tok_p90, s[i].ttft_p50, s[i].ttft_p90);
    std::printf("\nWhere the 1-token round trip goes, medians in ms (up: client sent → server received; prepare: → engine "
                "submitted; engine: submitted → final event, of which queued: → admitted, and retire: last token → final "
                "event; down: final event → client has it), the mean inter-delta gap minus the engine's, and the engine's TTFT of the answers:\n");
    std::printf("| mode | up | prepare | engine (queued, retire) | down | gap overhead | engine TTFT |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < kinds.size(); ++i)
        std::printf("| %s | %.3f | %.3f | %.2f (%.3f, %.3f) | %.3f | %.4f | %.1f |\n", mode_name(kinds[i]), s[i].up_p50,
                    s[i].prepare_p50, s[i].engine_p50, s[i].queued_p50, s[i].retire_p50, s[i].down_p50, s[i].gap_p50,
                    s[i].server_ttft_p50);
    auto less = [](double a, double c) { return a > 0 ? 100.0 * (1.0 - c / a) : 0.0; };
    std::printf("\n(c) vs (a), medians: round-trip overhead %.0f%% less (target ≥ 80%%), per-token overhead %.0f%% less "
                "(target ≥ 30%%), TTFT %.0f%% lower (target ≥ 50%%)\n",
                less(s[0].rt_p50, s[2].rt_p50), less(s[0].tok_p50, s[2].tok_p50), less(s[0].ttft_p50, s[2].ttft_p50));
    std::printf("(c) + warm-up vs (a), medians: round-trip overhead %.0f%% less, per-token overhead %.0f%% less, TTFT %.0f%% lower "
                "(the file prefilled while the question is typed: its warm-up took %.1f / %.1f ms p50 / p90, the typing time it needs)\n",
                less(s[0].rt_p50, s[3].rt_p50), less(s[0].tok_p50, s[3].tok_p50), less(s[0].ttft_p50, s[3].ttft_p50), s[3].warmup_p50,
                s[3].warmup_p90);
    if (o.no_reuse_turns > 0) {
        // Over the same turns only: the no-reuse row stops early, and TTFT grows with the conversation.
        std::vector<TurnRow> first;
        for (const TurnRow& r : all)
            if (r.turn <= o.no_reuse_turns) first.push_back(r);
        const Summary c = summarize(first, 'c'), n = summarize(first, 'n'), a = summarize(first, 'a');
        std::printf("turns 1–%d only, medians: TTFT (a) %.1f ms, (a, no KV reuse) %.1f ms, (c) %.1f ms: (c) %.0f%% lower than "
                    "(a, no KV reuse), %.0f%% lower than (a); round-trip overhead (c) %.0f%% less than (a, no KV reuse)\n",
                    o.no_reuse_turns, a.ttft_p50, n.ttft_p50, c.ttft_p50, less(n.ttft_p50, c.ttft_p50), less(a.ttft_p50, c.ttft_p50),
                    less(n.rt_p50, c.rt_p50));
    }
    if (!o.csv.empty()) {
        std::ofstream out(o.csv);
        if (!out) fail(o.csv, ": cannot write");
        out << "mode,turn,prompt_tokens,cached_tokens,ttft_ms,server_ttft_ms,delivery_p50_ms,gap_overhead_ms,rt_p50_ms,"
               "server_rt_p50_ms,up_p50_ms,prepare_p50_ms,down_p50_ms,warmup_ms\n";
        for (const TurnRow& r : all)
            out << r.mode << ',' << r.turn << ',' << r.prompt_tokens << ',' << r.cached_tokens << ',' << r.ttft_ms << ','
                << r.server_ttft_ms << ',' << pct(r.delivery_ms, .5) << ',' << r.gap_overhead_ms << ',' << pct(r.rt_ms, .5) << ','
                << pct(r.server_rt_ms, .5) << ',' << pct(r.up_ms, .5) << ',' << pct(r.prepare_ms, .5) << ',' << pct(r.down_ms, .5)
                << ',' << r.warmup_ms << '\n';
    }
}

}  // namespace

void register_bench_latency(CLI::App& bench) {
    auto o = std::make_shared<LatencyOptions>();
    CLI::App* cmd = bench.add_subcommand("latency", "Client-observed latency against a running `flint serve`: new HTTP connection + full resend vs keep-alive vs persistent WebSocket");
    cmd->add_option("--url", o->url, "Server URL")->capture_default_str();
    cmd->add_option("--model", o->model, "Model name (default: the server's only model)");
    cmd->add_option("--turns", o->turns, "Turns per mode")->check(CLI::Range(1, 1000))->capture_default_str();
    cmd->add_option("--chunk-bytes", o->chunk_bytes, "Source bytes attached per turn")->check(CLI::Range(16, 1 << 22))->capture_default_str();
    cmd->add_option("--answer-tokens", o->answer_tokens, "Tokens per answer")->check(CLI::Range(2, 4096))->capture_default_str();
    cmd->add_option("--round-trips", o->round_trips, "1-token follow-ups per turn (round-trip samples)")->check(CLI::Range(1, 100))->capture_default_str();
    cmd->add_option("--csv", o->csv, "Write every turn's measurements here (for plotting)");
    cmd->add_option("--no-reuse-turns", o->no_reuse_turns, "Also run (a) with every turn's prompt made new (no prefix-cache hit: a server without cross-request KV reuse), for this many turns")->check(CLI::Range(0, 1000));
    cmd->callback([o] {
        try {
            bench_latency(*o);
        } catch (const Error& e) {
            std::fprintf(stderr, "flint bench latency: %s\n", e.what());
            throw CLI::RuntimeError(1);
        }
    });
}

}  // namespace flint::cli
