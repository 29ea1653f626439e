// flint/server/ws_protocol.h — what a client's WebSocket text frame asks for (PROTOCOL.md §3), transport-free
// so the fuzzer can drive it: response.create (queued, in order), response.cancel (flint extension,
// handled at once), anything else ignored silently (e.g. response.processed).
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/errors.h"

namespace flint::server {

struct ClientFrame {
    enum class Kind { Create, Cancel, Ignore, Error };
    Kind kind = Kind::Ignore;
    nlohmann::json body;          // Create: the request (same fields as the POST body)
    std::string response_id;      // Cancel: which response ("" → the one in flight)
    std::optional<ApiError> error;
    std::chrono::steady_clock::time_point received{};  // when the frame was read (set by the session)
};

ClientFrame parse_client_frame(std::string_view text);

}  // namespace flint::server
