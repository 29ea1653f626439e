#include "server/auth.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "util/error.h"

namespace flint::server {

void Auth::load_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail(path, ": cannot read the keys file");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
        // Every mistake names the file and the entry: a server must not start with keys it misread.
        const auto keys = j.find("keys");
        if (keys == j.end() || !keys->is_array()) fail(path, ": \"keys\" must be an array of {\"key\": …} objects");
        for (size_t i = 0; i < keys->size(); ++i) {
            const nlohmann::json& k = (*keys)[i];
            const std::string at = path + ": keys[" + std::to_string(i) + "]";
            if (!k.is_object() || !k.contains("key") || !k["key"].is_string() || k["key"].get<std::string>().empty())
                fail(at, " needs a non-empty string \"key\"");
            ApiKey a{k["key"].get<std::string>(), {}, false};
            if (k.contains("admin")) {
                if (!k["admin"].is_boolean()) fail(at, ".admin must be true or false");
                a.admin = k["admin"].get<bool>();
            }
            if (k.contains("models")) {
                if (!k["models"].is_array()) fail(at, ".models must be an array of model names");
                for (const auto& m : k["models"]) {
                    if (!m.is_string()) fail(at, ".models must be an array of model names");
                    a.models.push_back(m.get<std::string>());
                }
            }
            add(std::move(a));
        }
        return;
    }
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && line[0] != '#') add(ApiKey{line, {}, false});
    }
}

const ApiKey* Auth::authenticate(std::optional<std::string_view> authorization, bool loopback) const {
    if (open()) {
        if (!loopback)
            throw ApiError{403, "invalid_request_error", "forbidden", "",
                           "This server has no API key configured and accepts loopback clients only."};
        return nullptr;
    }
    auto unauthorized = [](const char* msg) { return ApiError{401, "invalid_request_error", "invalid_api_key", "", msg}; };
    if (!authorization) throw unauthorized("You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.");
    std::string_view h = *authorization;
    constexpr std::string_view bearer = "Bearer ";
    if (h.size() <= bearer.size() || h.substr(0, bearer.size()) != bearer)
        throw unauthorized("Malformed Authorization header: expected 'Bearer <key>'.");
    std::string_view key = h.substr(bearer.size());
    for (const ApiKey& k : keys_)
        if (k.key == key) return &k;
    throw unauthorized("Incorrect API key provided.");
}

void Auth::check_model(const ApiKey* key, const std::string& model) const {
    if (!key || key->models.empty()) return;
    for (const std::string& m : key->models)
        if (m == model) return;
    throw ApiError{403, "invalid_request_error", "model_not_allowed", "model", "This API key may not use model '" + model + "'."};
}

void Auth::check_admin(const ApiKey* key) const {
    if (open() || (key && key->admin)) return;
    throw ApiError{403, "invalid_request_error", "forbidden", "", "This endpoint needs an admin key."};
}

}  // namespace flint::server
