// Bad input of every kind, keys, rate limits, metrics, 1,000 clients that vanish mid-stream, and the
// real `flint serve` binary (startup line, SIGTERM). After each bad request the server keeps serving.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <random>
#include <thread>

#include "harness.h"

namespace flint::test {
namespace {

class BadInput : public SharedServerSuite<BadInput> {
public:
    static TestServer* make_server() {
        server::ServerConfig cfg;
        cfg.body_limit = 64 * 1024;
        return new TestServer(cfg);
    }

protected:
    void TearDown() override {
        if (!server_) return;
        // Still serving after whatever the test sent.
        HttpResult ok = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 2}});
        EXPECT_EQ(ok.status, 200) << ok.body;
    }
    json error_of(const HttpResult& r) { return json::parse(r.body)["error"]; }
};

TEST_F(BadInput, MalformedJsonIs400) {
    HttpResult r = http(port(), "POST", "/v1/responses", "{\"model\": \"stories\", \"input\": ");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_of(r)["type"], "invalid_request_error");
    EXPECT_EQ(http(port(), "POST", "/v1/responses", "[1,2]").status, 400);
    EXPECT_EQ(http(port(), "POST", "/v1/chat/completions", "").status, 400);
}

TEST_F(BadInput, WrongTypesAre400NamingTheParam) {
    struct Case {
        json body;
        const char* param;
    } cases[] = {
        {{{"model", "stories"}, {"input", 5}}, "input"},
        {{{"model", "stories"}, {"input", "x"}, {"temperature", "hot"}}, "temperature"},
        {{{"model", "stories"}, {"input", "x"}, {"max_output_tokens", 1.5}}, "max_output_tokens"},
        {{{"model", "stories"}, {"input", "x"}, {"stream", "yes"}}, "stream"},
        {{{"model", 7}, {"input", "x"}}, "model"},
        {{{"model", "stories"}, {"input", {{{"role", "wizard"}, {"content", "x"}}}}}, "input[0].role"},
        {{{"model", "stories"}, {"input", "x"}, {"metadata", {{"k", 1}}}}, "metadata.k"},
        {{{"model", "stories"}, {"input", "x"}, {"temperature", 9}}, "temperature"},
    };
    for (const Case& c : cases) {
        HttpResult r = post_json(port(), "/v1/responses", c.body);
        EXPECT_EQ(r.status, 400) << c.body.dump();
        EXPECT_EQ(error_of(r)["param"], c.param) << r.body;
    }
    // Out of range: the value as the client wrote it, the range as a person would.
    HttpResult range = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "x"}, {"top_p", 2.5}});
    EXPECT_EQ(range.status, 400);
    EXPECT_EQ(error_of(range)["message"], "Invalid 'top_p': 2.5 is out of range [0, 1].") << range.body;
    HttpResult chat = post_json(port(), "/v1/chat/completions", {{"model", "stories"}, {"messages", "hi"}});
    EXPECT_EQ(chat.status, 400);
    EXPECT_EQ(error_of(chat)["param"], "messages");
    // Chat's top_logprobs without logprobs: true would be silently unused (OpenAI refuses it too).
    HttpResult top = post_json(port(), "/v1/chat/completions",
                               {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}});
    EXPECT_EQ(top.status, 400);
    EXPECT_EQ(error_of(top)["param"], "top_logprobs");
}

// Tool definitions, tool_choice and a conversation's earlier calls are read where the request is, so a
// wrongly typed field in them is a 400 naming it (they were read only when the prompt was rendered, and a
// number where a string belonged became a 500 with the JSON library's message).
TEST_F(BadInput, MalformedToolsAndToolCallsAre400sNamingTheField) {
    const json user = {{"role", "user"}, {"content", "x"}};
    auto responses = [](json extra) {
        json b = {{"model", "stories"}, {"input", "x"}, {"max_output_tokens", 2}};
        b.update(extra);
        return b;
    };
    auto chat = [&](json extra) {
        json b = {{"model", "stories"}, {"messages", {user}}, {"max_tokens", 2}};
        b.update(extra);
        return b;
    };
    auto call_in_history = [&](json call) {
        return chat({{"messages", {user, {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}}}});
    };
    const json fn = {{"name", "f"}, {"arguments", "{}"}};
    struct Case {
        const char* path;
        json body;
        const char* param;
    } cases[] = {
        {"/v1/responses", responses({{"tools", {{{"type", 5}}}}}), "tools[0].type"},
        {"/v1/responses", responses({{"tools", {{{"name", "f"}}}}}), "tools[0].type"},
        {"/v1/responses", responses({{"tools", {{{"type", "function"}}}}}), "tools[0].name"},
        {"/v1/responses", responses({{"tools", {{{"type", "function"}, {"name", 5}}}}}), "tools[0].name"},
        {"/v1/responses", responses({{"tools", {{{"type", "function"}, {"name", ""}}}}}), "tools[0].name"},
        {"/v1/responses", responses({{"tools", {{{"type", "function"}, {"name", "f"}, {"description", 7}}}}}), "tools[0].description"},
        {"/v1/responses", responses({{"tools", {{{"type", "function"}, {"name", "f"}, {"parameters", "x"}}}}}), "tools[0].parameters"},
        {"/v1/responses", responses({{"tools", {{{"type", "function"}, {"name", "f"}, {"strict", "yes"}}}}}), "tools[0].strict"},
        {"/v1/responses", responses({{"tool_choice", {{"type", 5}}}}), "tool_choice.type"},
        {"/v1/responses", responses({{"tool_choice", {{"name", "f"}}}}), "tool_choice.type"},
        {"/v1/chat/completions", chat({{"tools", {5}}}), "tools[0]"},
        {"/v1/chat/completions", chat({{"tools", {{{"type", "function"}, {"function", "f"}}}}}), "tools[0].function"},
        {"/v1/chat/completions", chat({{"tools", {{{"type", "function"}, {"function", {{"name", 3}}}}}}}), "tools[0].function.name"},
        {"/v1/chat/completions", chat({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"description", {1}}}}}}}}),
         "tools[0].function.description"},
        {"/v1/chat/completions", chat({{"tool_choice", {{"type", true}}}}), "tool_choice.type"},
        {"/v1/chat/completions", chat({{"functions", {{{"name", "f"}, {"description", 7}}}}}), "functions[0].description"},
        {"/v1/chat/completions", call_in_history({{"id", 5}, {"type", "function"}, {"function", fn}}), "messages[1].tool_calls[0].id"},
        {"/v1/chat/completions", call_in_history({{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", {{"a", 1}}}}}}),
         "messages[1].tool_calls[0].function.arguments"},
        {"/v1/chat/completions", call_in_history({{"id", "c"}, {"type", "function"}, {"function", {{"name", nullptr}, {"arguments", 1}}}}),
         "messages[1].tool_calls[0].function.arguments"},
    };
    for (const Case& c : cases) {
        HttpResult r = post_json(port(), c.path, c.body);
        EXPECT_EQ(r.status, 400) << c.body.dump() << "\n" << r.body;
        EXPECT_EQ(error_of(r)["param"], c.param) << r.body;
    }
    // What is fine: null for an optional field, and tools of other types (flint has none; Codex sends them).
    HttpResult ok = post_json(port(), "/v1/responses",
                              responses({{"tools", {{{"type", "web_search"}},
                                                    {{"type", "function"}, {"name", "f"}, {"description", nullptr}, {"parameters", nullptr}}}}}));
    EXPECT_EQ(ok.status, 200) << ok.body;
    ok = post_json(port(), "/v1/chat/completions", call_in_history({{"id", "c"}, {"type", "function"}, {"function", fn}}));
    EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(BadInput, UnknownFieldsAreIgnored) {
    HttpResult r = post_json(port(), "/v1/responses",
                             {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 2}, {"frobnicate", {1, 2}},
                              {"reasoning", {{"effort", "low"}}}, {"include", json::array()}, {"parallel_tool_calls", true}});
    EXPECT_EQ(r.status, 200) << r.body;
}

// Output formats: a malformed format or a schema flint cannot enforce is a 400 naming where (never
// accepted and then answered with JSON that may not fit); text, json_object and json_schema are accepted.
// Server-side objects flint does not keep (a Conversations API conversation, a stored prompt template):
// refused by name, not ignored (the answer would silently lack them).
TEST_F(BadInput, ChatFeaturesFlintLacksAre400sNotIgnored) {
    const std::vector<std::pair<std::string, json>> cases = {
        {"audio", {{"voice", "alloy"}, {"format", "wav"}}},
        {"modalities", {"text", "audio"}},
        {"web_search_options", json::object()}};
    for (const auto& [key, value] : cases) {
        json req = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}};
        req[key] = value;
        HttpResult r = post_json(port(), "/v1/chat/completions", req);
        EXPECT_EQ(r.status, 400) << key << ": " << r.body;
        EXPECT_EQ(error_of(r)["param"], key);
        EXPECT_EQ(error_of(r)["code"], "unsupported_parameter");
    }
    json ok = {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 2}, {"modalities", {"text"}}};
    EXPECT_EQ(post_json(port(), "/v1/chat/completions", ok).status, 200);
}

TEST_F(BadInput, ConversationAndStoredPromptAre400s) {
    for (const auto& [key, value] : {std::pair<std::string, json>{"conversation", "conv_123"},
                                     {"conversation", {{"id", "conv_123"}}},
                                     {"prompt", {{"id", "pmpt_1"}, {"version", "2"}}}}) {
        json req = {{"model", "stories"}, {"input", "x"}};
        req[key] = value;
        HttpResult r = post_json(port(), "/v1/responses", req);
        EXPECT_EQ(r.status, 400) << r.body;
        EXPECT_EQ(error_of(r)["param"], key);
        EXPECT_EQ(error_of(r)["code"], "unsupported_parameter");
    }
}

TEST_F(BadInput, OutputFormatsThatCannotBeHonouredAre400s) {
    const json pattern = {{"type", "object"}, {"properties", {{"zip", {{"type", "string"}, {"pattern", "^[0-9]{5}$"}}}}}};
    HttpResult r = post_json(port(), "/v1/responses",
                             {{"model", "stories"}, {"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", pattern}}}}}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(error_of(r)["param"], "text.format.schema.properties.zip.pattern");
    EXPECT_EQ(error_of(r)["code"], "invalid_json_schema");
    HttpResult c = post_json(port(), "/v1/chat/completions",
                             {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "x"}}}},
                              {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", pattern}}}}}});
    EXPECT_EQ(c.status, 400) << c.body;
    EXPECT_EQ(error_of(c)["param"], "response_format.json_schema.schema.properties.zip.pattern");
    for (const json& bad : {json("json"), json{{"type", "yaml"}}, json{{"type", "json_schema"}}}) {
        HttpResult b = post_json(port(), "/v1/chat/completions",
                                 {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"response_format", bad}});
        EXPECT_EQ(b.status, 400) << bad.dump();
    }
    const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}};
    for (const json& ok : {json{{"type", "text"}}, json{{"type", "json_object"}}, json{{"type", "json_schema"}, {"name", "x"}, {"schema", schema}}}) {
        EXPECT_EQ(post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", "x"}, {"max_output_tokens", 2}, {"text", {{"format", ok}}}}).status, 200);
        json chat_format = ok;
        if (ok["type"] == "json_schema") chat_format = {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}};
        EXPECT_EQ(post_json(port(), "/v1/chat/completions", {{"model", "stories"}, {"messages", {{{"role", "user"}, {"content", "x"}}}},
                                                             {"max_tokens", 2}, {"response_format", chat_format}}).status, 200);
    }
}

TEST_F(BadInput, UnknownModelIs404) {
    HttpResult r = post_json(port(), "/v1/responses", {{"model", "gpt-9"}, {"input", "x"}});
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_of(r)["code"], "model_not_found");
    EXPECT_EQ(error_of(r)["param"], "model");
}

TEST_F(BadInput, OversizeBodyIs413) {
    std::string big = "{\"model\":\"stories\",\"input\":\"" + std::string(100 * 1024, 'a') + "\"}";
    HttpResult r = http(port(), "POST", "/v1/responses", big);
    EXPECT_EQ(r.status, 413);
    EXPECT_EQ(error_of(r)["code"], "request_too_large");
}

TEST_F(BadInput, InvalidUtf8Is400) {
    std::string body = "{\"model\":\"stories\",\"input\":\"bad \xff\xfe bytes\"}";
    HttpResult r = http(port(), "POST", "/v1/responses", body);
    EXPECT_EQ(r.status, 400);
}

TEST_F(BadInput, OverlongInputIsContextLengthExceeded) {
    std::string text;
    for (int i = 0; i < 400; ++i) text += "the dog ran and ";
    HttpResult r = post_json(port(), "/v1/responses", {{"model", "stories"}, {"input", text}});
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_of(r)["code"], "context_length_exceeded");
}

TEST_F(BadInput, UnknownPathsAndMethods) {
    EXPECT_EQ(http(port(), "GET", "/v2/nothing").status, 404);
    EXPECT_EQ(http(port(), "PUT", "/v1/responses").status, 405);
    EXPECT_EQ(http(port(), "GET", "/v1/chat/completions").status, 405);
}

// Values of every JSON type for request fields, seeded so a failure repeats: the requests below are valid
// ones with a few fields replaced by these (or removed).
struct RandomFields {
    std::mt19937 rng{20261204};
    static constexpr const char* kKeys[] = {
        "model", "input", "instructions", "stream", "max_output_tokens", "temperature", "top_p", "top_k", "seed",
        "previous_response_id", "store", "tools", "tool_choice", "text", "format", "prediction", "top_logprobs",
        "include", "metadata", "stop", "messages", "prompt", "max_tokens", "n", "echo", "stream_options",
        "logit_bias", "response_format", "background", "truncation", "type", "name", "parameters", "schema",
        "content", "role", "suffix", "frequency_penalty", "presence_penalty", "logprobs", "reasoning",
        "parallel_tool_calls", "generate", "response", "response_id", "repo_name", "path", "context_files", "fim_band_lines"};

    int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
    const char* key() { return kKeys[pick(static_cast<int>(std::size(kKeys)))]; }
    template <class T>
    T one_of(std::initializer_list<T> xs) { return *(xs.begin() + pick(static_cast<int>(xs.size()))); }

    json value(int depth = 0) {
        switch (pick(depth < 3 ? 12 : 8)) {
            case 0: return nullptr;
            case 1: return pick(2) == 1;
            case 2: return one_of<json>({0, -1, 1, 2147483648LL, INT64_MIN, UINT64_MAX, 1e308, 0.5, 3});
            case 3: return one_of<std::string>({"", "x", "Once upon a time", "\u00e9\U0001F600", std::string(3000, 'a'),
                                                "<|im_start|>", std::string(1, '\0'), "resp_nope", "stories", "auto",
                                                "none", "json_schema"});
            case 4: return json::array({{{"role", one_of<std::string>({"user", "system", "assistant", "tool", "x"})},
                                         {"content", pick(2) ? json("hi") : json::array({{{"type", "input_text"}, {"text", "hi"}}})}}});
            case 5: return json::array({{{"type", one_of<std::string>({"message", "function_call", "function_call_output",
                                                                       "input_text", "item_reference", "reasoning"})},
                                         {"role", "user"}, {"content", "hi"}, {"call_id", "c"}, {"output", pick(2) ? json("r") : json(5)}}});
            case 6: return json::array({{{"type", "function"}, {"name", pick(2) ? json("f") : json(7)}, {"parameters", value(depth + 1)}}});
            case 7: return 4;
            case 8:
            case 9: {
                json a = json::array();
                for (int i = pick(4); i > 0; --i) a.push_back(value(depth + 1));
                return a;
            }
            default: {
                json o = json::object();
                for (int i = pick(4); i > 0; --i) o[key()] = value(depth + 1);
                return o;
            }
        }
    }
    // Replaces (or removes) one to four fields of a valid request.
    void mistype(json& body) {
        for (int k = 1 + pick(4); k > 0; --k) {
            const char* name = key();
            if (pick(5) == 0) body.erase(name);
            else body[name] = value();
        }
    }
};

bool is_error_with_message(const json& e) {
    return e.is_object() && e.contains("error") && e["error"].is_object() && e["error"].contains("message") &&
           e["error"]["message"].is_string() && !e["error"]["message"].get<std::string>().empty();
}

// Beyond the cases above: mistyped requests (and some bodies cut short, a byte flipped or made invalid
// UTF-8). Every answer must be a success or a 4xx whose body is a JSON error with a message: never a 5xx, a
// dropped connection or a crash.
TEST_F(BadInput, RandomlyMistypedRequestsGetA200OrAnErrorWithAMessage) {
    RandomFields rf;
    const char* paths[] = {"/v1/responses", "/v1/responses", "/v1/chat/completions", "/v1/completions"};
    int ok = 0, refused = 0;
    for (int i = 0; i < 300; ++i) {
        const std::string path = paths[rf.pick(4)];
        json body = {{"model", "stories"}};
        if (path == "/v1/responses") body["input"] = "Once", body["max_output_tokens"] = 4;
        else if (path == "/v1/chat/completions") body["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}}), body["max_tokens"] = 4;
        else body["prompt"] = "Once", body["max_tokens"] = 4;
        rf.mistype(body);
        std::string text = body.dump();
        switch (rf.pick(10)) {  // now and then the bytes themselves are wrong
            case 0: text[static_cast<size_t>(rf.pick(static_cast<int>(text.size())))] = static_cast<char>(rf.pick(256)); break;
            case 1: text.resize(static_cast<size_t>(rf.pick(static_cast<int>(text.size())))); break;
            case 2: text.insert(text.size() / 2, "\xff\xfe"); break;
            default: break;
        }
        HttpResult r = http(port(), "POST", path, text);
        ASSERT_TRUE(r.status == 200 || (r.status >= 400 && r.status < 500)) << "HTTP " << r.status << " for " << path << " " << text
                                                                             << "\n" << r.body;
        if (r.status == 200) {
            ++ok;
            continue;
        }
        ++refused;
        ASSERT_TRUE(is_error_with_message(json::parse(r.body, nullptr, false)))
            << "HTTP " << r.status << " for " << path << " " << text << "\n" << r.body;
    }
    // Both kinds of answer occurred, so the mix reached generation as well as validation (104 and 196).
    EXPECT_GT(ok, 30);
    EXPECT_GT(refused, 30);
}

// The same over one WebSocket: every mistyped response.create (and text that is not a JSON object, or has
// no string type) is answered by a terminal event or an error frame with a message, and the connection
// stays open for the next.
TEST_F(BadInput, RandomlyMistypedWebSocketMessagesGetAnAnswerAndTheConnectionStays) {
    RandomFields rf;
    rf.rng.seed(4122026);
    WsClient ws(port());
    int answered = 0, refused = 0;
    for (int i = 0; i < 150; ++i) {
        json m = {{"type", "response.create"}, {"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 4}};
        rf.mistype(m);
        std::string text = m.dump();
        if (rf.pick(10) == 0) text.resize(static_cast<size_t>(rf.pick(static_cast<int>(text.size()))));
        ws.send_text(text);
        // Other client event types (a cancel, "x") are ignored silently (PROTOCOL.md §3): no answer to wait for.
        const json sent = json::parse(text, nullptr, false);
        if (sent.is_object() && sent.contains("type") && sent["type"].is_string() && sent["type"] != "response.create") continue;
        std::vector<json> frames;
        ASSERT_NO_THROW(frames = ws.recv_until(kTerminal, 30)) << "no answer to " << text;
        ASSERT_FALSE(frames.empty());
        const json& last = frames.back();
        if (last["type"] == "error") {
            ++refused;
            ASSERT_TRUE(is_error_with_message(last)) << text << "\n" << last.dump();
            ASSERT_LT(last.value("status", 0), 500) << text << "\n" << last.dump();
        } else {
            ++answered;
        }
    }
    EXPECT_GT(answered, 15);
    EXPECT_GT(refused, 15);
}

TEST_F(BadInput, GarbageOnTheSocketClosesOnlyThatConnection) {
    raw(port(), "NOT HTTP AT ALL\r\n\r\n", 2);
    raw(port(), std::string("\0\1\2\3\4", 5), 2);
    raw(port(), "POST /v1/responses HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 2);
}

TEST(Access, KeysAreRequiredAndCanBeLimitedToModels) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto keys = std::filesystem::temp_directory_path() / ("flint-keys-" + std::to_string(::getpid()) + ".json");
    std::ofstream(keys) << R"({"keys":[{"key":"sk-other","models":["another-model"]}]})";
    server::ServerConfig cfg;
    cfg.api_keys = {"sk-good"};
    cfg.keys_file = keys.string();
    TestServer s(cfg);
    json req = {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 2}};
    HttpResult none = post_json(s.port(), "/v1/responses", req);
    EXPECT_EQ(none.status, 401);
    EXPECT_EQ(json::parse(none.body)["error"]["code"], "invalid_api_key");
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, {{"Authorization", "Bearer sk-bad"}}).status, 401);
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, {{"Authorization", "sk-good"}}).status, 401);
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, {{"Authorization", "Bearer sk-good"}}).status, 200);
    HttpResult other = post_json(s.port(), "/v1/responses", req, {{"Authorization", "Bearer sk-other"}});
    EXPECT_EQ(other.status, 403);
    EXPECT_EQ(http(s.port(), "GET", "/health").status, 200);  // health needs no key
    EXPECT_EQ(http(s.port(), "GET", "/v1/models").status, 401);
    std::filesystem::remove(keys);
}

TEST(Access, RateLimitsAnswer429WithHeadersAndChangeAtRunTime) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto limits = std::filesystem::temp_directory_path() / ("flint-limits-" + std::to_string(::getpid()) + ".json");
    std::ofstream(limits) << R"({"default":{"requests_per_minute":2}})";
    server::ServerConfig cfg;
    cfg.api_keys = {"sk-user"};
    cfg.admin_keys = {"sk-admin"};
    cfg.limits_file = limits.string();
    TestServer s(cfg);
    const Headers user = {{"Authorization", "Bearer sk-user"}};
    json req = {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 2}};
    HttpResult a = post_json(s.port(), "/v1/responses", req, user);
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.headers["x-ratelimit-limit-requests"], "2");
    EXPECT_EQ(a.headers["x-ratelimit-remaining-requests"], "1");
    EXPECT_FALSE(a.headers["x-ratelimit-reset-requests"].empty());
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, user).status, 200);
    HttpResult c = post_json(s.port(), "/v1/responses", req, user);
    ASSERT_EQ(c.status, 429);
    EXPECT_EQ(json::parse(c.body)["error"]["code"], "rate_limit_exceeded");
    EXPECT_FALSE(c.headers["retry-after"].empty());
    EXPECT_FALSE(c.headers["retry-after-ms"].empty());
    // Over WebSocket the same refusal is an error frame with status 429.
    {
        WsClient ws(s.port(), user);
        ws.send({{"type", "response.create"}, {"model", "stories"}, {"input", "x"}});
        json e = ws.recv();
        EXPECT_EQ(e["type"], "error");
        EXPECT_EQ(e["status"], 429);
    }
    // Only an admin key may change limits; the change applies at once.
    json raise = {{"default", {{"requests_per_minute", 1000}}}};
    EXPECT_EQ(post_json(s.port(), "/admin/limits", raise, user).status, 403);
    HttpResult set = post_json(s.port(), "/admin/limits", raise, {{"Authorization", "Bearer sk-admin"}});
    EXPECT_EQ(set.status, 200) << set.body;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // refills at 1000/min
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, user).status, 200);
    std::filesystem::remove(limits);
}

// tokens_per_minute charges what a request used (prompt + completion) once it is done: the request that
// overdraws is served, the next one waits; the headers show the token budget; other keys are not affected.
TEST(Access, TokenLimitsChargeWhatARequestUsedAndRefuseTheNext) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    server::ServerConfig cfg;
    cfg.api_keys = {"sk-small", "sk-free"};
    auto limits = std::filesystem::temp_directory_path() / ("flint-tlimits-" + std::to_string(::getpid()) + ".json");
    std::ofstream(limits) << R"({"keys":{"sk-small":{"tokens_per_minute":30}}})";
    cfg.limits_file = limits.string();
    TestServer t(cfg);
    const Headers small = {{"Authorization", "Bearer sk-small"}};
    json req = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 40}, {"temperature", 0}};
    HttpResult a = post_json(t.port(), "/v1/responses", req, small);
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.headers["x-ratelimit-limit-tokens"], "30");
    EXPECT_EQ(a.headers["x-ratelimit-remaining-tokens"], "30");
    EXPECT_FALSE(a.headers["x-ratelimit-reset-tokens"].empty());
    EXPECT_EQ(a.headers.count("x-ratelimit-limit-requests"), 0u);  // no request limit set
    ASSERT_GT(a.json_body()["usage"]["total_tokens"].get<int>(), 30);
    HttpResult b = post_json(t.port(), "/v1/responses", req, small);
    ASSERT_EQ(b.status, 429) << b.body;
    EXPECT_EQ(b.json_body()["error"]["code"], "rate_limit_exceeded");
    EXPECT_NE(b.json_body()["error"]["message"].get<std::string>().find("try again in"), std::string::npos);
    EXPECT_EQ(b.headers["x-ratelimit-remaining-tokens"], "0");
    EXPECT_FALSE(b.headers["retry-after"].empty());
    HttpResult other = post_json(t.port(), "/v1/responses", req, {{"Authorization", "Bearer sk-free"}});
    EXPECT_EQ(other.status, 200) << other.body;
    EXPECT_EQ(other.headers.count("x-ratelimit-limit-tokens"), 0u);
    std::filesystem::remove(limits);
}

// What starting a server with `cfg` throws (a test failure, and "", when it starts instead).
std::string start_error(const server::ServerConfig& cfg, TestModels& models) {
    try {
        TestServer s(cfg, models);
    } catch (const std::exception& e) {
        return e.what();
    }
    ADD_FAILURE() << "the server started";
    return "";
}

// A limits file the server cannot use stops it at start with the file's name and what is wrong, rather
// than serving without the limits its operator asked for.
TEST(Access, ABadLimitsFileIsRefusedAtStartNamingTheFile) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestModels models;
    auto limits = std::filesystem::temp_directory_path() / ("flint-badlimits-" + std::to_string(::getpid()) + ".json");
    const std::pair<const char*, const char*> cases[] = {
        {R"({"default":{"requests_per_minute":-1}})", "default.requests_per_minute must be a number >= 0"},
        {R"({"keys":[1]})", "'keys' must be an object"},
        {R"({"default":)", "not valid JSON"},
    };
    server::ServerConfig cfg;
    cfg.limits_file = limits.string();
    for (const auto& [text, why] : cases) {
        SCOPED_TRACE(text);
        std::ofstream(limits) << text;
        const std::string m = start_error(cfg, models);
        EXPECT_NE(m.find(limits.string()), std::string::npos) << m;
        EXPECT_NE(m.find(why), std::string::npos) << m;
    }
    std::filesystem::remove(limits);
    const std::string gone = start_error(cfg, models);
    EXPECT_NE(gone.find(limits.string() + ": cannot read the limits file"), std::string::npos) << gone;
}

// A JSON keys file with a mistake stops the server at start, naming the file and the entry.
TEST(Access, ABadKeysFileIsRefusedAtStartNamingTheEntry) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestModels models;
    auto keys = std::filesystem::temp_directory_path() / ("flint-badkeys-" + std::to_string(::getpid()) + ".json");
    const std::pair<const char*, const char*> cases[] = {
        {R"({"keys":[{"key":"sk-a","models":["stories",1]}]})", ": keys[0].models must be an array of model names"},
        {R"({"keys":[{"key":"sk-a"},{"key":"sk-b","admin":"yes"}]})", ": keys[1].admin must be true or false"},
        {R"({"keys":[{"key":"sk-a","models":"stories"}]})", ": keys[0].models must be an array of model names"},
        {R"({"keys":[{"key":""}]})", ": keys[0] needs a non-empty string \"key\""},
        {R"({"keys":[{"name":"sk-a"}]})", ": keys[0] needs a non-empty string \"key\""},
        {R"({"keys":{"sk-a":{}}})", ": \"keys\" must be an array"},
        {R"({"key":"sk-a"})", ": \"keys\" must be an array"},
    };
    server::ServerConfig cfg;
    cfg.keys_file = keys.string();
    for (const auto& [text, why] : cases) {
        SCOPED_TRACE(text);
        std::ofstream(keys) << text;
        const std::string m = start_error(cfg, models);
        EXPECT_NE(m.find(keys.string() + why), std::string::npos) << m;
    }
    std::filesystem::remove(keys);
}

// A keys file may also be plain text: one key per line, '#' comments, blank lines and trailing spaces or
// CRs ignored.
TEST(Access, APlainTextKeysFileHasOneKeyALine) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto keys = std::filesystem::temp_directory_path() / ("flint-keys-txt-" + std::to_string(::getpid()) + ".txt");
    std::ofstream(keys) << "# team keys\nsk-one\n\nsk-two  \r\n";
    server::ServerConfig cfg;
    cfg.keys_file = keys.string();
    TestServer s(cfg);
    json req = {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 2}};
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, {{"Authorization", "Bearer sk-one"}}).status, 200);
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, {{"Authorization", "Bearer sk-two"}}).status, 200);
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req, {{"Authorization", "Bearer # team keys"}}).status, 401);
    EXPECT_EQ(post_json(s.port(), "/v1/responses", req).status, 401);
    std::filesystem::remove(keys);
}

TEST(Metrics, ThousandClientsVanishingMidStreamLeakNothing) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestServer s;
    json req = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 200}, {"stream", true}};
    std::vector<std::thread> clients;
    std::atomic<int> next{0}, failures{0};
    std::mutex mu;
    std::string first_failure;
    for (int t = 0; t < 8; ++t)
        clients.emplace_back([&] {
            while (next++ < 1000) {
                try {
                    sse_and_disconnect(s.port(), "/v1/responses", req, 600);
                } catch (const std::exception& e) {
                    std::lock_guard lock(mu);
                    if (failures++ == 0) first_failure = e.what();
                }
            }
        });
    for (auto& t : clients) t.join();
    EXPECT_EQ(failures, 0) << first_failure;
    std::string text;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
        text = http(s.port(), "GET", "/metrics").body;
        if (metric(text, "flint_responses_in_flight") == 0 && metric(text, "flint_running_sequences{model=\"stories\"}") == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(metric(text, "flint_responses_in_flight"), 0) << text;
    EXPECT_EQ(metric(text, "flint_running_sequences{model=\"stories\"}"), 0);
    EXPECT_EQ(metric(text, "flint_queue_depth{model=\"stories\"}"), 0);
    // Every block still held belongs to the prefix cache (evictable), none to a sequence.
    EXPECT_EQ(metric(text, "flint_kv_blocks_used{model=\"stories\"}"), metric(text, "flint_kv_blocks_cached{model=\"stories\"}"));
    EXPECT_GT(metric(text, "flint_ttft_seconds_count"), 0);
    HttpResult ok = post_json(s.port(), "/v1/responses", {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 2}});
    EXPECT_EQ(ok.status, 200);
}

TEST(Metrics, PrometheusTextHasTheAdvertisedSeries) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestServer s;
    post_json(s.port(), "/v1/responses", {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 4}});
    HttpResult r = http(s.port(), "GET", "/metrics");
    ASSERT_EQ(r.status, 200);
    EXPECT_NE(r.headers["content-type"].find("text/plain"), std::string::npos);
    for (const char* name : {"flint_requests_total{endpoint=\"/v1/responses\",status=\"200\"}", "flint_prompt_tokens_total",
                             "flint_completion_tokens_total", "flint_queue_depth{model=\"stories\"}",
                             "flint_kv_blocks_used{model=\"stories\"}", "flint_ttft_seconds_bucket", "flint_inter_token_seconds_count"})
        EXPECT_NE(r.body.find(name), std::string::npos) << name;
}

// ---- the real binary -------------------------------------------------------------------------------

struct Child {
    pid_t pid = -1;
    int out = -1;
};

Child spawn_serve(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    Child c;
    c.pid = fork();
    if (c.pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        std::vector<char*> argv;
        argv.push_back(const_cast<char*>(FLINT_BINARY));
        for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(FLINT_BINARY, argv.data());
        _exit(127);
    }
    close(fds[1]);
    c.out = fds[0];
    return c;
}

int read_port(int fd) {
    std::string got;
    char ch;
    while (read(fd, &ch, 1) == 1) {
        got += ch;
        auto pos = got.find("listening on http://127.0.0.1:");
        if (ch == '\n' && pos != std::string::npos) return std::stoi(got.substr(pos + 30));
    }
    return -1;
}

TEST(Binary, ServeStartsOnAFreePortAnswersAndStopsGracefullyOnSigterm) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempStore db("flint-bin");
    Child c = spawn_serve({"serve", "--port", "0", "-m", "stories=" + shared_path("models/stories260K.gguf"), "--store",
                           db.path, "-t", "1"});
    int port = read_port(c.out);
    ASSERT_GT(port, 0);
    HttpResult r = post_json(port, "/v1/responses", {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 4}});
    EXPECT_EQ(r.status, 200) << r.body;
    kill(c.pid, SIGTERM);
    int status = 0;
    waitpid(c.pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    close(c.out);
}

// `flint serve --no-prompt-lookup` and `--no-speculation` reach the runtime: /metrics counts the drafts
// each source proposed, and the answers are the same token for token either way.
TEST(Binary, ServeSwitchesOffPromptLookupOrAllSpeculation) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    struct Case {
        std::vector<std::string> flags;
        bool lookup, prediction;
    };
    const Case cases[] = {{{}, true, true}, {{"--no-prompt-lookup"}, false, true}, {{"--no-speculation"}, false, false}};
    std::string first_text;
    for (const Case& k : cases) {
        SCOPED_TRACE(k.flags.empty() ? "defaults" : k.flags[0]);
        std::vector<std::string> args = {"serve", "--port", "0", "-m", "stories=" + shared_path("models/stories260K.gguf"),
                                         "--no-store", "-t", "1"};
        args.insert(args.end(), k.flags.begin(), k.flags.end());
        Child c = spawn_serve(args);
        int port = read_port(c.out);
        ASSERT_GT(port, 0);
        const json plain = {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 200}, {"temperature", 0}};
        HttpResult r = post_json(port, "/v1/responses", plain);
        ASSERT_EQ(r.status, 200) << r.body;
        const std::string text = json::parse(r.body)["output"][0]["content"][0]["text"];
        if (first_text.empty()) first_text = text;
        EXPECT_EQ(text, first_text);
        json predicted = plain;
        predicted["prediction"] = {{"type", "content"}, {"content", text}};
        r = post_json(port, "/v1/responses", predicted);
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(json::parse(r.body)["output"][0]["content"][0]["text"], first_text);
        const std::string m = http(port, "GET", "/metrics").body;
        const double lookup = metric(m, "flint_draft_tokens_total{model=\"stories\",source=\"prompt_lookup\"}");
        const double pred = metric(m, "flint_draft_tokens_total{model=\"stories\",source=\"prediction\"}");
        const double pred_kept = metric(m, "flint_draft_tokens_accepted_total{model=\"stories\",source=\"prediction\"}");
        if (k.lookup) EXPECT_GT(lookup, 0) << m;
        else EXPECT_EQ(lookup, 0) << m;
        if (k.prediction) EXPECT_GT(pred_kept, 150) << m;
        else EXPECT_EQ(pred, 0) << m;
        EXPECT_GT(metric(m, "flint_engine_steps_total{model=\"stories\"}"), k.lookup || k.prediction ? 0 : 398) << m;
        kill(c.pid, SIGTERM);
        int status = 0;
        waitpid(c.pid, &status, 0);
        close(c.out);
    }
}

// SIGHUP reads the --limits file again: a changed limit applies to the next request; a file broken
// meanwhile is reported and the limits in force stay, and the server keeps serving.
TEST(Binary, SighupReloadsTheLimitsFileAndKeepsTheOldLimitsWhenItIsBroken) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto limits = std::filesystem::temp_directory_path() / ("flint-hup-" + std::to_string(::getpid()) + ".json");
    std::ofstream(limits) << R"({"default":{"requests_per_minute":100}})";
    Child c = spawn_serve({"serve", "--port", "0", "-m", "stories=" + shared_path("models/stories260K.gguf"), "--no-store", "-t",
                           "1", "--limits", limits.string()});
    int port = read_port(c.out);
    ASSERT_GT(port, 0);
    const json req = {{"model", "stories"}, {"input", "Once"}, {"max_output_tokens", 1}};
    auto limit_now = [&] {
        HttpResult r = post_json(port, "/v1/responses", req);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.headers["x-ratelimit-limit-requests"];
    };
    // The signal is handled on the server's own thread: poll until the new limit shows (or give up).
    auto limit_after_hup = [&](const std::string& want) {
        kill(c.pid, SIGHUP);
        std::string got;
        for (int i = 0; i < 50 && (got = limit_now()) != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return got;
    };
    EXPECT_EQ(limit_now(), "100");
    std::ofstream(limits) << R"({"default":{"requests_per_minute":200}})";
    EXPECT_EQ(limit_after_hup("200"), "200");
    std::ofstream(limits) << R"({"default":{"requests_per_minute":)";  // cut off mid-write
    kill(c.pid, SIGHUP);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(limit_now(), "200");
    std::ofstream(limits) << R"({"default":{"requests_per_minute":300}})";  // and mended
    EXPECT_EQ(limit_after_hup("300"), "300");
    kill(c.pid, SIGTERM);
    int status = 0;
    waitpid(c.pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(c.out);
    std::filesystem::remove(limits);
}

}  // namespace
}  // namespace flint::test
