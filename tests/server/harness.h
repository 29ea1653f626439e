// Test harness for the server: an in-process `flint serve` on a free loopback port, and small blocking
// HTTP / SSE / WebSocket clients over real sockets (implemented with Beast in harness_test.cpp, so the
// other test files stay free of Beast's compile cost).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/model_registry.h"
#include "server/server.h"
#include "test_paths.h"

namespace flint::test {

using json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

// The models tests serve: stories260K as "stories" (and the FIM-capable code model as "code" when asked).
struct TestModels {
    explicit TestModels(bool with_code = false, std::function<void(const std::vector<uint64_t>&)> on_step = {});
    server::ModelRegistry registry;
};

// A response-store path in the temp directory, unique to this process. Declare it before the server that
// opens it: it is destroyed after the server has closed the database, and removes the file with SQLite's
// -wal and -shm companions (removing them while the database is open leaves them behind).
struct TempStore {
    explicit TempStore(const std::string& name);
    ~TempStore();
    TempStore(const TempStore&) = delete;
    TempStore& operator=(const TempStore&) = delete;
    std::string path;
};

class TestServer {
public:
    explicit TestServer(server::ServerConfig cfg = {}, bool with_code = false,
                        std::function<void(const std::vector<uint64_t>&)> on_step = {});
    TestServer(server::ServerConfig cfg, TestModels& shared);  // serve already loaded models
    ~TestServer();
    int port() const { return port_; }
    void stop();
    server::ModelRegistry& models() { return models_->registry; }

private:
    void start(server::ServerConfig cfg);
    std::unique_ptr<TestModels> own_;
    TestModels* models_ = nullptr;
    std::unique_ptr<server::Server> srv_;
    std::thread th_;
    int port_ = 0;
};

struct HttpResult {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
    json json_body() const { return json::parse(body); }
};
HttpResult http(int port, const std::string& method, const std::string& target, const std::string& body = "",
                const Headers& headers = {});
inline HttpResult post_json(int port, const std::string& target, const json& body, const Headers& headers = {}) {
    return http(port, "POST", target, body.dump(), headers);
}

struct SseEvent {
    std::string event;  // "" for data-only events (Chat Completions)
    std::string data;
};
struct SseResult {
    int status = 0;
    std::map<std::string, std::string> headers;
    std::vector<SseEvent> events;
    std::string body;  // for non-200 replies
};
// Throws std::runtime_error when the stream has not ended after timeout_s.
SseResult sse(int port, const std::string& target, const json& body, const Headers& headers = {}, double timeout_s = 120);

// Opens a connection, sends a streaming request, reads until `bytes` of the stream arrived, then drops
// the connection without reading more (a client that goes away mid-stream).
void sse_and_disconnect(int port, const std::string& target, const json& body, size_t bytes);
// Sends a request, waits `after_ms` without reading, then resets the connection (a client that gives up
// before any reply byte).
void post_and_vanish(int port, const std::string& target, const json& body, int after_ms);

// Raw bytes to the port; returns what came back until the server closed or `timeout_s` passed.
std::string raw(int port, const std::string& bytes, double timeout_s = 5);

// The events that end a response's stream (PROTOCOL.md §2): what recv_until() waits for after a response.create.
inline const std::vector<std::string> kTerminal = {"response.completed", "response.incomplete", "response.failed"};

class WsClient {
public:
    // Throws when the handshake fails; `status` then holds the HTTP status the server answered.
    explicit WsClient(int port, const Headers& headers = {}, const std::string& target = "/v1/responses");
    ~WsClient();
    void send(const json& j);
    void send_text(const std::string& s);
    // The next frame as JSON; throws std::runtime_error on close or after timeout_s.
    json recv(double timeout_s = 30);
    // Frames until (and including) the first whose type is in `types` (or an "error").
    std::vector<json> recv_until(const std::vector<std::string>& types, double timeout_s = 30);
    bool wait_closed(double timeout_s);
    void close();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A test suite sharing one TestServer (stories260K), started once for the suite: derive as
// `class S : public SharedServerSuite<S>` and give S a `static TestServer* make_server()`.
template <typename Suite>
class SharedServerSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (shared_exists("models/stories260K.gguf")) server_ = Suite::make_server();
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { FLINT_REQUIRE_SHARED("models/stories260K.gguf"); }
    int port() const { return server_->port(); }
    static inline TestServer* server_ = nullptr;
};

// The handshake status when the upgrade is refused (e.g. 401), or 101.
int ws_handshake_status(int port, const Headers& headers = {});

// A Prometheus metric's value from /metrics text (first series whose name+labels start with `series`).
double metric(const std::string& metrics_text, const std::string& series);

}  // namespace flint::test
