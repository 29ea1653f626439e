#include "client/responses_http.h"

#include "client/sse.h"

namespace flint::client {

SseTurn post_response_stream(HttpClient& http, const std::string& target, json body, const Headers& headers,
                             const std::function<void(std::string_view)>& on_delta) {
    body["stream"] = true;
    SseTurn r;
    SseParser parser;
    std::string raw;  // kept only for an error reply
    const std::string payload = body.dump();
    r.turn.sent = Clock::now();
    HttpResponse res = http.request("POST", target, payload, headers, [&](std::string_view bytes) {
        const auto at = Clock::now();
        if (raw.size() < 65536) raw.append(bytes);
        parser.feed(bytes, [&](SseEvent&& e) {
            json j = json::parse(e.data, nullptr, false);
            if (j.is_discarded()) return;
            std::string_view d = r.turn.apply(j, at);
            if (!d.empty() && on_delta) on_delta(d);
        });
    });
    r.status = res.status;
    r.headers = std::move(res.headers);
    if (r.status != 200) r.error = error_message(raw);
    return r;
}

std::string describe_failure(int status, const std::string& message) {
    std::string hint;
    if (status == 401) hint = " (check --api-key or $FLINT_API_KEY)";
    return "the server answered " + std::to_string(status) + ": " + message + hint;
}

}  // namespace flint::client
