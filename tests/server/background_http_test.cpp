// Responses `background: true`: the reply comes at once (in progress), the generation goes on without the
// client and is stored when it ends; GET polls it, cancel stops it; streamed, a client that leaves does not
// cancel it. Needs `store`; not a WebSocket thing. (Each engine step here sleeps 2 ms, so a response of a
// few hundred tokens is still running when the test looks.)
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "client/http_client.h"
#include "client/sse.h"
#include "client/url.h"
#include "harness.h"

namespace flint::test {
namespace {

class Background : public SharedServerSuite<Background> {
public:
    static TestServer* make_server() {
        return new TestServer({}, false, [](const std::vector<uint64_t>&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    }

protected:
    // GET /v1/responses/{id} until its status is no longer in_progress (or 30 s).
    json poll(const std::string& id) const {
        json r;
        for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30); std::chrono::steady_clock::now() < until;) {
            r = http(port(), "GET", "/v1/responses/" + id).json_body();
            if (r["status"] != "in_progress") break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return r;
    }
    double metric_now(const std::string& series) const { return metric(http(port(), "GET", "/metrics").body, series); }
};

TEST_F(Background, TheReplyComesAtOnceAndThePollFindsTheAnswer) {
    json req = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 300}, {"temperature", 0}, {"background", true}};
    HttpResult r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const json first = r.json_body();
    // The reply says the response is still running and has no output yet: it came before the generation
    // (300 steps of at least 2 ms), not after; no clock needed, whatever the machine's load.
    EXPECT_EQ(first["status"], "in_progress");
    EXPECT_EQ(first["background"], true);
    EXPECT_TRUE(first["output"].empty());
    const std::string id = first["id"];
    // While it runs, GET shows the text so far (refreshed every 100 ms).
    json mid;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5); std::chrono::steady_clock::now() < until;) {
        mid = http(port(), "GET", "/v1/responses/" + id).json_body();
        if (mid["status"] != "in_progress" || !mid["output"].empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(mid["status"], "in_progress") << "still running";
    ASSERT_EQ(mid["output"].size(), 1u) << mid.dump();
    EXPECT_EQ(mid["output"][0]["status"], "in_progress");
    const std::string partial = mid["output"][0]["content"][0]["text"];
    EXPECT_FALSE(partial.empty());

    const json done = poll(id);
    EXPECT_TRUE(done["output"][0]["content"][0]["text"].get<std::string>().starts_with(partial)) << partial;
    EXPECT_EQ(done["status"], "incomplete");
    EXPECT_EQ(done["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(done["usage"]["output_tokens"], 300);
    // The same answer as the foreground request gives.
    req.erase("background");
    req["max_output_tokens"] = 20;
    const std::string fg = post_json(port(), "/v1/responses", req).json_body()["output"][0]["content"][0]["text"];
    const std::string bg = done["output"][0]["content"][0]["text"];
    EXPECT_TRUE(bg.starts_with(fg)) << bg << " / " << fg;
    // It chains like any stored response.
    HttpResult next = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "Then"}, {"previous_response_id", id}, {"max_output_tokens", 2}});
    EXPECT_EQ(next.status, 200) << next.body;
}

TEST_F(Background, CancelStopsItAndTheStoredResponseSaysCancelled) {
    HttpResult r = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 1500}, {"background", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string id = r.json_body()["id"];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    HttpResult c = http(port(), "POST", "/v1/responses/" + id + "/cancel");
    EXPECT_EQ(c.status, 200) << c.body;
    const json done = poll(id);
    EXPECT_EQ(done["status"], "cancelled");
    EXPECT_LT(done["usage"]["output_tokens"].get<int>(), 1500);
    EXPECT_EQ(metric_now("flint_responses_in_flight"), 0);
}

// Streamed: the client reads the first events and leaves; the response still runs to its 200 tokens (the
// completion-token counter, charged when a response ends, grows by all 200; a cancelled one would be far
// short), and no disconnect-cancel is counted.
TEST_F(Background, StreamedAClientThatLeavesDoesNotCancelIt) {
    const double gone = metric_now("flint_client_disconnects_total");
    const double tokens = metric_now("flint_completion_tokens_total");
    json req = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 200}, {"stream", true}, {"background", true}};
    sse_and_disconnect(port(), "/v1/responses", req, 400);
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         metric_now("flint_completion_tokens_total") == tokens && std::chrono::steady_clock::now() < until;)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(metric_now("flint_completion_tokens_total") - tokens, 200);
    EXPECT_EQ(metric_now("flint_client_disconnects_total"), gone) << "nothing was cancelled";
    EXPECT_EQ(metric_now("flint_responses_in_flight"), 0);
}

// Not only background ones: a response streaming over a WebSocket is visible to GET with its text so far.
TEST_F(Background, AResponseIsVisibleWithItsTextWhileItStreams) {
    WsClient ws(port());
    ws.send({{"type", "response.create"}, {"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 300}});
    const json created = ws.recv();
    ASSERT_EQ(created["type"], "response.created") << created.dump();
    const std::string id = created["response"]["id"];
    json mid;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5); std::chrono::steady_clock::now() < until;) {
        mid = http(port(), "GET", "/v1/responses/" + id).json_body();
        if (mid["status"] != "in_progress" || !mid["output"].empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(mid["status"], "in_progress");
    ASSERT_EQ(mid["output"].size(), 1u) << mid.dump();
    const std::string partial = mid["output"][0]["content"][0]["text"];
    EXPECT_FALSE(partial.empty());
    const std::vector<json> rest = ws.recv_until({"response.completed", "response.incomplete"});
    EXPECT_TRUE(rest.back()["response"]["output"][0]["content"][0]["text"].get<std::string>().starts_with(partial)) << partial;
}

// The same over HTTP: the snapshot is refreshed after each batch of deltas is written (never in between).
TEST_F(Background, AnSseResponseIsVisibleWithItsTextWhileItStreams) {
    client::HttpClient c(client::Url{"http", "127.0.0.1", std::to_string(port()), "/"}, true);
    client::SseParser parser;
    std::string id, partial, final_text;
    json mid;
    const json body = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 300}, {"stream", true}};
    const auto res = c.request("POST", "/v1/responses", body.dump(), {}, [&](std::string_view bytes) {
        parser.feed(bytes, [&](client::SseEvent&& e) {
            const json ev = json::parse(e.data);
            if (ev["type"] == "response.created") id = ev["response"]["id"];
            if (ev["type"] == "response.completed" || ev["type"] == "response.incomplete") final_text = ev["response"]["output"][0]["content"][0]["text"];
            if (ev["type"] != "response.output_text.delta" || !partial.empty() || id.empty()) return;
            for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5); std::chrono::steady_clock::now() < until;) {
                mid = http(port(), "GET", "/v1/responses/" + id).json_body();
                if (mid["status"] != "in_progress" || !mid["output"].empty()) break;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            if (mid["status"] == "in_progress" && mid["output"].size() == 1) partial = mid["output"][0]["content"][0]["text"];
        });
    });
    ASSERT_EQ(res.status, 200);
    ASSERT_EQ(mid["status"], "in_progress") << mid.dump();
    ASSERT_FALSE(partial.empty()) << mid.dump();
    EXPECT_TRUE(final_text.starts_with(partial)) << partial << " | " << final_text;
}

// A stream resume (GET …?stream=true&starting_after=N) is refused, not answered with JSON a client would
// try to read as a stream; other query parameters are ignored.
TEST_F(Background, AStreamResumeIsRefused) {
    HttpResult r = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 3}});
    const std::string id = r.json_body()["id"];
    for (const std::string q : {"?stream=true", "?starting_after=3&stream=true", "?stream=1"}) {
        HttpResult g = http(port(), "GET", "/v1/responses/" + id + q);
        EXPECT_EQ(g.status, 400) << q;
        EXPECT_EQ(json::parse(g.body)["error"]["param"], "stream") << q;
    }
    EXPECT_EQ(http(port(), "GET", "/v1/responses/" + id + "?stream=false").status, 200);
    EXPECT_EQ(http(port(), "GET", "/v1/responses/" + id + "?include=x").status, 200);
}

TEST_F(Background, NeedsStoreAndIsNotForWebSockets) {
    HttpResult r = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "x"}, {"background", true}, {"store", false}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json_body()["error"]["param"], "background");
    WsClient ws(port());
    ws.send({{"type", "response.create"}, {"model", "stories"}, {"input", "x"}, {"background", true}});
    const json e = ws.recv();
    EXPECT_EQ(e["type"], "error") << e.dump();
    EXPECT_EQ(e["error"]["param"], "background");
}

}  // namespace
}  // namespace flint::test
