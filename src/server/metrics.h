// flint/server/metrics.h — Prometheus text exposition for GET /metrics.
//
// Counters and histograms are updated from io threads and (histograms) from engine callbacks, so they are
// atomics or short mutex sections; gauges about the engines (queue depth, KV blocks) are read from
// Runtime::stats() when scraped.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace flint::server {

class ModelRegistry;

class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double v);
    void render(std::string& out, const std::string& name, const std::string& help) const;

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // one per bound, plus +Inf
    std::atomic<uint64_t> n_{0};
    std::atomic<uint64_t> sum_us_{0};                 // sum in microseconds, to stay integral
};

class Metrics {
public:
    Metrics();
    void request(const std::string& endpoint, int status);
    std::string render(ModelRegistry& models) const;

    std::atomic<uint64_t> prompt_tokens{0}, cached_tokens{0}, completion_tokens{0};
    std::atomic<int64_t> connections{0}, websockets{0}, in_flight{0};  // open now
    std::atomic<uint64_t> connections_total{0}, websockets_total{0};     // ever opened
    std::atomic<uint64_t> rate_limited{0}, disconnects{0};
    std::atomic<uint64_t> ws_direct_writes{0};  // WebSocket writes made by an engine thread
    Histogram ttft;         // seconds: request accepted → first token event
    Histogram inter_token;  // seconds between token events of one response

private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
};

}  // namespace flint::server
