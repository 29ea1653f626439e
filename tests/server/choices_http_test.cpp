// `n` choices on Chat Completions and legacy Completions: choice i is what n = 1 with seed + i answers,
// streamed choices spell the same texts, usage counts the prompt once and every choice's tokens, the
// prompt is prefilled once for all choices, and a client that leaves cancels every choice.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "harness.h"

namespace flint::test {
namespace {

class Choices : public SharedServerSuite<Choices> {
public:
    static TestServer* make_server() { return new TestServer(); }

protected:
    json chat(int n, uint64_t seed, double temperature = 1.0) const {
        return {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"n", n},
                {"seed", seed}, {"temperature", temperature}, {"max_tokens", 16}};
    }
    double metric_now(const std::string& series) const { return metric(http(port(), "GET", "/metrics").body, series); }
};

TEST_F(Choices, ChoiceIIsWhatOneChoiceWithSeedPlusIAnswers) {
    HttpResult r = post_json(port(), "/v1/chat/completions", chat(3, 7));
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json_body();
    ASSERT_EQ(body["choices"].size(), 3u);
    int completion = 0;
    std::set<std::string> distinct;
    for (int i = 0; i < 3; ++i) {
        const json& c = body["choices"][i];
        EXPECT_EQ(c["index"], i);
        HttpResult one = post_json(port(), "/v1/chat/completions", chat(1, 7 + i));
        ASSERT_EQ(one.status, 200) << one.body;
        const json o = one.json_body();
        EXPECT_EQ(c["message"]["content"], o["choices"][0]["message"]["content"]) << "choice " << i;
        EXPECT_EQ(c["finish_reason"], o["choices"][0]["finish_reason"]);
        completion += o["usage"]["completion_tokens"].get<int>();
        EXPECT_EQ(body["usage"]["prompt_tokens"], o["usage"]["prompt_tokens"]) << "the prompt counts once";
        distinct.insert(c["message"]["content"].get<std::string>());
    }
    EXPECT_EQ(body["usage"]["completion_tokens"], completion);
    EXPECT_EQ(distinct.size(), 3u) << "sampled choices differ";

    // Greedy choices are all the same answer.
    const json greedy = post_json(port(), "/v1/chat/completions", chat(2, 1, 0.0)).json_body();
    EXPECT_EQ(greedy["choices"][0]["message"]["content"], greedy["choices"][1]["message"]["content"]);
}

TEST_F(Choices, StreamedChoicesSpellTheSameTextsEachWithItsFinish) {
    json req = chat(3, 11);
    const json whole = post_json(port(), "/v1/chat/completions", req).json_body();
    req["stream"] = true;
    req["stream_options"] = {{"include_usage", true}};
    SseResult s = sse(port(), "/v1/chat/completions", req);
    ASSERT_EQ(s.status, 200);
    std::map<int, std::string> text;
    std::map<int, int> roles, finishes;
    json usage;
    for (const SseEvent& e : s.events) {
        if (e.data == "[DONE]") continue;
        const json j = json::parse(e.data);
        if (j.contains("usage") && j["usage"].is_object()) usage = j["usage"];
        for (const json& c : j["choices"]) {
            const int i = c["index"];
            if (c["delta"].contains("role")) ++roles[i];
            if (c["delta"].contains("content")) text[i] += c["delta"]["content"].get<std::string>();
            if (!c["finish_reason"].is_null()) ++finishes[i];
        }
    }
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(text[i], whole["choices"][i]["message"]["content"]) << "choice " << i;
        EXPECT_EQ(roles[i], 1);
        EXPECT_EQ(finishes[i], 1);
    }
    EXPECT_EQ(usage["completion_tokens"], whole["usage"]["completion_tokens"]);
}

// The prompt is computed once, not once per choice: the engine's prefilled-token counter grows by the
// prompt plus one token a choice (each choice computes the prompt's last position itself).
TEST_F(Choices, ThePromptIsPrefilledOnceForAllChoices) {
    std::string story = "Nonce " + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ". ";
    for (int i = 0; i < 12; ++i) story += "The little dog ran to the park and played with a red ball all day. ";
    const double before = metric_now("flint_prefilled_tokens_total{model=\"stories\"}");
    json req = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", story}}}}, {"n", 4}, {"max_tokens", 4}};
    HttpResult r = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const int prompt = r.json_body()["usage"]["prompt_tokens"];
    ASSERT_GT(prompt, 150);
    const int cached = r.json_body()["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_LE(cached, 1) << "nothing of it was cached before (but the BOS every prompt starts with)";
    const double prefilled = metric_now("flint_prefilled_tokens_total{model=\"stories\"}") - before;
    EXPECT_GE(prefilled, prompt - cached);
    EXPECT_LE(prefilled, prompt + 4) << "4 choices of a " << prompt << "-token prompt";
    // Server-Timing tells the request's story: the shared prefill is part of its prefill and its ttft.
    const std::string timing = r.headers["server-timing"];
    auto dur = [&](const std::string& name) {
        const size_t at = timing.find(name + ";dur=");
        return at == std::string::npos ? -1.0 : std::stod(timing.substr(at + name.size() + 5));
    };
    EXPECT_GT(dur("prefill"), 0) << timing;
    EXPECT_GE(dur("ttft"), dur("prefill")) << timing;
    EXPECT_GE(dur("total"), dur("ttft")) << timing;
}

TEST_F(Choices, LegacyCompletionsGiveNChoicesWithEchoAndLogprobs) {
    json req = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"n", 2}, {"seed", 3}, {"max_tokens", 8},
                {"echo", true}, {"logprobs", 1}};
    HttpResult r = post_json(port(), "/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json_body();
    ASSERT_EQ(body["choices"].size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const json& c = body["choices"][i];
        EXPECT_EQ(c["index"], i);
        const std::string text = c["text"];
        ASSERT_TRUE(text.starts_with("Once upon a time")) << text;
        std::string spelled;
        for (const json& t : c["logprobs"]["tokens"]) spelled += t.get<std::string>();
        EXPECT_EQ("Once upon a time" + spelled, text);
    }
    req["stream"] = true;
    SseResult s = sse(port(), "/v1/completions", req);
    ASSERT_EQ(s.status, 200) << s.body;
    std::map<int, std::string> text;
    for (const SseEvent& e : s.events) {
        if (e.data == "[DONE]") continue;
        const json j = json::parse(e.data);
        for (const json& c : j["choices"]) text[c["index"].get<int>()] += c["text"].get<std::string>();
    }
    for (int i = 0; i < 2; ++i) EXPECT_EQ(text[i], body["choices"][i]["text"]) << "choice " << i;
}

TEST_F(Choices, BestOfIsRefusedNotIgnored) {
    json req = {{"model", "stories"}, {"prompt", "Once"}, {"max_tokens", 2}, {"best_of", 3}};
    HttpResult r = post_json(port(), "/v1/completions", req);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["param"], "best_of");
    req["best_of"] = 1;
    EXPECT_EQ(post_json(port(), "/v1/completions", req).status, 200);
}

TEST_F(Choices, NOutOfRangeIs400) {
    for (const json& n : {json(0), json(17), json("2"), json(1.5)}) {
        json req = chat(1, 1);
        req["n"] = n;
        HttpResult r = post_json(port(), "/v1/chat/completions", req);
        EXPECT_EQ(r.status, 400) << n.dump();
        EXPECT_EQ(json::parse(r.body)["error"]["param"], "n") << r.body;
    }
}

// A client that leaves mid-stream: every choice is cancelled, nothing keeps running.
TEST_F(Choices, AClientThatLeavesCancelsEveryChoice) {
    json req = chat(4, 5);
    req["max_tokens"] = 100000;
    req["stream"] = true;
    const double gone = metric_now("flint_client_disconnects_total");
    sse_and_disconnect(port(), "/v1/chat/completions", req, 2000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    double running = 1;
    while (std::chrono::steady_clock::now() < deadline) {
        running = metric_now("flint_running_sequences{model=\"stories\"}") + metric_now("flint_queue_depth{model=\"stories\"}");
        if (running == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(running, 0);
    EXPECT_EQ(metric_now("flint_client_disconnects_total"), gone + 1);
}

}  // namespace
}  // namespace flint::test

namespace flint::test {
namespace {

// Each engine step sleeps 40 ms here, so the shared prefill of a long prompt lasts several steps.
class SlowChoices : public SharedServerSuite<SlowChoices> {
public:
    static TestServer* make_server() {
        return new TestServer({}, false, [](const std::vector<uint64_t>&) { std::this_thread::sleep_for(std::chrono::milliseconds(40)); });
    }
};

// A client that gives up during the shared prefill: the prefill is cancelled and no choice ever starts.
TEST_F(SlowChoices, AClientThatLeavesDuringTheSharedPrefillStopsIt) {
    auto metric_now = [&](const std::string& series) { return metric(http(port(), "GET", "/metrics").body, series); };
    std::string story = "Nonce " + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ". ";
    for (int i = 0; i < 18; ++i) story += "The little dog ran to the park and played with a red ball all day. ";
    const double gone = metric_now("flint_client_disconnects_total");
    const double completion = metric_now("flint_completion_tokens_total");
    const double steps = metric_now("flint_engine_steps_total{model=\"stories\"}");
    post_and_vanish(port(), "/v1/chat/completions",
                    {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", story}}}}, {"n", 3}, {"max_tokens", 50}}, 60);
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         metric_now("flint_client_disconnects_total") == gone && std::chrono::steady_clock::now() < until;)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // (were a choice to start, it would show by now)
    EXPECT_EQ(metric_now("flint_client_disconnects_total"), gone + 1);
    EXPECT_EQ(metric_now("flint_running_sequences{model=\"stories\"}"), 0);
    EXPECT_EQ(metric_now("flint_completion_tokens_total"), completion) << "no choice generated anything";
    EXPECT_LT(metric_now("flint_engine_steps_total{model=\"stories\"}") - steps, 6) << "the prefill (7 chunks of 64) stopped early";
}

}  // namespace
}  // namespace flint::test
