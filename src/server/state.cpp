#include "server/state.h"

namespace flint::server {

void ServerState::add_live(const std::string& id, LiveResponse l) {
    std::lock_guard lock(mu_);
    live_[id] = std::move(l);
}

void ServerState::remove_live(const std::string& id) {
    std::lock_guard lock(mu_);
    live_.erase(id);
}

bool ServerState::cancel_live(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    it->second.runtime->cancel(it->second.request_id);
    return true;
}

void ServerState::update_live(const std::string& id, nlohmann::json snapshot) {
    std::lock_guard lock(mu_);
    if (auto it = live_.find(id); it != live_.end()) it->second.snapshot = std::move(snapshot);
}

std::optional<nlohmann::json> ServerState::live_snapshot(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = live_.find(id);
    if (it == live_.end()) return std::nullopt;
    return it->second.snapshot;
}

void ServerState::put(const ResponseRecord& r) {
    if (store) {
        store->put(r);
        return;
    }
    std::lock_guard lock(mu_);
    memory_store_[r.id] = StoredResponse{response_object(r), r.req.input_json, History{r.model, r.history, r.req.instructions}};
}

std::optional<StoredResponse> ServerState::get(const std::string& id) {
    if (store) return store->get(id);
    std::lock_guard lock(mu_);
    auto it = memory_store_.find(id);
    if (it == memory_store_.end()) return std::nullopt;
    return it->second;
}

bool ServerState::remove(const std::string& id) {
    if (store) return store->remove(id);
    std::lock_guard lock(mu_);
    return memory_store_.erase(id) > 0;
}

}  // namespace flint::server
