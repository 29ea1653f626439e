// flint/server/auth.h — who may call: API keys (Authorization: Bearer), optionally limited to models.
//
// With no key configured the server is open but accepts loopback clients only (a local tool should not
// become a network service by accident); it says so when it starts.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flint::server {

struct ApiKey {
    std::string key;
    std::vector<std::string> models;  // empty: every model
    bool admin = false;               // may POST /admin/limits
};

class Auth {
public:
    void add(ApiKey k) { keys_.push_back(std::move(k)); }
    // A keys file: JSON {"keys":[{"key":"…","models":["…"],"admin":true}]}, or plain text, one key per line.
    void load_file(const std::string& path);
    bool open() const { return keys_.empty(); }

    // The caller's key (nullptr in open mode). Throws ApiError: 401 without a valid key, 403 for a remote
    // client in open mode.
    const ApiKey* authenticate(std::optional<std::string_view> authorization, bool loopback) const;
    // Throws ApiError 403 when the key may not use the model.
    void check_model(const ApiKey* key, const std::string& model) const;
    // Throws ApiError 403 unless the caller may administer (an admin key, or loopback in open mode).
    void check_admin(const ApiKey* key) const;

private:
    std::vector<ApiKey> keys_;
};

}  // namespace flint::server
