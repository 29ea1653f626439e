// Responses over WebSocket: multi-turn on the cached KV, generate:false warm-up, cancel and redirect,
// errors as frames, the connection age limit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "harness.h"

namespace flint::test {
namespace {

json create(const json& fields) {
    json j = fields;
    j["type"] = "response.create";
    if (!j.contains("model")) j["model"] = "stories";
    if (!j.contains("temperature")) j["temperature"] = 0;
    return j;
}

json terminal_of(const std::vector<json>& frames) { return frames.back(); }

class WebSocket : public SharedServerSuite<WebSocket> {
public:
    static TestServer* make_server() {
        // Each engine step sleeps a little so a cancel can land mid-generation on this tiny model.
        return new TestServer({}, false, [](const std::vector<uint64_t>&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    }
};

TEST_F(WebSocket, SecondTurnContinuesOnTheCachedKvAndPrefillsOnlyTheDelta) {
    WsClient ws(port(), {{"OpenAI-Beta", "responses_websockets=2026-02-06"}});
    ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 16}, {"store", false}}));
    auto t1 = ws.recv_until(kTerminal);
    json r1 = terminal_of(t1)["response"];
    ASSERT_TRUE(r1["status"] == "completed" || r1["status"] == "incomplete") << r1.dump();
    EXPECT_EQ(t1[0]["type"], "response.created");

    ws.send(create({{"input", "Then the sun came out."}, {"previous_response_id", r1["id"]}, {"max_output_tokens", 8}, {"store", false}}));
    auto t2 = ws.recv_until(kTerminal);
    json r2 = terminal_of(t2)["response"];
    ASSERT_NE(r2["status"], "failed") << r2.dump();
    const int history = r1["usage"]["total_tokens"];
    const int input2 = r2["usage"]["input_tokens"];
    const int cached2 = r2["usage"]["input_tokens_details"]["cached_tokens"];
    const int delta = input2 - history;  // tokens of the new turn only
    EXPECT_GT(delta, 0);
    // Everything the engine computed in turn 1 is reused: the whole history except its last sampled
    // token, whose KV was never computed.
    EXPECT_EQ(cached2, history - 1);
    EXPECT_EQ(input2 - cached2, delta + 1) << "turn 2 prefilled more than the delta";
    EXPECT_EQ(r2["previous_response_id"], r1["id"]);
}

// /metrics counts connections and WebSocket sessions as they open, so an operator (and the Agents SDK test)
// can tell one persistent socket carrying every turn from a client that reconnects each time.
TEST_F(WebSocket, MetricsCountTheSessionsAndConnectionsOpened) {
    const std::string before = http(port(), "GET", "/metrics").body;  // its own connection counted already
    {
        WsClient ws(port());
        ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 4}, {"store", false}}));
        json r1 = terminal_of(ws.recv_until(kTerminal))["response"];
        ws.send(create({{"input", "Then"}, {"previous_response_id", r1["id"]}, {"max_output_tokens", 4}, {"store", false}}));
        ws.recv_until(kTerminal);
        const std::string during = http(port(), "GET", "/metrics").body;
        EXPECT_EQ(metric(during, "flint_websocket_sessions_total"), metric(before, "flint_websocket_sessions_total") + 1);
        EXPECT_EQ(metric(during, "flint_connections_total"), metric(before, "flint_connections_total") + 2);
        EXPECT_GE(metric(during, "flint_websocket_sessions"), 1);
    }
    WsClient again(port());
    again.send(create({{"input", "Once"}, {"max_output_tokens", 2}, {"store", false}}));
    again.recv_until(kTerminal);
    const std::string after = http(port(), "GET", "/metrics").body;
    EXPECT_EQ(metric(after, "flint_websocket_sessions_total"), metric(before, "flint_websocket_sessions_total") + 2);
    EXPECT_EQ(metric(after, "flint_connections_total"), metric(before, "flint_connections_total") + 4);
}

// store:false, so each continuation's history comes from the connection's own cache: truncation "auto" drops
// the oldest turns of a copy, and the cached history it started from stays whole (continuing from it again
// without truncation is still refused).
TEST_F(WebSocket, TruncationAutoLeavesTheConnectionsCachedHistoryWhole) {
    WsClient ws(port());
    std::string text;
    while (text.size() < 400) text += "The little dog ran to the park. ";  // ctx is 512: a few turns fill it
    std::string id;
    json refused;
    for (int turn = 0; turn < 8 && refused.is_null(); ++turn) {
        json req = create({{"input", text}, {"max_output_tokens", 4}, {"store", false}});
        if (!id.empty()) req["previous_response_id"] = id;
        ws.send(req);
        json t = terminal_of(ws.recv_until(kTerminal));
        if (t["type"] == "error") refused = t;
        else id = t["response"]["id"];
    }
    ASSERT_FALSE(id.empty());
    ASSERT_FALSE(refused.is_null()) << "the conversation never outgrew the context";
    EXPECT_EQ(refused["error"]["code"], "context_length_exceeded");
    json next = create({{"input", text}, {"max_output_tokens", 4}, {"store", false}, {"previous_response_id", id}, {"truncation", "auto"}});
    ws.send(next);
    json ok = terminal_of(ws.recv_until(kTerminal));
    ASSERT_NE(ok["type"], "error") << ok.dump();  // completed, or incomplete at max_output_tokens
    EXPECT_LT(ok["response"]["usage"]["input_tokens"].get<int>(), 512);
    EXPECT_GT(ok["response"]["usage"]["input_tokens"].get<int>(), 100);
    next.erase("truncation");
    ws.send(next);
    json again = terminal_of(ws.recv_until(kTerminal));
    EXPECT_EQ(again["type"], "error") << "the cached history was truncated in place";
    EXPECT_EQ(again["error"]["code"], "context_length_exceeded");
    // The truncated conversation goes on.
    ws.send(create({{"input", "And then?"}, {"max_output_tokens", 4}, {"store", false}, {"previous_response_id", ok["response"]["id"]},
                    {"truncation", "auto"}}));
    json after = terminal_of(ws.recv_until(kTerminal));
    EXPECT_NE(after["type"], "error") << after.dump();
}

TEST_F(WebSocket, WarmUpWithGenerateFalseThenAChainedTurn) {
    WsClient ws(port());
    ws.send(create({{"instructions", "A story."}, {"input", "Once upon a time there was a dog"}, {"generate", false}}));
    auto w = ws.recv_until(kTerminal);
    json warm = terminal_of(w)["response"];
    ASSERT_EQ(terminal_of(w)["type"], "response.completed") << warm.dump();
    EXPECT_TRUE(warm["output"].empty());
    EXPECT_EQ(warm["usage"]["output_tokens"], 0);
    const int warm_input = warm["usage"]["input_tokens"];

    ws.send(create({{"input", "He ran."}, {"previous_response_id", warm["id"]}, {"max_output_tokens", 8}}));
    json r = terminal_of(ws.recv_until(kTerminal))["response"];
    ASSERT_NE(r["status"], "failed") << r.dump();
    EXPECT_GE(r["usage"]["input_tokens_details"]["cached_tokens"].get<int>(), warm_input - 1);
    EXPECT_FALSE(r["output"].empty());
}

TEST_F(WebSocket, ReSentInstructionsAreNotInsertedAgainButNewOnesAre) {
    WsClient ws(port());
    ws.send(create({{"instructions", "A story."}, {"input", "Once upon a time"}, {"max_output_tokens", 4}, {"store", false}}));
    json r1 = terminal_of(ws.recv_until(kTerminal))["response"];
    ASSERT_NE(r1["status"], "failed") << r1.dump();
    auto input_tokens = [&](const json& extra) {
        json c = create({{"input", "Then it rained."}, {"previous_response_id", r1["id"]}, {"max_output_tokens", 1}, {"store", false}});
        c.update(extra);
        ws.send(c);
        json r = terminal_of(ws.recv_until(kTerminal))["response"];
        EXPECT_NE(r["status"], "failed") << r.dump();
        return r["usage"]["input_tokens"].get<int>();
    };
    const int without = input_tokens(json::object());
    EXPECT_EQ(input_tokens({{"instructions", "A story."}}), without);       // the history starts with them
    EXPECT_GT(input_tokens({{"instructions", "A long poem."}}), without);   // new instructions: in the prompt
}

TEST_F(WebSocket, CancelMidStreamThenRedirectFromThePartialOutput) {
    WsClient ws(port());
    ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 400}}));
    std::string id;
    for (;;) {
        json f = ws.recv();
        if (f["type"] == "response.created") id = f["response"]["id"];
        if (f["type"] == "response.output_text.delta") break;
    }
    ws.send({{"type", "response.cancel"}, {"response_id", id}});
    auto rest = ws.recv_until(kTerminal);
    json term = terminal_of(rest);
    EXPECT_EQ(term["type"], "response.incomplete");
    EXPECT_EQ(term["response"]["status"], "cancelled");
    bool saw_item_done = false;
    for (auto& f : rest)
        if (f["type"] == "response.output_item.done") {
            saw_item_done = true;
            EXPECT_EQ(f["item"]["status"], "incomplete");
        }
    EXPECT_TRUE(saw_item_done);
    const int partial_total = term["response"]["usage"]["total_tokens"];
    EXPECT_LT(term["response"]["usage"]["output_tokens"].get<int>(), 400);

    ws.send(create({{"input", "Tell me about a cat instead."}, {"previous_response_id", id}, {"max_output_tokens", 8}}));
    json r = terminal_of(ws.recv_until(kTerminal))["response"];
    ASSERT_NE(r["status"], "failed") << r.dump();
    // The partial output is reused: at most its last token (whose KV may not exist yet) is prefilled again.
    const int cached = r["usage"]["input_tokens_details"]["cached_tokens"];
    EXPECT_GE(cached, partial_total - 1);
    EXPECT_LE(cached, partial_total);
}

TEST_F(WebSocket, HttpCancelEndpointStopsAWebSocketResponse) {
    WsClient ws(port());
    ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 400}}));
    std::string id;
    for (;;) {
        json f = ws.recv();
        if (f["type"] == "response.created") id = f["response"]["id"];
        if (f["type"] == "response.output_text.delta") break;
    }
    HttpResult c = http(port(), "POST", "/v1/responses/" + id + "/cancel");
    EXPECT_EQ(c.status, 200) << c.body;
    json term = terminal_of(ws.recv_until(kTerminal));
    EXPECT_EQ(term["response"]["status"], "cancelled");
}

TEST_F(WebSocket, UnknownPreviousResponseIsAnErrorFrameWithStatus) {
    WsClient ws(port());
    ws.send(create({{"input", "hi"}, {"previous_response_id", "resp_unknown"}}));
    json e = ws.recv();
    EXPECT_EQ(e["type"], "error");
    EXPECT_EQ(e["status"], 400);
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_EQ(e["error"]["code"], "previous_response_not_found");
    EXPECT_EQ(e["error"]["param"], "previous_response_id");
    // The connection stays usable.
    ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 4}}));
    EXPECT_NE(terminal_of(ws.recv_until(kTerminal))["type"], "error");
}

TEST_F(WebSocket, BadFramesAreErrorsUnknownTypesAreIgnoredAndRequestsQueueInOrder) {
    WsClient ws(port());
    ws.send_text("{not json");
    json e = ws.recv();
    EXPECT_EQ(e["type"], "error");
    EXPECT_EQ(e["status"], 400);
    ws.send({{"type", "response.processed"}, {"response_id", "x"}});  // ignored silently
    ws.send(create({{"input", 42}}));                                 // wrong type
    json e2 = ws.recv();
    EXPECT_EQ(e2["type"], "error");
    EXPECT_EQ(e2["error"]["param"], "input");
    ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 4}, {"metadata", {{"n", "1"}}}}));
    ws.send(create({{"input", "The dog"}, {"max_output_tokens", 4}, {"metadata", {{"n", "2"}}}}));
    json a = terminal_of(ws.recv_until(kTerminal));
    json b = terminal_of(ws.recv_until(kTerminal));
    EXPECT_EQ(a["response"]["metadata"]["n"], "1");
    EXPECT_EQ(b["response"]["metadata"]["n"], "2");
}

// Closing the socket mid-stream cancels the response and counts as a client gone away, once, as over HTTP.
TEST_F(WebSocket, ClosingTheSocketCancelsTheResponse) {
    const double gone_before = metric(http(port(), "GET", "/metrics").body, "flint_client_disconnects_total");
    {
        WsClient ws(port());
        ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 400}}));
        for (;;)
            if (ws.recv()["type"] == "response.output_text.delta") break;
    }  // dropped mid-stream
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    double running = -1;
    while (std::chrono::steady_clock::now() < until) {
        running = metric(http(port(), "GET", "/metrics").body, "flint_running_sequences{model=\"stories\"}");
        if (running == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(running, 0);
    EXPECT_EQ(metric(http(port(), "GET", "/metrics").body, "flint_client_disconnects_total"), gone_before + 1);
}

// The engine thread writes a lone response's events itself (websocket_session.cpp, deliver()); with
// --no-ws-direct the socket's thread writes them. Both must put the same events on the wire, and a GET
// while the response streams must see its text so far either way (the live snapshot is refreshed by
// whichever thread handles the events).
std::vector<std::string> wire_events(int port, const json& request, json* terminal) {
    WsClient ws(port);
    ws.send(request);
    std::vector<std::string> seen;
    for (const json& f : ws.recv_until(kTerminal)) {
        std::string line = f["type"].get<std::string>() + " " + std::to_string(f["sequence_number"].get<int>());
        // (append, not `" " + …`: GCC 12's -Wrestrict misreads the temporary's memcpy)
        if (f.contains("delta")) line.append(" ").append(f["delta"].dump());
        if (f.contains("text")) line.append(" ").append(f["text"].dump());
        seen.push_back(line);
        *terminal = f;
    }
    return seen;
}

TEST_F(WebSocket, EngineThreadDeliveryWritesTheSameEventsAsTheSocketThread) {
    server::ServerConfig cfg;
    cfg.ws_direct = false;
    TestServer queued(cfg);
    const double direct_before = metric(http(port(), "GET", "/metrics").body, "flint_websocket_direct_writes_total");
    for (int tokens : {1, 24}) {
        const json req = create({{"input", "Once upon a time"}, {"max_output_tokens", tokens}, {"store", false}});
        json t_direct, t_queued;
        const auto direct_events = wire_events(port(), req, &t_direct);
        const auto queued_events = wire_events(queued.port(), req, &t_queued);
        EXPECT_EQ(direct_events, queued_events) << tokens << " tokens";
        // Ids differ, and so may cached_tokens (the shared server's prefix cache is warm).
        EXPECT_EQ(t_direct["response"]["output"][0]["content"], t_queued["response"]["output"][0]["content"]);
        EXPECT_EQ(t_direct["response"]["status"], t_queued["response"]["status"]);
        EXPECT_EQ(t_direct["response"]["usage"]["output_tokens"], tokens);
        EXPECT_EQ(t_queued["response"]["usage"]["output_tokens"], tokens);
    }
    EXPECT_GT(metric(http(port(), "GET", "/metrics").body, "flint_websocket_direct_writes_total"), direct_before);
    EXPECT_EQ(metric(http(queued.port(), "GET", "/metrics").body, "flint_websocket_direct_writes_total"), 0);
}

TEST_F(WebSocket, GetWhileStreamingShowsTheTextSoFar) {
    WsClient ws(port());
    ws.send(create({{"input", "Once upon a time"}, {"max_output_tokens", 400}, {"store", false}}));
    std::string id, streamed;
    for (int deltas = 0; deltas < 5;) {
        json f = ws.recv();
        if (f["type"] == "response.created") id = f["response"]["id"];
        if (f["type"] == "response.output_text.delta") {
            streamed += f["delta"].get<std::string>();
            ++deltas;
        }
    }
    // The snapshot is refreshed at most every 100 ms: poll until it holds text.
    json mid;
    for (int i = 0; i < 100; ++i) {
        mid = json::parse(http(port(), "GET", "/v1/responses/" + id).body);
        if (mid["status"] != "in_progress" || !mid["output"].empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(mid["status"], "in_progress") << mid.dump();
    ASSERT_EQ(mid["output"].size(), 1u) << mid.dump();
    const std::string partial = mid["output"][0]["content"][0]["text"];
    EXPECT_FALSE(partial.empty());
    ws.send({{"type", "response.cancel"}, {"response_id", id}});
    json term = terminal_of(ws.recv_until(kTerminal));
    const std::string final_text = term["response"]["output"][0]["content"][0]["text"];
    EXPECT_EQ(final_text.substr(0, partial.size()), partial) << "the snapshot is a prefix of the answer";
}

// Several WebSocket clients at once, so the engine serves one sequence at times and several at others:
// each event goes directly or through the queue, switching mid-response. Responses alternate between
// store:true on a SQLite store (the final event always queued) and store:false. Every turn's frames must
// be whole, numbered 0, 1, 2, … without a gap, start with response.created, end with one terminal
// event, and their deltas must add up to the terminal response's text; a stored response must be
// readable the moment its terminal event arrived; and the direct path must have been taken.
TEST(WebSocketDelivery, ConcurrentClientsSwitchingBetweenDirectAndQueuedDeliveryGetWholeOrderedStreams) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempStore db("flint-ws-store");
    server::ServerConfig cfg;
    cfg.io_threads = 4;
    cfg.store_path = db.path;
    // Each step sleeps a little, so the clients' responses overlap in the engine.
    TestServer s(cfg, false, [](const std::vector<uint64_t>&) { std::this_thread::sleep_for(std::chrono::microseconds(500)); });
    constexpr int kClients = 3, kTurns = 12;
    std::atomic<int> turns_ok{0};
    std::mutex mu;
    std::string failures;
    auto fail = [&](const std::string& why) {
        std::lock_guard lock(mu);
        if (failures.size() < 2000) failures += why + "\n";
    };
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
        clients.emplace_back([&, c] {
            try {
                WsClient ws(s.port());
                std::string previous;
                for (int t = 0; t < kTurns; ++t) {
                    const bool store = (c + t) % 2 == 0;
                    json req = create({{"input", t == 0 ? "Once upon a time" : "And then"}, {"max_output_tokens", 1 + (c * 7 + t * 5) % 24},
                                       {"store", store}});
                    if (!previous.empty()) req["previous_response_id"] = previous;
                    // Pauses between turns, so the engine serves one sequence at times and more at others.
                    std::this_thread::sleep_for(std::chrono::milliseconds((c * 3 + t) % 4 * 4));
                    ws.send(req);
                    const auto frames = ws.recv_until(kTerminal);
                    const std::string where = "client " + std::to_string(c) + " turn " + std::to_string(t) + ": ";
                    std::string text;
                    bool ok = frames.front()["type"] == "response.created";
                    for (size_t i = 0; i < frames.size(); ++i) {
                        if (frames[i]["sequence_number"] != static_cast<int>(i)) {
                            fail(where + "frame " + std::to_string(i) + " numbered " + frames[i]["sequence_number"].dump());
                            ok = false;
                        }
                        if (frames[i]["type"] == "response.output_text.delta") text += frames[i]["delta"].get<std::string>();
                    }
                    const json& r = frames.back()["response"];
                    if (r["status"] == "failed" || r["output"].empty()) {
                        fail(where + "terminal " + frames.back().dump().substr(0, 300));
                        continue;
                    }
                    if (r["output"][0]["content"][0]["text"] != text) {
                        fail(where + "deltas '" + text + "' vs text " + r["output"][0]["content"][0]["text"].dump());
                        ok = false;
                    }
                    previous = r["id"];
                    if (store && http(s.port(), "GET", "/v1/responses/" + previous).status != 200) {
                        fail(where + "stored response not readable after its terminal event");
                        ok = false;
                    }
                    if (ok) ++turns_ok;
                }
            } catch (const std::exception& e) {
                fail("client " + std::to_string(c) + ": " + e.what());
            }
        });
    for (auto& t : clients) t.join();
    EXPECT_EQ(turns_ok, kClients * kTurns) << failures;
    // (Some 30-45% of the events went directly in trial runs here; the rest were queued.)
    EXPECT_GT(metric(http(s.port(), "GET", "/metrics").body, "flint_websocket_direct_writes_total"), 0);
}

TEST(WebSocketLimits, ConnectionAgeLimitSendsTheErrorThenCloses) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    server::ServerConfig cfg;
    cfg.ws_max_age_s = 0.5;
    TestServer s(cfg);
    WsClient ws(s.port());
    json e = ws.recv(10);
    EXPECT_EQ(e["type"], "error");
    EXPECT_EQ(e["error"]["code"], "websocket_connection_limit_reached");
    EXPECT_TRUE(e.contains("status"));
    EXPECT_TRUE(ws.wait_closed(5));
}

TEST(WebSocketLimits, UpgradeNeedsTheKeyAndDisabledWebSocketAnswers426) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    server::ServerConfig cfg;
    cfg.api_keys = {"sk-test"};
    TestServer s(cfg);
    EXPECT_EQ(ws_handshake_status(s.port()), 401);
    EXPECT_EQ(ws_handshake_status(s.port(), {{"Authorization", "Bearer sk-test"}}), 101);
    server::ServerConfig off;
    off.websocket = false;
    TestServer s2(off);
    EXPECT_EQ(ws_handshake_status(s2.port()), 426);
}

}  // namespace
}  // namespace flint::test
