// `flint bench latency` — what the persistent WebSocket buys, measured against a running `flint serve`.
// The same multi-turn coding conversation (a source file attached per turn, a short answer, then a
// 1-token follow-up) is run three ways, each with its own conversation prefix so no mode reuses another's KV:
//   (a) naive:  a new TCP connection per request, SSE, the whole conversation resent every turn
//   (b) http:   HTTP keep-alive, SSE, previous_response_id
//   (c) ws:     one persistent WebSocket, previous_response_id
// Server compute comes from the server itself: /metrics is read before and after every request, and the
// deltas of flint_ttft_seconds (request accepted → first token) and flint_inter_token_seconds (engine-side
// gaps between tokens) are that request's own times (requests run one at a time).
#include <algorithm>
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
    std::string csv;
};

struct ServerClock {  // sums and counts of the server's two latency histograms
    double ttft_sum = 0, itl_sum = 0;
    double ttft_n = 0, itl_n = 0;
};

double metric(const std::string& text, const std::string& name) {
    size_t p = text.find("\n" + name + " ");
    return p == std::string::npos ? 0 : std::atof(text.c_str() + p + name.size() + 2);
}

ServerClock read_clock(HttpClient& http) {
    HttpResponse r = http.request("GET", "/metrics", "");
    if (r.status != 200) fail("GET /metrics answered ", r.status);
    return {metric(r.body, "flint_ttft_seconds_sum"), metric(r.body, "flint_inter_token_seconds_sum"),
            metric(r.body, "flint_ttft_seconds_count"), metric(r.body, "flint_inter_token_seconds_count")};
}

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
    double client_itl_ms;     // client: mean gap between deltas
    double server_itl_ms;     // server: mean engine-side gap
    double rt_ms;             // client: 1-token follow-up, sent → terminal event
    double server_rt_ms;      // server: that follow-up's accepted → first token
};

class Mode {
public:
    Mode(char kind, const LatencyOptions& o) : kind_(kind), o_(o), url_(parse_url(o.url)) {
        if (kind == 'b') http_ = std::make_unique<HttpClient>(url_, true);
        if (kind == 'c') {
            ws_ = std::make_unique<WsClient>();
            ws_->connect(with_scheme(url_, "ws", "/v1/responses"), {});
        }
    }

    // One request; the conversation (and previous id) advances with it.
    Turn ask(const std::string& text, int max_tokens) {
        json item = message_item("user", text);
        json body = {{"input", json::array()}, {"max_output_tokens", max_tokens}, {"temperature", 0}};
        if (!o_.model.empty()) body["model"] = o_.model;
        // A per-mode first line keeps each mode's conversation out of the others' prefix cache.
        body["instructions"] = std::string("You review C++ code. Session ") + kind_ + ".";
        if (kind_ == 'a' || prev_.empty()) {
            for (const json& it : history_) body["input"].push_back(it);
        } else {
            body["previous_response_id"] = prev_;
        }
        body["input"].push_back(item);
        body["store"] = kind_ == 'b';  // HTTP chaining reads the store; the WebSocket keeps its own state
        Turn t;
        if (kind_ == 'c') {
            body["type"] = "response.create";
            t.sent = Clock::now();
            ws_->send(body.dump());
            while (!t.finished) {
                auto f = ws_->next(60000);
                if (!f) fail("the WebSocket closed mid-benchmark: ", ws_->close_reason());
                t.apply(json::parse(f->text), f->at);
            }
        } else {
            std::unique_ptr<HttpClient> fresh;
            HttpClient* h = http_.get();
            if (kind_ == 'a') {
                fresh = std::make_unique<HttpClient>(url_, false);
                h = fresh.get();
            }
            SseTurn s = post_response_stream(*h, "/v1/responses", body, {});
            if (s.status != 200) fail("mode ", kind_, ": ", describe_failure(s.status, s.error));
            t = std::move(s.turn);
        }
        if (!t.finished || t.status == "failed" || t.status == "error")
            fail("mode ", kind_, ": the request failed: ", t.error_message.empty() ? t.status : t.error_message);
        history_.push_back(item);
        history_.push_back(message_item("assistant", t.text));
        prev_ = t.response_id;
        return t;
    }

private:
    char kind_;
    const LatencyOptions& o_;
    Url url_;
    std::unique_ptr<HttpClient> http_;
    std::unique_ptr<WsClient> ws_;
    json history_ = json::array();
    std::string prev_;
};

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double idx = p * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(idx);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

std::vector<TurnRow> run_mode(char kind, const LatencyOptions& o, const std::vector<std::string>& chunks, HttpClient& metrics) {
    Mode m(kind, o);
    std::vector<TurnRow> rows;
    for (int i = 0; i < o.turns; ++i) {
        TurnRow r{};
        r.mode = kind;
        r.turn = i + 1;
        ServerClock c0 = read_clock(metrics);
        Turn a = m.ask("Review this part of the file:\n```cpp\n" + chunks[i] + "\n```\n", o.answer_tokens);
        ServerClock c1 = read_clock(metrics);
        Turn b = m.ask("Anything else?", 1);
        ServerClock c2 = read_clock(metrics);
        r.prompt_tokens = a.input_tokens;
        r.cached_tokens = a.cached_tokens;
        r.ttft_ms = a.ttft_ms();
        if (a.delta_times.size() > 1)
            r.client_itl_ms = std::chrono::duration<double, std::milli>(a.delta_times.back() - a.delta_times.front()).count() /
                              static_cast<double>(a.delta_times.size() - 1);
        const double itl_n = c1.itl_n - c0.itl_n;
        r.server_itl_ms = itl_n > 0 ? (c1.itl_sum - c0.itl_sum) * 1000 / itl_n : 0;
        r.rt_ms = b.total_ms();
        r.server_rt_ms = c2.ttft_n > c1.ttft_n ? (c2.ttft_sum - c1.ttft_sum) * 1000 : 0;
        rows.push_back(r);
        std::fprintf(stderr, "  mode %c turn %2d/%d: %6d prompt tokens (%d cached), ttft %8.2f ms\n", kind, i + 1, o.turns, r.prompt_tokens, r.cached_tokens, r.ttft_ms);
        std::fflush(stderr);
    }
    std::fprintf(stderr, "\n");
    return rows;
}

void bench_latency(const LatencyOptions& o) {
    const std::vector<std::string> chunks = code_chunks(o.turns, o.chunk_bytes);
    HttpClient metrics(parse_url(o.url), true);
    read_clock(metrics);  // fails early when the server is not there
    std::vector<TurnRow> all;
    for (char kind : {'a', 'b', 'c'}) {
        auto rows = run_mode(kind, o, chunks, metrics);
        all.insert(all.end(), rows.begin(), rows.end());
    }
    struct Summary {
        double rt_p50, rt_p90, tok_p50, tok_p90, ttft_p50, ttft_p90;
    };
    auto summarize = [&](char kind) {
        std::vector<double> rt, tok, ttft;
        for (const TurnRow& r : all) {
            if (r.mode != kind) continue;
            rt.push_back(r.rt_ms - r.server_rt_ms);
            if (r.client_itl_ms > 0) tok.push_back(r.client_itl_ms - r.server_itl_ms);
            ttft.push_back(r.ttft_ms);
        }
        return Summary{pct(rt, .5), pct(rt, .9), pct(tok, .5), pct(tok, .9), pct(ttft, .5), pct(ttft, .9)};
    };
    const char* names[] = {"(a) new connection + SSE, full resend", "(b) keep-alive + SSE, previous_response_id",
                           "(c) persistent WebSocket, previous_response_id"};
    Summary s[3] = {summarize('a'), summarize('b'), summarize('c')};
    std::printf("\n%d turns per mode, %d-token answers; conversation %d → %d prompt tokens\n", o.turns, o.answer_tokens,
                all.front().prompt_tokens, all[static_cast<size_t>(o.turns) - 1].prompt_tokens);
    std::printf("| mode | round-trip overhead p50 / p90 (ms) | per-token overhead p50 / p90 (ms) | TTFT p50 / p90 (ms) |\n");
    std::printf("|---|---|---|---|\n");
    for (int i = 0; i < 3; ++i)
        std::printf("| %s | %.3f / %.3f | %.4f / %.4f | %.2f / %.2f |\n", names[i], s[i].rt_p50, s[i].rt_p90, s[i].tok_p50,
                    s[i].tok_p90, s[i].ttft_p50, s[i].ttft_p90);
    auto less = [](double a, double c) { return a > 0 ? 100.0 * (1.0 - c / a) : 0.0; };
    std::printf("\n(c) vs (a), medians: round-trip overhead %.0f%% less (target ≥ 80%%), per-token overhead %.0f%% less "
                "(target ≥ 30%%), TTFT %.0f%% lower (target ≥ 50%%)\n",
                less(s[0].rt_p50, s[2].rt_p50), less(s[0].tok_p50, s[2].tok_p50), less(s[0].ttft_p50, s[2].ttft_p50));
    if (!o.csv.empty()) {
        std::ofstream out(o.csv);
        if (!out) fail(o.csv, ": cannot write");
        out << "mode,turn,prompt_tokens,cached_tokens,ttft_ms,client_itl_ms,server_itl_ms,rt_ms,server_rt_ms\n";
        for (const TurnRow& r : all)
            out << r.mode << ',' << r.turn << ',' << r.prompt_tokens << ',' << r.cached_tokens << ',' << r.ttft_ms << ','
                << r.client_itl_ms << ',' << r.server_itl_ms << ',' << r.rt_ms << ',' << r.server_rt_ms << '\n';
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
    cmd->add_option("--csv", o->csv, "Write every turn's measurements here (for plotting)");
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
