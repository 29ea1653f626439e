#include "server/rate_limit.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "util/error.h"

namespace flint::server {
namespace {

Limits parse_limits(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) throw bad_request("limits: '" + where + "' must be an object", where);
    Limits l;
    auto num = [&](const char* k) {
        auto it = j.find(k);
        if (it == j.end() || it->is_null()) return 0.0;
        if (!it->is_number() || it->get<double>() < 0) throw bad_request(std::string("limits: ") + where + "." + k + " must be a number >= 0", where);
        return it->get<double>();
    };
    l.requests_per_minute = num("requests_per_minute");
    l.tokens_per_minute = num("tokens_per_minute");
    return l;
}

nlohmann::json limits_json(const Limits& l) {
    return {{"requests_per_minute", l.requests_per_minute}, {"tokens_per_minute", l.tokens_per_minute}};
}

}  // namespace

std::string format_reset(double s) {
    char buf[64];
    if (s < 1) std::snprintf(buf, sizeof buf, "%dms", static_cast<int>(std::ceil(s * 1000)));
    else if (s < 60) std::snprintf(buf, sizeof buf, "%.3gs", s);
    else std::snprintf(buf, sizeof buf, "%dm%ds", static_cast<int>(s / 60), static_cast<int>(std::fmod(s, 60)));
    return buf;
}

void RateLimiter::configure(const nlohmann::json& cfg) {
    if (!cfg.is_object()) throw bad_request("limits: the configuration must be a JSON object");
    Limits def = cfg.contains("default") ? parse_limits(cfg["default"], "default") : Limits{};
    std::map<std::string, Limits> keys;
    if (cfg.contains("keys")) {
        if (!cfg["keys"].is_object()) throw bad_request("limits: 'keys' must be an object", "keys");
        for (auto& [k, v] : cfg["keys"].items()) keys[k] = parse_limits(v, "keys." + k);
    }
    std::lock_guard lock(mu_);
    default_ = def;
    per_key_ = std::move(keys);
    for (auto& [k, b] : buckets_) {
        Limits l = limits_for(k);
        if (l.requests_per_minute > 0) b.requests = std::min(b.requests, l.requests_per_minute);
        if (l.tokens_per_minute > 0) b.tokens = std::min(b.tokens, l.tokens_per_minute);
    }
}

void RateLimiter::load_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail(path, ": cannot read the limits file");
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded()) fail(path, ": not valid JSON");
    try {
        configure(j);
    } catch (const ApiError& e) {
        fail(path, ": ", e.message);
    }
    std::lock_guard lock(mu_);
    file_ = path;
}

void RateLimiter::reload() {
    std::string f;
    {
        std::lock_guard lock(mu_);
        f = file_;
    }
    if (!f.empty()) load_file(f);
}

nlohmann::json RateLimiter::config() const {
    std::lock_guard lock(mu_);
    nlohmann::json keys = nlohmann::json::object();
    for (auto& [k, l] : per_key_) keys[k] = limits_json(l);
    return {{"default", limits_json(default_)}, {"keys", keys}};
}

Limits RateLimiter::limits_for(const std::string& key) const {
    auto it = per_key_.find(key);
    return it == per_key_.end() ? default_ : it->second;
}

void RateLimiter::refill(Bucket& b, const Limits& l) {
    auto now = std::chrono::steady_clock::now();
    if (!b.init) {
        b.requests = l.requests_per_minute;
        b.tokens = l.tokens_per_minute;
        b.last = now;
        b.init = true;
        return;
    }
    double dt = std::chrono::duration<double>(now - b.last).count();
    b.last = now;
    b.requests = std::min(l.requests_per_minute, b.requests + dt * l.requests_per_minute / 60.0);
    b.tokens = std::min(l.tokens_per_minute, b.tokens + dt * l.tokens_per_minute / 60.0);
}

void RateLimiter::admit(const std::string& key, HeaderList& headers) {
    std::lock_guard lock(mu_);
    Limits l = limits_for(key);
    if (l.requests_per_minute <= 0 && l.tokens_per_minute <= 0) return;
    Bucket& b = buckets_[key];
    refill(b, l);
    double wait = 0;
    if (l.requests_per_minute > 0 && b.requests < 1) wait = (1 - b.requests) * 60.0 / l.requests_per_minute;
    if (l.tokens_per_minute > 0 && b.tokens < 0) wait = std::max(wait, -b.tokens * 60.0 / l.tokens_per_minute);
    if (wait <= 0 && l.requests_per_minute > 0) b.requests -= 1;
    auto add = [&](const char* name, std::string v) { headers.emplace_back(name, std::move(v)); };
    if (l.requests_per_minute > 0) {
        add("x-ratelimit-limit-requests", std::to_string(static_cast<int64_t>(l.requests_per_minute)));
        add("x-ratelimit-remaining-requests", std::to_string(static_cast<int64_t>(std::max(0.0, std::floor(b.requests)))));
        add("x-ratelimit-reset-requests", format_reset((l.requests_per_minute - b.requests) * 60.0 / l.requests_per_minute));
    }
    if (l.tokens_per_minute > 0) {
        add("x-ratelimit-limit-tokens", std::to_string(static_cast<int64_t>(l.tokens_per_minute)));
        add("x-ratelimit-remaining-tokens", std::to_string(static_cast<int64_t>(std::max(0.0, std::floor(b.tokens)))));
        add("x-ratelimit-reset-tokens", format_reset((l.tokens_per_minute - b.tokens) * 60.0 / l.tokens_per_minute));
    }
    if (wait > 0) {
        ApiError e{429, "requests", "rate_limit_exceeded", "",
                   "Rate limit reached for this API key. Please try again in " + format_reset(wait) + "."};
        e.retry_after_s = wait;
        throw e;
    }
}

void RateLimiter::charge_tokens(const std::string& key, int64_t tokens) {
    std::lock_guard lock(mu_);
    Limits l = limits_for(key);
    if (l.tokens_per_minute <= 0) return;
    Bucket& b = buckets_[key];
    refill(b, l);
    b.tokens -= static_cast<double>(tokens);
}

}  // namespace flint::server
