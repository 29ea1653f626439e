#include "server/response_store.h"

#include <sqlite3.h>

#include <cstring>
#include <filesystem>

#include "server/responses_api.h"
#include "util/error.h"

namespace flint::server {
namespace {

struct Stmt {
    sqlite3_stmt* s = nullptr;
    Stmt(sqlite3* db, const char* sql) {
        if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) fail("response store: ", sqlite3_errmsg(db));
    }
    ~Stmt() { sqlite3_finalize(s); }
    void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
};

std::string column_text(sqlite3_stmt* s, int i) {
    const unsigned char* p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s, i)) : std::string();
}

}  // namespace

ResponseStore::ResponseStore(const std::string& path) : path_(path) {
    if (path != ":memory:") {
        std::filesystem::path parent = std::filesystem::path(path).parent_path();
        std::error_code ec;
        if (!parent.empty()) std::filesystem::create_directories(parent, ec);
        // SQLite alone would say only "unable to open database file".
        if (ec) fail("response store ", path, ": cannot create the directory ", parent.string(), ": ", ec.message());
        if (std::filesystem::is_directory(path, ec)) fail("response store ", path, ": is a directory, not a database file");
    }
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        fail("response store ", path, ": ", msg);
    }
    sqlite3_busy_timeout(db_, 2000);
    exec("PRAGMA journal_mode=WAL");
    // NORMAL in WAL mode: a power cut may lose the last commits but never corrupts the database.
    exec("PRAGMA synchronous=NORMAL");
    exec("CREATE TABLE IF NOT EXISTS responses (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, model TEXT NOT NULL, "
         "response TEXT NOT NULL, input_items TEXT NOT NULL, tokens BLOB, instructions TEXT)");
}

ResponseStore::~ResponseStore() {
    if (db_) sqlite3_close(db_);
}

void ResponseStore::exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "?";
        sqlite3_free(err);
        fail("response store ", path_, ": ", msg);
    }
}

void ResponseStore::put(const ResponseRecord& r) {
    std::lock_guard lock(mu_);
    Stmt st(db_, "INSERT OR REPLACE INTO responses (id, created_at, model, response, input_items, tokens, instructions) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?)");
    st.text(1, r.id);
    sqlite3_bind_int64(st.s, 2, r.created_at);
    st.text(3, r.model);
    st.text(4, response_object(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    st.text(5, r.req.input_json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    sqlite3_bind_blob(st.s, 6, r.history.data(), static_cast<int>(r.history.size() * sizeof(int32_t)), SQLITE_TRANSIENT);
    if (r.req.instructions) st.text(7, *r.req.instructions);
    else sqlite3_bind_null(st.s, 7);
    if (sqlite3_step(st.s) != SQLITE_DONE) fail("response store: ", sqlite3_errmsg(db_));
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
    std::lock_guard lock(mu_);
    Stmt st(db_, "SELECT model, response, input_items, tokens, instructions FROM responses WHERE id = ?");
    st.text(1, id);
    if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
    StoredResponse out;
    out.history.model = column_text(st.s, 0);
    out.response = nlohmann::json::parse(column_text(st.s, 1), nullptr, false);
    out.input_items = nlohmann::json::parse(column_text(st.s, 2), nullptr, false);
    const void* blob = sqlite3_column_blob(st.s, 3);
    int bytes = sqlite3_column_bytes(st.s, 3);
    out.history.tokens.resize(bytes / sizeof(int32_t));
    if (blob && bytes) std::memcpy(out.history.tokens.data(), blob, out.history.tokens.size() * sizeof(int32_t));
    if (sqlite3_column_type(st.s, 4) != SQLITE_NULL) out.history.instructions = column_text(st.s, 4);
    return out;
}

bool ResponseStore::remove(const std::string& id) {
    std::lock_guard lock(mu_);
    Stmt st(db_, "DELETE FROM responses WHERE id = ?");
    st.text(1, id);
    if (sqlite3_step(st.s) != SQLITE_DONE) fail("response store: ", sqlite3_errmsg(db_));
    return sqlite3_changes(db_) > 0;
}

}  // namespace flint::server
