// flint/server/server.h — `flint serve`: the HTTP/SSE/WebSocket server in front of the engines.
//
//   listener (server.cpp) ─► http_session.cpp ─► router: JSON endpoints, SSE streams
//                                      └─ Upgrade on /v1/responses ─► websocket_session.cpp
// Sessions are C++20 coroutines; each I/O thread runs its own io_context and every connection lives on
// one of them (dealt round-robin), one writer per socket. Engine events arrive on the engine thread and
// are posted to the session's io_context (event_channel.h). Beast stays in the .cpp files: this header is all a frontend or a test needs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flint::server {

class ModelRegistry;

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;                       // 0: any free port (read it back with Server::port())
    int io_threads = 2;
    int64_t body_limit = 8 << 20;          // bytes; larger bodies get 413
    double idle_timeout_s = 120;           // keep-alive: waiting for the next request's headers
    double body_timeout_s = 60;            // receiving one request's body once its headers arrived
    double write_timeout_s = 60;           // one write to a client that stopped reading
    double ws_max_age_s = 3600;            // WebSocket connection age limit (PROTOCOL.md §3)
    bool websocket = true;                 // false: answer upgrades with 426 (clients fall back to SSE)
    bool ws_direct = true;                 // the engine thread may write a WebSocket's events (websocket_session.cpp)
    std::string store_path;                // SQLite file for store:true responses ("" → in memory only)
    std::vector<std::string> api_keys;     // Bearer keys with access to every model
    std::vector<std::string> admin_keys;   // keys that may also change rate limits
    std::string keys_file;                 // more keys (auth.h for the format)
    std::string limits_file;               // rate limits (rate_limit.h for the format); reloaded on SIGHUP
    std::string models_dir;                // POST /v1/models loads only files inside it ("" → any path)
    bool handle_signals = false;           // SIGINT/SIGTERM: graceful stop; SIGHUP: reload limits
    bool quiet = false;                    // no startup lines (tests)
    // FIM on /v1/completions: the band of lines before the cursor put after <fim_middle> when a request does
    // not say (its fim_band_lines; tokenizer/fim.h split_cursor_band). 0: plain PSM.
    int fim_band_lines = 8;
};

class Server {
public:
    // The registry must outlive the server. Throws flint::Error for bad keys/limits/store files.
    Server(ServerConfig cfg, ModelRegistry& models);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void start();      // binds and listens; throws flint::Error when the address is taken
    int port() const;  // the bound port (after start)
    void run();        // serves on io_threads threads until stop() (or a signal); returns when stopped
    // Graceful stop, from any thread: stops accepting, cancels in-flight generations so their streams
    // end with a terminal event, waits (bounded) for them to be written and stored, then stops the io threads.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace flint::server
