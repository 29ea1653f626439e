#include "server/metrics.h"

#include <cstdio>

#include "server/model_registry.h"

namespace flint::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
    counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
    for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i] = 0;
}

void Histogram::observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    n_.fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(static_cast<uint64_t>(v * 1e6), std::memory_order_relaxed);
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cum = 0;
    char buf[128];
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cum += counts_[i].load();
        std::snprintf(buf, sizeof buf, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), bounds_[i], static_cast<unsigned long long>(cum));
        out += buf;
    }
    cum += counts_[bounds_.size()].load();
    std::snprintf(buf, sizeof buf, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name.c_str(),
                  static_cast<unsigned long long>(cum), name.c_str(), sum_us_.load() / 1e6, name.c_str(),
                  static_cast<unsigned long long>(n_.load()));
    out += buf;
}

Metrics::Metrics()
    : ttft({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      inter_token({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}) {}

void Metrics::request(const std::string& endpoint, int status) {
    std::lock_guard lock(mu_);
    ++requests_[{endpoint, status}];
}

std::string Metrics::render(ModelRegistry& models) const {
    std::string out;
    auto line = [&](const std::string& s) { out += s + "\n"; };
    line("# HELP flint_requests_total HTTP requests and WebSocket response.create messages, by endpoint and status.");
    line("# TYPE flint_requests_total counter");
    {
        std::lock_guard lock(mu_);
        for (auto& [k, n] : requests_)
            line("flint_requests_total{endpoint=\"" + k.first + "\",status=\"" + std::to_string(k.second) + "\"} " + std::to_string(n));
    }
    auto counter = [&](const char* name, const char* help, uint64_t v) {
        line(std::string("# HELP ") + name + " " + help);
        line(std::string("# TYPE ") + name + " counter");
        line(std::string(name) + " " + std::to_string(v));
    };
    auto series_of = [&](const char* type) {
        return [&, type](const std::string& name, const char* help, const std::string& series) {
            line("# HELP " + name + " " + help);
            line("# TYPE " + name + " " + type);
            out += series;
        };
    };
    auto gauge = series_of("gauge");
    auto labelled_counter = series_of("counter");
    counter("flint_prompt_tokens_total", "Prompt tokens of finished requests.", prompt_tokens);
    counter("flint_cached_tokens_total", "Prompt tokens whose KV was reused instead of prefilled.", cached_tokens);
    counter("flint_completion_tokens_total", "Generated tokens.", completion_tokens);
    counter("flint_rate_limited_total", "Requests refused with 429.", rate_limited);
    counter("flint_client_disconnects_total", "Responses cancelled because the client went away.", disconnects);
    counter("flint_connections_total", "Client connections accepted.", connections_total);
    counter("flint_websocket_sessions_total", "WebSocket sessions opened (upgrades accepted).", websockets_total);
    counter("flint_websocket_direct_writes_total", "WebSocket writes of events made by the engine thread itself.", ws_direct_writes);
    gauge("flint_connections", "Open client connections.", "flint_connections " + std::to_string(connections.load()) + "\n");
    gauge("flint_websocket_sessions", "Open WebSocket sessions.", "flint_websocket_sessions " + std::to_string(websockets.load()) + "\n");
    gauge("flint_responses_in_flight", "Responses being generated.", "flint_responses_in_flight " + std::to_string(in_flight.load()) + "\n");
    std::string queued, running, used, total, cached, steps, prefilled, drafted, accepted;
    for (const auto& m : models.all()) {
        RuntimeStats s = m->runtime->stats();
        std::string lbl = "{model=\"" + m->name + "\"} ";
        queued += "flint_queue_depth" + lbl + std::to_string(s.queued) + "\n";
        running += "flint_running_sequences" + lbl + std::to_string(s.running) + "\n";
        used += "flint_kv_blocks_used" + lbl + std::to_string(s.kv_blocks_used) + "\n";
        cached += "flint_kv_blocks_cached" + lbl + std::to_string(s.kv_blocks_cached) + "\n";
        total += "flint_kv_blocks_total" + lbl + std::to_string(s.kv_blocks_total) + "\n";
        steps += "flint_engine_steps_total" + lbl + std::to_string(s.steps_total) + "\n";
        prefilled += "flint_prefilled_tokens_total" + lbl + std::to_string(s.prefilled_tokens_total) + "\n";
        auto by_source = [&](std::string& series, const char* name, uint64_t prediction, uint64_t lookup) {
            const std::string lbl_src = "{model=\"" + m->name + "\",source=";
            series += name + lbl_src + "\"prediction\"} " + std::to_string(prediction) + "\n";
            series += name + lbl_src + "\"prompt_lookup\"} " + std::to_string(lookup) + "\n";
        };
        by_source(drafted, "flint_draft_tokens_total", s.drafted_prediction_total, s.drafted_lookup_total);
        by_source(accepted, "flint_draft_tokens_accepted_total", s.accepted_prediction_total, s.accepted_lookup_total);
    }
    gauge("flint_queue_depth", "Requests waiting for admission.", queued);
    gauge("flint_running_sequences", "Sequences decoding.", running);
    gauge("flint_kv_blocks_used", "KV blocks held by sequences or the prefix cache.", used);
    gauge("flint_kv_blocks_cached", "KV blocks held only by the prefix cache (evictable).", cached);
    gauge("flint_kv_blocks_total", "KV blocks in the pool.", total);
    labelled_counter("flint_engine_steps_total", "Forward passes the engine ran (prefill chunks and decode steps, all sequences "
                                                 "batched in one).", steps);
    labelled_counter("flint_prefilled_tokens_total", "Prompt tokens the engine computed (those not reused from the prefix cache).",
                     prefilled);
    labelled_counter("flint_draft_tokens_total", "Speculative draft tokens verified, by source (the request's prediction, "
                                                 "or n-gram prompt lookup).", drafted);
    labelled_counter("flint_draft_tokens_accepted_total", "Draft tokens the model agreed with (kept), by source.", accepted);
    ttft.render(out, "flint_ttft_seconds", "Time from request accepted to first token.");
    inter_token.render(out, "flint_inter_token_seconds", "Time between consecutive tokens of one response.");
    return out;
}

}  // namespace flint::server
