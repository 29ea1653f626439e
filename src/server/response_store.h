// flint/server/response_store.h — stored responses (`store: true`), in SQLite with WAL so readers never
// wait on the writer and a crash loses at most the last transaction.
//
// One row per response: the response object as JSON (what GET returns), its input items, and its token
// history (prompt + output, little-endian int32) so a `previous_response_id` from an earlier server run
// can continue — the KV is rebuilt by prefill then. One connection, serialised by a mutex: each call is a
// single short statement on an io thread.
#pragma once
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/conversation.h"

struct sqlite3;

namespace flint::server {

struct ResponseRecord;

struct StoredResponse {
    nlohmann::json response;
    nlohmann::json input_items;
    History history;
};

class ResponseStore {
public:
    // Opens (creating) the database; parent directories are created. Throws flint::Error.
    explicit ResponseStore(const std::string& path);
    ~ResponseStore();
    ResponseStore(const ResponseStore&) = delete;
    ResponseStore& operator=(const ResponseStore&) = delete;

    void put(const ResponseRecord& r);  // insert or replace
    std::optional<StoredResponse> get(const std::string& id);
    bool remove(const std::string& id);
    const std::string& path() const { return path_; }

private:
    void exec(const char* sql);
    std::mutex mu_;
    sqlite3* db_ = nullptr;
    std::string path_;
};

}  // namespace flint::server
