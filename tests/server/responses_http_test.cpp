// POST /v1/responses over HTTP (JSON and SSE), the stored-response endpoints, Chat Completions and
// Completions — against the real engine and stories260K, over real sockets.
#include <gtest/gtest.h>

#include <set>

#include "gguf/gguf.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

namespace flint::test {
namespace {

class ResponsesHttp : public SharedServerSuite<ResponsesHttp> {
public:
    static TestServer* make_server() {
        return new TestServer({}, /*with_code=*/shared_exists("models/flint-tiny-code.gguf"));
    }
};

json story(int max_tokens = 24) {
    return {{"model", "stories"}, {"input", "Once upon a time"}, {"temperature", 0}, {"max_output_tokens", max_tokens}};
}

TEST_F(ResponsesHttp, JsonResponseHasTheFullObjectUsageAndHeaders) {
    HttpResult r = post_json(port(), "/v1/responses", story());
    ASSERT_EQ(r.status, 200) << r.body;
    json j = r.json_body();
    EXPECT_EQ(j["object"], "response");
    EXPECT_EQ(j["id"].get<std::string>().rfind("resp_", 0), 0u);
    EXPECT_TRUE(j["status"] == "completed" || j["status"] == "incomplete") << j["status"];
    EXPECT_EQ(j["model"], "stories");
    ASSERT_EQ(j["output"].size(), 1u);
    const json& item = j["output"][0];
    EXPECT_EQ(item["type"], "message");
    EXPECT_EQ(item["role"], "assistant");
    EXPECT_EQ(item["content"][0]["type"], "output_text");
    EXPECT_FALSE(item["content"][0]["text"].get<std::string>().empty());
    const json& u = j["usage"];
    for (const char* k : {"input_tokens", "output_tokens", "total_tokens"}) EXPECT_TRUE(u.contains(k)) << k;
    EXPECT_TRUE(u["input_tokens_details"].contains("cached_tokens"));
    EXPECT_TRUE(u["output_tokens_details"].contains("reasoning_tokens"));
    EXPECT_EQ(u["total_tokens"], u["input_tokens"].get<int>() + u["output_tokens"].get<int>());
    EXPECT_LE(u["output_tokens"].get<int>(), 24);
    for (const char* k : {"created_at", "previous_response_id", "instructions", "temperature", "top_p", "max_output_tokens",
                          "tools", "tool_choice", "truncation", "metadata", "service_tier", "store", "error", "incomplete_details"})
        EXPECT_TRUE(j.contains(k)) << k;
    EXPECT_FALSE(r.headers["x-request-id"].empty());
    EXPECT_NE(r.headers["server-timing"].find("ttft;dur="), std::string::npos) << r.headers["server-timing"];
}

TEST_F(ResponsesHttp, GreedyOutputIsDeterministic) {
    json a = post_json(port(), "/v1/responses", story()).json_body();
    json b = post_json(port(), "/v1/responses", story()).json_body();
    EXPECT_EQ(a["output"][0]["content"][0]["text"], b["output"][0]["content"][0]["text"]);
    // The second identical prompt reuses the first one's KV (all but the last prompt token).
    EXPECT_EQ(b["usage"]["input_tokens_details"]["cached_tokens"], b["usage"]["input_tokens"].get<int>() - 1);
}

TEST_F(ResponsesHttp, SseEventsComeInProtocolOrderWithIncreasingSequenceNumbers) {
    json req = story(16);
    req["stream"] = true;
    SseResult r = sse(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.headers["content-type"].find("text/event-stream"), std::string::npos);
    ASSERT_GE(r.events.size(), 8u);
    std::vector<std::string> types;
    int64_t last_seq = -1;
    std::string deltas, done_text;
    json terminal;
    for (const SseEvent& e : r.events) {
        json d = json::parse(e.data);
        EXPECT_EQ(d["type"], e.event);  // the JSON repeats the SSE event name
        EXPECT_FALSE(d.contains("error")) << "no top-level error key in response.* events";
        EXPECT_GT(d["sequence_number"].get<int64_t>(), last_seq);
        last_seq = d["sequence_number"];
        types.push_back(e.event);
        if (e.event == "response.output_text.delta") {
            deltas += d["delta"].get<std::string>();
            EXPECT_TRUE(d.contains("item_id") && d.contains("output_index") && d.contains("content_index") && d.contains("logprobs"));
        }
        if (e.event == "response.output_text.done") done_text = d["text"];
        terminal = d;
    }
    EXPECT_EQ(types[0], "response.created");
    EXPECT_EQ(types[1], "response.in_progress");
    EXPECT_EQ(types[2], "response.output_item.added");
    EXPECT_EQ(types[3], "response.content_part.added");
    EXPECT_EQ(types[4], "response.output_text.delta");
    size_t n = types.size();
    EXPECT_EQ(types[n - 4], "response.output_text.done");
    EXPECT_EQ(types[n - 3], "response.content_part.done");
    EXPECT_EQ(types[n - 2], "response.output_item.done");
    EXPECT_TRUE(types[n - 1] == "response.completed" || types[n - 1] == "response.incomplete");
    EXPECT_EQ(deltas, done_text);
    EXPECT_FALSE(done_text.empty());
    EXPECT_TRUE(terminal["response"]["id"].is_string());
    EXPECT_TRUE(terminal["response"]["usage"]["input_tokens_details"].contains("cached_tokens"));
    if (types[n - 1] == "response.incomplete") {
        EXPECT_EQ(terminal["response"]["incomplete_details"]["reason"], "max_output_tokens");
    }
}

// A conversation continued past the context: refused by default, and with truncation "auto" its oldest turns
// are dropped so the new turn fits. Both served test models are plain-text ones (no chat template); the
// ChatML turn dropping is tested on tiny-qwen2's template in protocol_test.cpp.
void expect_truncated_continuation(int port, const std::string& model, const std::string& filler) {
    std::string text;
    while (text.size() < 600) text += filler;  // ~150 tokens a turn; ctx is 512
    std::string id;
    for (int turn = 0; turn < 3; ++turn) {
        json req = {{"model", model}, {"input", text}, {"temperature", 0}, {"max_output_tokens", 4}};
        if (!id.empty()) req["previous_response_id"] = id;
        HttpResult r = post_json(port, "/v1/responses", req);
        if (r.status != 200) break;
        id = r.json_body()["id"];
    }
    ASSERT_FALSE(id.empty());
    json next = {{"model", model}, {"previous_response_id", id}, {"input", text}, {"temperature", 0}, {"max_output_tokens", 4}};
    HttpResult refused = post_json(port, "/v1/responses", next);
    ASSERT_EQ(refused.status, 400) << model << ": " << refused.body;
    EXPECT_EQ(refused.json_body()["error"]["code"], "context_length_exceeded");
    next["truncation"] = "auto";
    HttpResult ok = post_json(port, "/v1/responses", next);
    ASSERT_EQ(ok.status, 200) << model << ": " << ok.body;
    const json usage = ok.json_body()["usage"];
    EXPECT_LT(usage["input_tokens"].get<int>(), 512) << model;
    EXPECT_GT(usage["input_tokens"].get<int>(), 150) << model << ": the new turn and what was kept of the history";
    // The truncated conversation goes on: the next turn continues from it.
    json after = {{"model", model}, {"previous_response_id", ok.json_body()["id"]}, {"input", "And then?"},
                  {"temperature", 0}, {"max_output_tokens", 4}, {"truncation", "auto"}};
    EXPECT_EQ(post_json(port, "/v1/responses", after).status, 200) << model;
}

TEST_F(ResponsesHttp, TruncationAutoDropsTheOldestTurnsOfAContinuedConversation) {
    expect_truncated_continuation(port(), "stories", "The little dog ran to the park. ");
    if (shared_exists("models/flint-tiny-code.gguf"))
        expect_truncated_continuation(port(), "code", "int add(int a, int b) { return a + b; }\n");
}

TEST_F(ResponsesHttp, StoredResponseCanBeFetchedListedContinuedAndDeleted) {
    json first = post_json(port(), "/v1/responses", story(8)).json_body();
    std::string id = first["id"];
    HttpResult got = http(port(), "GET", "/v1/responses/" + id);
    ASSERT_EQ(got.status, 200);
    EXPECT_EQ(got.json_body()["output"], first["output"]);
    HttpResult items = http(port(), "GET", "/v1/responses/" + id + "/input_items");
    ASSERT_EQ(items.status, 200);
    EXPECT_EQ(items.json_body()["object"], "list");
    EXPECT_EQ(items.json_body()["data"][0]["content"][0]["text"], "Once upon a time");

    json next = {{"model", "stories"}, {"previous_response_id", id}, {"input", "The end."}, {"temperature", 0}, {"max_output_tokens", 4}};
    json second = post_json(port(), "/v1/responses", next).json_body();
    ASSERT_EQ(second["previous_response_id"], id) << second.dump();
    int prev_total = first["usage"]["total_tokens"];
    EXPECT_GE(second["usage"]["input_tokens_details"]["cached_tokens"].get<int>(), prev_total - 1);

    HttpResult del = http(port(), "DELETE", "/v1/responses/" + id);
    ASSERT_EQ(del.status, 200);
    EXPECT_EQ(del.json_body(), json({{"id", id}, {"object", "response"}, {"deleted", true}}));
    EXPECT_EQ(http(port(), "GET", "/v1/responses/" + id).status, 404);
}

TEST_F(ResponsesHttp, StoreFalseKeepsNothing) {
    json req = story(4);
    req["store"] = false;
    json j = post_json(port(), "/v1/responses", req).json_body();
    EXPECT_EQ(j["store"], false);
    EXPECT_EQ(http(port(), "GET", "/v1/responses/" + j["id"].get<std::string>()).status, 404);
}

TEST_F(ResponsesHttp, PreviousResponseNotFoundIsA400NamingTheParam) {
    json req = story(4);
    req["previous_response_id"] = "resp_doesnotexist";
    HttpResult r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 400);
    json e = r.json_body()["error"];
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["code"], "previous_response_not_found");
    EXPECT_EQ(e["param"], "previous_response_id");
    EXPECT_TRUE(e["message"].is_string());
}

TEST_F(ResponsesHttp, CancelOfAFinishedResponseIsA409AndUnknownIsA404) {
    json j = post_json(port(), "/v1/responses", story(2)).json_body();
    EXPECT_EQ(http(port(), "POST", "/v1/responses/" + j["id"].get<std::string>() + "/cancel").status, 409);
    EXPECT_EQ(http(port(), "POST", "/v1/responses/resp_nope/cancel").status, 404);
}

TEST_F(ResponsesHttp, ModelsListsTheServedModels) {
    HttpResult r = http(port(), "GET", "/v1/models");
    ASSERT_EQ(r.status, 200);
    json j = r.json_body();
    EXPECT_EQ(j["object"], "list");
    std::set<std::string> ids;
    for (auto& m : j["data"]) ids.insert(m["id"]);
    EXPECT_TRUE(ids.count("stories"));
    EXPECT_EQ(http(port(), "GET", "/v1/models/stories").json_body()["id"], "stories");
}

TEST_F(ResponsesHttp, ChatCompletionsNonStreaming) {
    json req = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"temperature", 0}, {"max_tokens", 12}};
    HttpResult r = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    json j = r.json_body();
    EXPECT_EQ(j["object"], "chat.completion");
    EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
    EXPECT_FALSE(j["choices"][0]["message"]["content"].get<std::string>().empty());
    EXPECT_TRUE(j["choices"][0]["finish_reason"] == "length" || j["choices"][0]["finish_reason"] == "stop");
    EXPECT_TRUE(j["usage"]["prompt_tokens_details"].contains("cached_tokens"));
    EXPECT_TRUE(j["usage"]["completion_tokens_details"].contains("accepted_prediction_tokens"));
}

TEST_F(ResponsesHttp, ChatCompletionsStreamEndsWithUsageThenDone) {
    json req = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"temperature", 0},
                {"max_tokens", 12}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    SseResult r = sse(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_GE(r.events.size(), 4u);
    EXPECT_EQ(r.events.back().data, "[DONE]");
    json usage_chunk = json::parse(r.events[r.events.size() - 2].data);
    EXPECT_TRUE(usage_chunk["choices"].empty());
    EXPECT_GT(usage_chunk["usage"]["completion_tokens"].get<int>(), 0);
    json first = json::parse(r.events[0].data);
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    json fin = json::parse(r.events[r.events.size() - 3].data);
    EXPECT_FALSE(fin["choices"][0]["finish_reason"].is_null());
    std::string text;
    for (size_t i = 1; i + 3 < r.events.size(); ++i) text += json::parse(r.events[i].data)["choices"][0]["delta"].value("content", "");
    EXPECT_FALSE(text.empty());
}

TEST_F(ResponsesHttp, PredictionIsAcceptedAndReported) {
    json req = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"temperature", 0},
                {"max_tokens", 12}, {"prediction", {{"type", "content"}, {"content", "there was a little girl"}}}};
    HttpResult r = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    json d = r.json_body()["usage"]["completion_tokens_details"];
    EXPECT_GE(d["accepted_prediction_tokens"].get<int>() + d["rejected_prediction_tokens"].get<int>(), 1);
}

TEST_F(ResponsesHttp, LegacyCompletionsAndFillInTheMiddle) {
    json req = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 8}};
    HttpResult r = post_json(port(), "/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json_body()["object"], "text_completion");
    EXPECT_FALSE(r.json_body()["choices"][0]["text"].get<std::string>().empty());
    // stories260K has no FIM tokens: suffix is refused with a clear error.
    req["suffix"] = "The end.";
    HttpResult bad = post_json(port(), "/v1/completions", req);
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.json_body()["error"]["param"], "suffix");
    if (!shared_exists("models/flint-tiny-code.gguf")) GTEST_SKIP() << "flint-tiny-code.gguf absent: FIM not exercised";
    json fim = {{"model", "code"}, {"prompt", "def add(a, b):\n    "}, {"suffix", "\n\nprint(add(1, 2))\n"}, {"temperature", 0}, {"max_tokens", 8}};
    HttpResult ok = post_json(port(), "/v1/completions", fim);
    ASSERT_EQ(ok.status, 200) << ok.body;
    EXPECT_GT(ok.json_body()["usage"]["completion_tokens"].get<int>(), 0);
}

// logprobs (an integer on this endpoint) returns the legacy object, streamed or not, and a prompt can be
// given as token ids; bad ids are refused with the parameter named.
TEST_F(ResponsesHttp, LegacyCompletionsLogprobsAndTokenIdPrompts) {
    json req = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 12}, {"logprobs", 2}};
    HttpResult r = post_json(port(), "/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = r.json_body()["choices"][0];
    const std::string text = choice["text"];
    const json lp = choice["logprobs"];
    ASSERT_TRUE(lp.is_object()) << r.body;
    ASSERT_EQ(lp["tokens"].size(), 12u);
    ASSERT_EQ(lp["token_logprobs"].size(), 12u);
    ASSERT_EQ(lp["top_logprobs"].size(), 12u);
    ASSERT_EQ(lp["text_offset"].size(), 12u);
    std::string joined;
    for (size_t i = 0; i < 12; ++i) {
        const std::string t = lp["tokens"][i];
        EXPECT_EQ(lp["text_offset"][i].get<size_t>(), joined.size()) << i;
        joined += t;
        const double chosen = lp["token_logprobs"][i];
        EXPECT_LE(chosen, 0.0);
        const json& top = lp["top_logprobs"][i];
        EXPECT_GE(top.size(), 1u);
        EXPECT_LE(top.size(), 3u) << "the top 2 and the chosen token";
        ASSERT_TRUE(top.contains(t)) << top.dump();
        for (auto& [piece, v] : top.items()) EXPECT_LE(v.get<double>(), chosen + 1e-6) << "greedy: the chosen token is the likeliest";
    }
    EXPECT_EQ(joined, text);

    // Streamed: the chunks' logprobs together are the same.
    json sreq = req;
    sreq["stream"] = true;
    SseResult s = sse(port(), "/v1/completions", sreq);
    ASSERT_EQ(s.status, 200);
    json streamed = json::array();
    for (const SseEvent& e : s.events) {
        if (e.data == "[DONE]") continue;
        const json c = json::parse(e.data)["choices"][0];
        if (c["logprobs"].is_object())
            for (const json& t : c["logprobs"]["tokens"]) streamed.push_back(t);
    }
    EXPECT_EQ(streamed, lp["tokens"]);

    // Without logprobs, none.
    req.erase("logprobs");
    EXPECT_TRUE(post_json(port(), "/v1/completions", req).json_body()["choices"][0]["logprobs"].is_null());

    // The prompt as token ids (stories260K: BOS 1, then "Once upon a time") answers as the text does.
    auto tok = Tokenizer::from_gguf(*gguf::File::open(shared_path("models/stories260K.gguf")));
    const std::vector<int32_t> ids = tok->encode("Once upon a time", true, false);
    json by_ids = req;
    by_ids["prompt"] = ids;
    HttpResult t = post_json(port(), "/v1/completions", by_ids);
    ASSERT_EQ(t.status, 200) << t.body;
    EXPECT_EQ(t.json_body()["choices"][0]["text"], text);
    EXPECT_EQ(t.json_body()["usage"]["prompt_tokens"], ids.size());
    by_ids["prompt"] = json::array({ids});  // [[ids]]: one prompt too
    EXPECT_EQ(post_json(port(), "/v1/completions", by_ids).json_body()["choices"][0]["text"], text);
    by_ids["echo"] = true;  // echoed as the text prompt would be
    EXPECT_EQ(post_json(port(), "/v1/completions", by_ids).json_body()["choices"][0]["text"], "Once upon a time" + text);
    by_ids.erase("echo");

    for (const json& bad : {json::array({1, 99999}), json::array({1, -3}), json::array({1, 2.5}), json::array({json::array({1}), json::array({2})})}) {
        by_ids["prompt"] = bad;
        HttpResult b = post_json(port(), "/v1/completions", by_ids);
        EXPECT_EQ(b.status, 400) << bad.dump() << " " << b.body;
        EXPECT_EQ(b.json_body()["error"]["param"], "prompt") << bad.dump();
    }
    by_ids["prompt"] = ids;
    by_ids["suffix"] = "The end.";
    EXPECT_EQ(post_json(port(), "/v1/completions", by_ids).status, 400);
}

// A token whose text the runtime holds back (here " the", the start of the stop sequence " thexyz",
// released with the next token) keeps its logprob entry: the entries' tokens spell the text exactly,
// streamed or not.
TEST_F(ResponsesHttp, LogprobsStayWithTheirTextWhenAStopSequenceHoldsItBack) {
    auto spelled = [](const json& entries) {
        std::string s;
        for (const json& e : entries) s += e["token"].get<std::string>();
        return s;
    };
    json chat = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"max_tokens", 40},
                 {"temperature", 0}, {"logprobs", true}, {"stop", {" thexyz"}}};
    HttpResult r = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(r.status, 200) << r.body;
    const json c = r.json_body()["choices"][0];
    const std::string text = c["message"]["content"];
    ASSERT_NE(text.find(" the"), std::string::npos) << "the test needs a held-back ' the': " << text;
    EXPECT_EQ(c["logprobs"]["content"].size(), 40u);
    EXPECT_EQ(spelled(c["logprobs"]["content"]), text);
    chat["stream"] = true;
    SseResult s = sse(port(), "/v1/chat/completions", chat);
    json streamed = json::array();
    for (const SseEvent& e : s.events) {
        if (e.data == "[DONE]") continue;
        const json ch = json::parse(e.data)["choices"];
        if (!ch.empty() && ch[0]["logprobs"].is_object())
            for (const json& l : ch[0]["logprobs"]["content"]) streamed.push_back(l);
    }
    EXPECT_EQ(spelled(streamed), text);

    // Responses has no stop parameter; its events go through the same queue, checked here to spell the text.
    json resp = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 40}, {"temperature", 0},
                 {"top_logprobs", 1}};
    HttpResult rr = post_json(port(), "/v1/responses", resp);
    ASSERT_EQ(rr.status, 200) << rr.body;
    const json part = rr.json_body()["output"][0]["content"][0];
    EXPECT_EQ(spelled(part["logprobs"]), part["text"].get<std::string>());
    resp["stream"] = true;
    SseResult rs = sse(port(), "/v1/responses", resp);
    ASSERT_EQ(rs.status, 200) << rs.body;
    json deltas = json::array();
    for (const SseEvent& e : rs.events)
        if (e.event == "response.output_text.delta") {
            const json d = json::parse(e.data);  // (a range-for over a temporary's member would dangle)
            for (const json& l : d["logprobs"]) deltas.push_back(l);
        }
    EXPECT_EQ(spelled(deltas), part["text"].get<std::string>());
}

// logit_bias (Chat and legacy Completions): -100 bans a token, so the greedy answer changes at the first
// token it would have used; bad keys, values and ids are 400s naming the entry.
TEST_F(ResponsesHttp, LogitBiasBansATokenAndBadEntriesAre400) {
    auto tok = Tokenizer::from_gguf(*gguf::File::open(shared_path("models/stories260K.gguf")));
    json req = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 6}, {"logprobs", 0}};
    const json plain = post_json(port(), "/v1/completions", req).json_body()["choices"][0];
    const std::string first = plain["logprobs"]["tokens"][0];
    auto id_of = [&](std::string piece) {  // an SPM piece's id: spaces are written U+2581 in the vocabulary
        for (size_t at; (at = piece.find(' ')) != std::string::npos;) piece.replace(at, 1, "\xE2\x96\x81");
        const auto id = tok->find_token(piece);
        EXPECT_TRUE(id.has_value()) << piece;
        return id.value_or(0);
    };
    const int32_t banned = id_of(first);
    req["logit_bias"] = {{std::to_string(banned), -100}};
    const json biased = post_json(port(), "/v1/completions", req).json_body()["choices"][0];
    EXPECT_NE(biased["logprobs"]["tokens"][0], first) << "the banned token is not drawn";
    EXPECT_NE(biased["text"], plain["text"]);

    json chat = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"temperature", 0}, {"max_tokens", 6}};
    const std::string chat_plain = post_json(port(), "/v1/chat/completions", chat).json_body()["choices"][0]["message"]["content"];
    ASSERT_EQ(chat_plain.substr(0, first.size()), first) << "the chat answer starts with the same token";
    chat["logit_bias"] = {{std::to_string(banned), -100}};
    HttpResult cb = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(cb.status, 200) << cb.body;
    EXPECT_NE(cb.json_body()["choices"][0]["message"]["content"], chat_plain);

    const std::pair<json, std::string> bad[] = {{json{{"abc", 1}}, "logit_bias.abc"}, {json{{" 5", 1}}, "logit_bias. 5"},
                                                {json{{"-5", 1}}, "logit_bias.-5"}, {json{{"5", 200}}, "logit_bias.5"},
                                                {json{{"5", "x"}}, "logit_bias.5"}, {json{{"99999", 1}}, "logit_bias.99999"},
                                                {json::array({1}), "logit_bias"}};
    for (const auto& [b, param] : bad) {
        chat["logit_bias"] = b;
        HttpResult r = post_json(port(), "/v1/chat/completions", chat);
        EXPECT_EQ(r.status, 400) << b.dump() << " " << r.body;
        EXPECT_EQ(r.json_body()["error"]["param"], param) << r.body;
    }
}

// Responses logprobs come with include: ["message.output_text.logprobs"] (no alternatives unless
// top_logprobs asks for them) or with top_logprobs > 0; without either, none.
TEST_F(ResponsesHttp, IncludeOutputTextLogprobsAsksForLogprobs) {
    json req = story(8);
    auto part_of = [&](const json& body) {
        HttpResult r = post_json(port(), "/v1/responses", body);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.json_body()["output"][0]["content"][0];
    };
    EXPECT_TRUE(part_of(req)["logprobs"].empty());
    req["include"] = {"message.output_text.logprobs"};
    json part = part_of(req);
    ASSERT_EQ(part["logprobs"].size(), 8u) << part.dump();
    std::string spelled;
    for (const json& e : part["logprobs"]) {
        spelled += e["token"].get<std::string>();
        EXPECT_LE(e["logprob"].get<double>(), 0.0);
        EXPECT_TRUE(e["top_logprobs"].empty());
    }
    EXPECT_EQ(spelled, part["text"].get<std::string>());
    req["top_logprobs"] = 2;
    part = part_of(req);
    ASSERT_EQ(part["logprobs"].size(), 8u);
    EXPECT_EQ(part["logprobs"][0]["top_logprobs"].size(), 2u);
}

TEST(ResponsesStore, RestartKeepsStoredResponsesAndTheirHistory) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempStore db("flint-store");
    TestModels models;
    server::ServerConfig cfg;
    cfg.store_path = db.path;
    json first;
    {
        TestServer s(cfg, models);
        first = post_json(s.port(), "/v1/responses", story(8)).json_body();
        ASSERT_EQ(first["status"].is_string(), true);
    }
    TestServer s(cfg, models);
    std::string id = first["id"];
    HttpResult got = http(s.port(), "GET", "/v1/responses/" + id);
    ASSERT_EQ(got.status, 200);
    EXPECT_EQ(got.json_body()["output"], first["output"]);
    EXPECT_EQ(got.json_body()["usage"], first["usage"]);
    json next = {{"previous_response_id", id}, {"input", "The end."}, {"temperature", 0}, {"max_output_tokens", 4}};
    HttpResult cont = post_json(s.port(), "/v1/responses", next);
    ASSERT_EQ(cont.status, 200) << cont.body;
    EXPECT_GE(cont.json_body()["usage"]["input_tokens"].get<int>(), first["usage"]["total_tokens"].get<int>());
}

// A response continues on the model that made it: naming no model runs it there, naming another is a 400
// on previous_response_id (its KV and tokens belong to the first model's vocabulary).
TEST_F(ResponsesHttp, AResponseIsContinuedOnlyByTheModelThatMadeIt) {
    if (!shared_exists("models/flint-tiny-code.gguf")) GTEST_SKIP() << "needs the second test model";
    const std::string id = post_json(port(), "/v1/responses", story(4)).json_body()["id"];
    json cont = {{"previous_response_id", id}, {"input", "Then?"}, {"temperature", 0}, {"max_output_tokens", 2}};
    HttpResult same = post_json(port(), "/v1/responses", cont);
    ASSERT_EQ(same.status, 200) << same.body;
    EXPECT_EQ(same.json_body()["model"], "stories");
    cont["model"] = "code";
    HttpResult other = post_json(port(), "/v1/responses", cont);
    ASSERT_EQ(other.status, 400) << other.body;
    EXPECT_EQ(other.json_body()["error"]["param"], "previous_response_id");
    const std::string msg = other.json_body()["error"]["message"];
    EXPECT_NE(msg.find("made by model 'stories'; it cannot be continued with 'code'"), std::string::npos) << msg;
}

// truncation "auto" on one request whose own items overflow the context: its oldest items go (never the
// last), until it fits; without it the request is refused.
TEST_F(ResponsesHttp, TruncationAutoDropsTheOldestItemsOfALongRequest) {
    std::string text;
    while (text.size() < 600) text += "The little dog ran to the park. ";  // ~150 tokens an item; ctx is 512
    json items = json::array();
    for (int k = 0; k < 4; ++k) items.push_back({{"role", "user"}, {"content", std::to_string(k) + ": " + text}});
    items.push_back({{"role", "user"}, {"content", "What did the dog do?"}});
    json req = {{"model", "stories"}, {"input", items}, {"temperature", 0}, {"max_output_tokens", 4}};
    HttpResult refused = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(refused.status, 400) << refused.body;
    EXPECT_EQ(refused.json_body()["error"]["code"], "context_length_exceeded");
    req["truncation"] = "auto";
    HttpResult ok = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(ok.status, 200) << ok.body;
    const int input = ok.json_body()["usage"]["input_tokens"];
    EXPECT_LT(input, 512);
    EXPECT_GT(input, 300) << "only as many items as needed go: two or three of the long ones stay";
    // The last item alone longer than the context cannot be saved by dropping the others.
    std::string huge;
    while (huge.size() < 4000) huge += text;
    req["input"] = json::array({{{"role", "user"}, {"content", "short"}}, {{"role", "user"}, {"content", huge}}});
    HttpResult too_long = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(too_long.status, 400) << too_long.body;
    EXPECT_EQ(too_long.json_body()["error"]["code"], "context_length_exceeded");
}

// POST /v1/responses/input_tokens (the SDKs' responses.inputTokens.count): the prompt's length as a create
// with the same body would have it — history, instructions, tools, a forced call, truncation — and, unlike a
// create, also when it is longer than the context (that is what a client asks it to find out).
TEST_F(ResponsesHttp, InputTokensCountsThePromptACreateWouldPrefill) {
    auto count = [&](const json& req) {
        HttpResult r = post_json(port(), "/v1/responses/input_tokens", req);
        EXPECT_EQ(r.status, 200) << r.body;
        const json j = r.json_body();
        EXPECT_EQ(j["object"], "response.input_tokens");
        return j.value("input_tokens", -1);
    };
    auto created = [&](const json& req) {
        HttpResult r = post_json(port(), "/v1/responses", req);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.json_body();
    };
    std::vector<std::string> models = {"stories"};
    if (shared_exists("models/flint-tiny-code.gguf")) models.push_back("code");  // a chat template, tools rendered
    for (const std::string& model : models) {
        SCOPED_TRACE(model);
        const json tools = {{{"type", "function"}, {"name", "run"}, {"parameters", {{"type", "object"}, {"properties", {{"cmd", {{"type", "string"}}}}}}}}};
        const json bodies[] = {
            {{"model", model}, {"input", "Once upon a time"}},
            {{"model", model}, {"instructions", "Be brief."}, {"input", {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Hello."}}, {{"role", "user"}, {"content", "Go on."}}}}},
            {{"model", model}, {"input", "Run ls."}, {"tools", tools}},
            {{"model", model}, {"input", "Run ls."}, {"tools", tools}, {"tool_choice", "required"}},
        };
        for (json req : bodies) {
            const int n = count(req);
            req["max_output_tokens"] = 1;
            req["temperature"] = 0;
            EXPECT_EQ(n, created(req)["usage"]["input_tokens"].get<int>()) << req.dump();
        }
        // A continuation: its history counts.
        const json first = created({{"model", model}, {"input", "Once upon a time"}, {"max_output_tokens", 8}, {"temperature", 0}});
        const json next = {{"previous_response_id", first["id"]}, {"input", "And then?"}};
        const int n = count(next);
        EXPECT_GT(n, first["usage"]["total_tokens"].get<int>());
        json req = next;
        req["max_output_tokens"] = 1;
        EXPECT_EQ(n, created(req)["usage"]["input_tokens"].get<int>());
    }
    // Longer than the context (512): counted; truncation "auto" counts what would be kept.
    std::string text;
    while (text.size() < 600) text += "The little dog ran to the park. ";
    json items = json::array();
    for (int k = 0; k < 5; ++k) items.push_back({{"role", "user"}, {"content", std::to_string(k) + ": " + text}});
    json req = {{"model", "stories"}, {"input", items}};
    EXPECT_GT(count(req), 512);
    EXPECT_EQ(post_json(port(), "/v1/responses", req).status, 400) << "a create of it is refused";
    req["truncation"] = "auto";
    const int kept = count(req);
    EXPECT_LT(kept, 512);
    req["max_output_tokens"] = 1;
    EXPECT_EQ(kept, created(req)["usage"]["input_tokens"].get<int>());
    // Errors are a create's.
    HttpResult missing = post_json(port(), "/v1/responses/input_tokens", {{"previous_response_id", "resp_nope"}, {"input", "x"}});
    EXPECT_EQ(missing.status, 400);
    EXPECT_EQ(missing.json_body()["error"]["param"], "previous_response_id");
    EXPECT_EQ(post_json(port(), "/v1/responses/input_tokens", {{"model", "nope"}, {"input", "x"}}).status, 404);
    HttpResult typed = post_json(port(), "/v1/responses/input_tokens", {{"model", "stories"}, {"input", 5}});
    EXPECT_EQ(typed.status, 400);
    EXPECT_EQ(typed.json_body()["error"]["param"], "input");
    EXPECT_EQ(http(port(), "POST", "/v1/responses/input_tokens", "{nope").status, 400);
}

// DELETE on the SQLite store (what `flint serve` uses by default): the response is gone, also after a
// restart, and only that one.
TEST(ResponsesStore, DeleteRemovesOneStoredResponseForGood) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempStore db("flint-store-del");
    TestModels models;
    server::ServerConfig cfg;
    cfg.store_path = db.path;
    std::string gone, kept;
    {
        TestServer s(cfg, models);
        gone = post_json(s.port(), "/v1/responses", story(4)).json_body()["id"];
        kept = post_json(s.port(), "/v1/responses", story(4)).json_body()["id"];
        HttpResult del = http(s.port(), "DELETE", "/v1/responses/" + gone);
        ASSERT_EQ(del.status, 200) << del.body;
        EXPECT_EQ(del.json_body(), json({{"id", gone}, {"object", "response"}, {"deleted", true}}));
        EXPECT_EQ(http(s.port(), "GET", "/v1/responses/" + gone).status, 404);
        HttpResult again = http(s.port(), "DELETE", "/v1/responses/" + gone);
        EXPECT_EQ(again.status, 404);
        EXPECT_EQ(again.json_body()["error"]["param"], "response_id");
    }
    TestServer s(cfg, models);
    EXPECT_EQ(http(s.port(), "GET", "/v1/responses/" + gone).status, 404);
    EXPECT_EQ(http(s.port(), "GET", "/v1/responses/" + kept).status, 200);
    json cont = {{"previous_response_id", gone}, {"input", "More."}, {"max_output_tokens", 2}};
    HttpResult r = post_json(s.port(), "/v1/responses", cont);
    EXPECT_EQ(r.status, 400) << r.body;  // as OpenAI answers a chain from an unknown id
    EXPECT_EQ(r.json_body()["error"]["code"], "previous_response_not_found");
}

// Every reply carries x-request-id: the client's own when it is short and printable (for tracing across
// hops), a new one otherwise.
TEST_F(ResponsesHttp, ARequestIdIsEchoedWhenItIsSafeAndMadeOtherwise) {
    auto id_for = [&](const Headers& h) { return http(port(), "GET", "/v1/models", "", h).headers["x-request-id"]; };
    EXPECT_EQ(id_for({{"x-request-id", "trace-42"}}), "trace-42");
    const std::string longest(128, 'a');
    EXPECT_EQ(id_for({{"x-request-id", longest}}), longest);
    for (const std::string& bad : {std::string(129, 'a'), std::string("two words"), std::string("")}) {
        SCOPED_TRACE(bad);
        const std::string made = id_for({{"x-request-id", bad}});
        EXPECT_EQ(made.rfind("req_", 0), 0u) << made;
    }
    const std::string a = id_for({}), b = id_for({});
    EXPECT_EQ(a.rfind("req_", 0), 0u) << a;
    EXPECT_NE(a, b);
    // Errors carry it too.
    HttpResult e = post_json(port(), "/v1/responses", json{{"model", 1}}, {{"x-request-id", "trace-err"}});
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.headers["x-request-id"], "trace-err");
}

TEST_F(ResponsesHttp, NonTextContentPartsAreRefusedNamingThePartOnBothApis) {
    json chat = {{"model", "stories"},
                 {"messages", json::array({{{"role", "user"},
                                            {"content", json::array({{{"type", "text"}, {"text", "Hi"}},
                                                                     {{"type", "image_url"}, {"image_url", {{"url", "x"}}}}})}}})}};
    HttpResult c = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(c.status, 400) << c.body;
    EXPECT_EQ(c.json_body()["error"]["param"], "messages[0].content[1].type");
    EXPECT_EQ(c.json_body()["error"]["code"], "unsupported_content");
    json resp = story();
    resp["input"] = json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_image"}, {"image_url", "x"}}})}}});
    HttpResult r = post_json(port(), "/v1/responses", resp);
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json_body()["error"]["param"], "input[0].content[0].type");
    EXPECT_EQ(r.json_body()["error"]["code"], "unsupported_content");
    // Text parts are joined: a part without a type is text on both.
    chat["messages"][0]["content"] = json::array({{{"text", "Once upon"}}, {{"type", "text"}, {"text", " a time"}}});
    EXPECT_EQ(post_json(port(), "/v1/chat/completions", chat).status, 200);
}

}  // namespace
}  // namespace flint::test
