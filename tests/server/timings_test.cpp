// The flint extension for measuring latency from the client: `timings` on the finished response object
// (HTTP JSON, SSE terminal event, WebSocket terminal frame, stored response), `stream_timestamps` (engine
// emission times on the text deltas, on the server's monotonic clock) and the SSE Server-Timing trailer.
#include <gtest/gtest.h>

#include <chrono>

#include "harness.h"

namespace flint::test {
namespace {

class Timings : public SharedServerSuite<Timings> {
public:
    static TestServer* make_server() { return new TestServer(); }
};

json story(int max_tokens) {
    return {{"model", "stories"}, {"input", "Once upon a time"}, {"temperature", 0}, {"max_output_tokens", max_tokens}};
}

int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The engine's times are consistent with each other and with the work done.
void expect_consistent(const json& t, int output_tokens) {
    for (const char* k : {"queued_ms", "prefill_ms", "first_token_ms", "decode_ms", "total_ms", "compute_ms", "prepare_ms"}) {
        ASSERT_TRUE(t.contains(k) && t[k].is_number()) << k << " in " << t.dump();
        EXPECT_GE(t[k].get<double>(), 0) << k;
    }
    const double total = t["total_ms"], first = t["first_token_ms"];
    EXPECT_GT(total, 0);
    EXPECT_GE(first, t["queued_ms"].get<double>() + t["prefill_ms"].get<double>() - 0.002);
    EXPECT_LE(first, total + 0.002);
    EXPECT_LE(t["decode_ms"].get<double>(), total - first + 0.002);
    EXPECT_LE(t["compute_ms"].get<double>(), total + 0.002);
    EXPECT_GE(t["steps"].get<int>(), output_tokens);  // one step per token at least (no drafts here)
}

const json& terminal(const std::vector<SseEvent>& events, json& holder) {
    holder = json::parse(events.back().data);
    return holder;
}

TEST_F(Timings, JsonResponseAndStoredResponseCarryTheEngineTimings) {
    HttpResult r = post_json(port(), "/v1/responses", story(6));
    ASSERT_EQ(r.status, 200) << r.body;
    json j = r.json_body();
    ASSERT_TRUE(j.contains("timings")) << j.dump();
    expect_consistent(j["timings"], j["usage"]["output_tokens"]);
    EXPECT_FALSE(j["timings"].contains("received_us"));  // only with stream_timestamps
    HttpResult got = http(port(), "GET", "/v1/responses/" + j["id"].get<std::string>());
    ASSERT_EQ(got.status, 200);
    EXPECT_EQ(got.json_body()["timings"], j["timings"]);
}

TEST_F(Timings, SseTerminalEventHasTimingsOnlyOnceFinishedAndAServerTimingTrailer) {
    json req = story(5);
    req["stream"] = true;
    SseResult r = sse(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_GE(r.events.size(), 3u);
    EXPECT_FALSE(json::parse(r.events[0].data)["response"].contains("timings")) << "response.created is not finished";
    json holder;
    const json& t = terminal(r.events, holder);
    ASSERT_TRUE(t["response"].contains("timings")) << t.dump();
    expect_consistent(t["response"]["timings"], t["response"]["usage"]["output_tokens"]);
    // The header only knows the parse time; the trailer (which Beast's parser merges into the fields,
    // after the header's value) has the whole breakdown.
    const std::string& st = r.headers["server-timing"];
    EXPECT_NE(st.find("ttft;dur="), std::string::npos) << st;
    EXPECT_NE(st.find("total;dur="), std::string::npos) << st;
}

TEST_F(Timings, StreamTimestampsStampEveryDeltaWithTheEngineTimeOnTheSameClock) {
    const int64_t before = now_us();
    json req = story(12);
    req["stream"] = true;
    req["stream_timestamps"] = true;
    SseResult r = sse(port(), "/v1/responses", req);
    const int64_t after = now_us();
    ASSERT_EQ(r.status, 200) << r.body;
    json holder;
    const json& t = terminal(r.events, holder)["response"]["timings"];
    const int64_t received = t["received_us"], finished = t["finished_us"];
    EXPECT_LE(before, received);
    EXPECT_LT(received, finished);
    EXPECT_LE(finished, after);
    int64_t last = received;
    int deltas = 0;
    for (const SseEvent& e : r.events) {
        if (e.event != "response.output_text.delta") continue;
        json d = json::parse(e.data);
        ASSERT_TRUE(d.contains("t_us")) << e.data;
        const int64_t at = d["t_us"];
        EXPECT_GE(at, last);
        EXPECT_LE(at, finished);
        last = at;
        ++deltas;
    }
    EXPECT_GT(deltas, 0);
    // Received → finished spans the engine's own total plus the preparation before it.
    EXPECT_GE(static_cast<double>(finished - received) / 1000 + 0.01, t["total_ms"].get<double>());
}

TEST_F(Timings, DeltasCarryNoTimestampUnlessAsked) {
    json req = story(4);
    req["stream"] = true;
    SseResult r = sse(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200);
    for (const SseEvent& e : r.events) EXPECT_EQ(e.data.find("\"t_us\""), std::string::npos) << e.data;
}

TEST_F(Timings, StreamTimestampsMustBeABoolean) {
    json req = story(4);
    req["stream_timestamps"] = "yes";
    HttpResult r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json_body()["error"]["param"], "stream_timestamps");
}

TEST_F(Timings, WebSocketTerminalFrameHasTimingsAndTimestamps) {
    WsClient ws(port());
    json create = story(6);
    create["type"] = "response.create";
    create["store"] = false;
    create["stream_timestamps"] = true;
    ws.send(create);
    auto frames = ws.recv_until(kTerminal);
    const json& t = frames.back()["response"]["timings"];
    expect_consistent(t, frames.back()["response"]["usage"]["output_tokens"]);
    EXPECT_LE(t["received_us"].get<int64_t>(), t["finished_us"].get<int64_t>());
    int stamped = 0;
    for (const json& f : frames)
        if (f["type"] == "response.output_text.delta") stamped += f.contains("t_us");
    EXPECT_GT(stamped, 0);
}

}  // namespace
}  // namespace flint::test
