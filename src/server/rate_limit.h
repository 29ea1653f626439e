// flint/server/rate_limit.h — per-key token buckets: requests per minute and tokens per minute.
//
// A request is admitted when the request bucket holds one request and the token bucket is not in debt;
// its real token count (prompt + output) is charged when it finishes, so the token bucket may go negative
// and hold back later requests until it refills (the size of a generation is unknown up front).
// Limits come from a JSON config, reloadable at run time (POST /admin/limits, SIGHUP):
//   {"default": {"requests_per_minute": 600, "tokens_per_minute": 200000},
//    "keys": {"sk-…": {"requests_per_minute": 60}}}
// A missing or 0 limit means unlimited. Keyless (open mode) callers share the key "".
#pragma once
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace flint::server {

struct Limits {
    double requests_per_minute = 0;
    double tokens_per_minute = 0;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class RateLimiter {
public:
    // Replaces the configuration; buckets keep their level (clamped to the new capacity). Throws ApiError 400.
    void configure(const nlohmann::json& cfg);
    void load_file(const std::string& path);  // throws flint::Error
    void reload();                            // the last file again (SIGHUP); no-op without one
    nlohmann::json config() const;

    // Admits one request for `key` or throws ApiError 429 (with retry_after_s). Fills x-ratelimit-* headers.
    void admit(const std::string& key, HeaderList& headers);
    void charge_tokens(const std::string& key, int64_t tokens);

private:
    struct Bucket {
        double requests = 0, tokens = 0;
        std::chrono::steady_clock::time_point last{};
        bool init = false;
    };
    Limits limits_for(const std::string& key) const;
    void refill(Bucket& b, const Limits& l);

    mutable std::mutex mu_;
    Limits default_;
    std::map<std::string, Limits> per_key_;
    std::map<std::string, Bucket> buckets_;
    std::string file_;
};

// "1.5s", "12ms", "6m0s" — the duration format of OpenAI's x-ratelimit-reset-* headers.
std::string format_reset(double seconds);

}  // namespace flint::server
