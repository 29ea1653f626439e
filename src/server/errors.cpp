#include "server/errors.h"

#include <random>

#include <nlohmann/json.hpp>

namespace flint::server {

ApiError bad_request(std::string message, std::string param, std::string code) {
    return ApiError{400, "invalid_request_error", std::move(code), std::move(param), std::move(message)};
}
ApiError not_found(std::string message, std::string param, std::string code) {
    return ApiError{404, "invalid_request_error", std::move(code), std::move(param), std::move(message)};
}
ApiError server_error(std::string message) { return ApiError{500, "server_error", "server_error", "", std::move(message)}; }

static nlohmann::json null_if_empty(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

nlohmann::json error_body(const ApiError& e) {
    return {{"error", {{"message", e.message}, {"type", e.type}, {"param", null_if_empty(e.param)}, {"code", null_if_empty(e.code)}}}};
}

nlohmann::json ws_error_frame(const ApiError& e) {
    nlohmann::json j = error_body(e);
    j["type"] = "error";
    j["status"] = e.status;
    return j;
}

std::string make_id(const char* prefix) {
    // Ids only need to be unguessable enough not to collide across restarts; a per-thread 64-bit
    // generator seeded from random_device twice gives 128 random bits per id.
    thread_local std::mt19937_64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};
    static const char* hex = "0123456789abcdef";
    std::string s = prefix;
    for (int w = 0; w < 2; ++w) {
        uint64_t v = rng();
        for (int i = 0; i < 16; ++i) s += hex[(v >> (4 * i)) & 15];
    }
    return s;
}

}  // namespace flint::server
