// flint/server/state.h — what every session shares: config, models, store, auth, limits, metrics, and
// the responses being generated now (for POST /v1/responses/{id}/cancel and GET while in flight).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/auth.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/rate_limit.h"
#include "server/response_store.h"
#include "server/responses_api.h"
#include "server/server.h"

namespace flint::server {

struct LiveResponse {
    Runtime* runtime = nullptr;
    uint64_t request_id = 0;
    nlohmann::json snapshot;  // the response object so far (status in_progress; refreshed as it generates)
};

struct ServerState {
    ServerConfig cfg;
    ModelRegistry& models;
    std::unique_ptr<ResponseStore> store;  // null: stored responses live in `memory_store` only
    Auth auth;
    RateLimiter limits;
    Metrics metrics;
    std::atomic<bool> stopping{false};

    ServerState(ServerConfig c, ModelRegistry& m) : cfg(std::move(c)), models(m) {}

    // In-flight responses, by response id.
    void add_live(const std::string& id, LiveResponse l);
    void remove_live(const std::string& id);
    bool cancel_live(const std::string& id);
    std::optional<nlohmann::json> live_snapshot(const std::string& id);
    void update_live(const std::string& id, nlohmann::json snapshot);  // (no-op once it is gone)

    // Store access (SQLite, or an in-memory map when no path was given).
    void put(const ResponseRecord& r);
    std::optional<StoredResponse> get(const std::string& id);
    bool remove(const std::string& id);

private:
    std::mutex mu_;
    std::unordered_map<std::string, LiveResponse> live_;
    std::unordered_map<std::string, StoredResponse> memory_store_;
};

}  // namespace flint::server
