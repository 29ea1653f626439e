// flint/client/ws_client.h — one WebSocket connection driven from a single thread: a send is written at
// once, frames are read while the caller waits for them with a timeout, so a caller can watch the keyboard
// between frames and send response.cancel mid-stream. RFC 6455 framing of its own over a blocking socket
// (Beast does the upgrade's HTTP): every frame is stamped when the read that brought it returned.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "client/http_client.h"
#include "client/url.h"

namespace flint::client {

using Clock = std::chrono::steady_clock;

struct WsFrame {
    std::string text;
    Clock::time_point at;  // when the read completed
};

class WsClient {
public:
    WsClient();
    ~WsClient();
    WsClient(const WsClient&) = delete;
    WsClient& operator=(const WsClient&) = delete;

    // Connects and upgrades. Throws flint::Error with the reason: connection refused, or the HTTP status
    // and error message the server answered the upgrade with (401 for a wrong key, 426 when disabled).
    void connect(const Url& url, const Headers& headers, double timeout_s = 10);
    bool is_open() const;
    // Why the connection ended (empty while open).
    const std::string& close_reason() const;

    void send(const std::string& text);  // one masked text frame, written before it returns
    // The next frame, or nullopt when none arrived within timeout_ms or the connection is closed.
    std::optional<WsFrame> next(int timeout_ms);
    // Frames already received, without waiting.
    bool has_frame() const;
    // Reads what has arrived, without waiting: answers the server's pings and notes a close; messages stay
    // queued for next(). For a caller idle between turns (chat at its prompt) that watches native_handle().
    void service();
    int native_handle() const;  // the socket while open, else -1
    void close();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace flint::client
