// Function calling over HTTP, with a scripted model (`flint mkmodel --script`) that says a few words and then
// makes a Qwen-style tool call: both APIs stream the words as they are generated — token by token, before
// the call is complete — and then deliver the call as a structured item (Responses: a function_call output
// item; Chat Completions: delta.tool_calls and finish_reason "tool_calls").
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "harness.h"
#include "model/scripted_model.h"

namespace flint::test {
namespace {

const std::string kWords = "Let me run it. ";
const std::string kCall = R"(<tool_call>{"name":"exec_command","arguments":{"cmd": "echo flint-tool-ran"}}</tool_call>)";
const json kTools = json::array({{{"type", "function"},
                                  {"name", "exec_command"},
                                  {"description", "Runs a shell command."},
                                  {"parameters", {{"type", "object"}, {"properties", {{"cmd", {{"type", "string"}}}}}}}}});

class ToolsHttp : public ::testing::Test {
protected:
    void SetUp() override {
        FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
        FLINT_REQUIRE_SHARED("models/stories260K.gguf");
        path_ = (std::filesystem::temp_directory_path() / ("flint-tools-" + std::to_string(::getpid()) + ".gguf")).string();
        write_scripted_model({.script = kWords + kCall, .ctx = 4096}, path_);  // Qwen2.5's tokenizer, the default
        server_ = std::make_unique<TestServer>();
        ASSERT_EQ(post_json(server_->port(), "/v1/models", {{"path", path_}, {"id", "agent"}}).status, 201);
    }
    void TearDown() override {
        server_.reset();
        if (!path_.empty()) std::filesystem::remove(path_);
    }
    int port() const { return server_->port(); }
    std::string path_;
    std::unique_ptr<TestServer> server_;
};

TEST_F(ToolsHttp, ChatCompletionsStreamsTheWordsBeforeTheCall) {
    json req = {{"model", "agent"}, {"messages", {{{"role", "user"}, {"content", "Run echo."}}}}, {"tools", json::array()},
                {"stream", true}};
    for (const json& t : kTools) req["tools"].push_back({{"type", "function"}, {"function", {{"name", t["name"]}, {"parameters", t["parameters"]}}}});
    SseResult r = sse(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    std::string words;
    int word_chunks = 0;
    json calls;
    std::string finish;
    for (const SseEvent& e : r.events) {
        if (e.data == "[DONE]") break;
        const json c = json::parse(e.data);
        if (c["choices"].empty()) continue;
        const json& d = c["choices"][0]["delta"];
        if (d.contains("tool_calls")) {
            EXPECT_TRUE(calls.is_null()) << "one tool_calls chunk";
            calls = d["tool_calls"];
        } else if (!d.value("content", "").empty()) {
            EXPECT_TRUE(calls.is_null()) << "no text after the call\n" << e.data;
            words += d["content"].get<std::string>();
            ++word_chunks;
        }
        if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(words, kWords);
    EXPECT_GE(word_chunks, 4) << "the words streamed one token at a time, not at the end";
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0]["type"], "function");
    EXPECT_EQ(calls[0]["function"]["name"], "exec_command");
    EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"cmd", "echo flint-tool-ran"}}));
    EXPECT_EQ(finish, "tool_calls");

    // Not streamed: the same, in one message.
    req["stream"] = false;
    HttpResult j = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(j.status, 200) << j.body;
    const json msg = j.json_body()["choices"][0]["message"];
    EXPECT_EQ(msg["content"], kWords);
    ASSERT_EQ(msg["tool_calls"].size(), 1u);
    EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "exec_command");
}

TEST_F(ToolsHttp, ResponsesStreamTheWordsBeforeTheFunctionCallItem) {
    json req = {{"model", "agent"}, {"input", "Run echo."}, {"tools", kTools}, {"stream", true}};
    SseResult r = sse(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    std::string words;
    int deltas = 0;
    bool call_seen = false;
    json final_output;
    for (const SseEvent& e : r.events) {
        const json j = json::parse(e.data);
        if (e.event == "response.output_text.delta") {
            EXPECT_FALSE(call_seen);
            words += j["delta"].get<std::string>();
            ++deltas;
        }
        if (e.event == "response.output_item.added" && j["item"]["type"] == "function_call") call_seen = true;
        if (e.event == "response.completed") final_output = j["response"]["output"];
    }
    EXPECT_EQ(words, kWords);
    EXPECT_GE(deltas, 4);
    EXPECT_TRUE(call_seen);
    ASSERT_EQ(final_output.size(), 2u);
    EXPECT_EQ(final_output[0]["type"], "message");
    EXPECT_EQ(final_output[1]["type"], "function_call");
    EXPECT_EQ(final_output[1]["name"], "exec_command");
}

// Optional fields of a tool sent as null (as some clients serialise them), and a tool of another type
// (Codex sends web_search): rendered into the prompt and called as usual.
TEST_F(ToolsHttp, NullOptionalToolFieldsAndOtherToolTypesAreFine) {
    const json tools = {{{"type", "web_search"}},
                        {{"type", "function"}, {"name", "exec_command"}, {"description", nullptr}, {"parameters", nullptr}, {"strict", nullptr}}};
    HttpResult r = post_json(port(), "/v1/responses", {{"model", "agent"}, {"input", "Run echo."}, {"tools", tools}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json out = r.json_body()["output"];
    EXPECT_EQ(out.back()["type"], "function_call") << out.dump();
    json chat_tools = json::array({{{"type", "function"}, {"function", {{"name", "exec_command"}, {"description", nullptr}}}}});
    HttpResult c = post_json(port(), "/v1/chat/completions",
                             {{"model", "agent"}, {"messages", {{{"role", "user"}, {"content", "Run echo."}}}}, {"tools", chat_tools}});
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(c.json_body()["choices"][0]["finish_reason"], "tool_calls") << c.body;
}

// tool_choice "none": the model still sees the tools but cannot start a call (<tool_call> is banned), so
// the answer has no call and no call markup — where this model would otherwise call.
TEST_F(ToolsHttp, ToolChoiceNoneKeepsTheAnswerFreeOfCalls) {
    json req = {{"model", "agent"}, {"input", "Run echo."}, {"tools", kTools}, {"max_output_tokens", 64}, {"temperature", 0}};
    HttpResult with_call = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(with_call.status, 200) << with_call.body;
    EXPECT_EQ(with_call.json_body()["output"].back()["type"], "function_call");
    req["tool_choice"] = "none";
    HttpResult r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const json out = r.json_body()["output"];
    ASSERT_EQ(out.size(), 1u) << out.dump();
    EXPECT_EQ(out[0]["type"], "message");
    const std::string text = out[0]["content"][0]["text"];
    EXPECT_EQ(text.substr(0, kWords.size()), kWords);
    EXPECT_EQ(text.find("tool_call"), std::string::npos) << text;
}

// tool_choice: a named function or "required" makes the server write the start of the call for the model
// (`<tool_call>\n{"name": "` and, for a named function, the name and `"arguments":`), so the answer is a
// call. Two scripted models that only know the rest: "args" writes `{"cmd":"echo hi"}}` + `</tool_call>`,
// "pick" writes `exec_command","arguments":{}}` + `</tool_call>`; left to "auto", their text is no call.
class ToolChoiceHttp : public ::testing::Test {
protected:
    void SetUp() override {
        FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
        FLINT_REQUIRE_SHARED("models/stories260K.gguf");
        server_ = std::make_unique<TestServer>();
        const std::string base = (std::filesystem::temp_directory_path() / ("flint-choice-" + std::to_string(::getpid()))).string();
        paths_ = {base + "-args.gguf", base + "-pick.gguf", base + "-caller.gguf"};
        write_scripted_model({.script = "{\"cmd\":\"echo hi\"}}\n</tool_call>", .ctx = 4096}, paths_[0]);
        write_scripted_model({.script = "exec_command\",\"arguments\":{}}\n</tool_call>", .ctx = 4096}, paths_[1]);
        write_scripted_model({.script = kCall, .ctx = 4096}, paths_[2]);  // a call, first thing
        ASSERT_EQ(post_json(port(), "/v1/models", {{"path", paths_[0]}, {"id", "args"}}).status, 201);
        ASSERT_EQ(post_json(port(), "/v1/models", {{"path", paths_[1]}, {"id", "pick"}}).status, 201);
        ASSERT_EQ(post_json(port(), "/v1/models", {{"path", paths_[2]}, {"id", "caller"}}).status, 201);
    }
    void TearDown() override {
        server_.reset();
        for (const std::string& p : paths_) std::filesystem::remove(p);
    }
    int port() const { return server_->port(); }
    static json chat_tools() {
        json t = json::array();
        for (const json& f : kTools) t.push_back({{"type", "function"}, {"function", {{"name", f["name"]}, {"parameters", f["parameters"]}}}});
        return t;
    }
    std::vector<std::string> paths_;
    std::unique_ptr<TestServer> server_;
};

TEST_F(ToolChoiceHttp, ANamedFunctionOrRequiredMakesTheAnswerACall) {
    json req = {{"model", "args"}, {"input", "Say hi."}, {"tools", kTools}, {"tool_choice", {{"type", "function"}, {"name", "exec_command"}}}};
    HttpResult r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    json out = r.json_body()["output"];
    ASSERT_EQ(out.size(), 1u) << out.dump();
    EXPECT_EQ(out[0]["type"], "function_call");
    EXPECT_EQ(out[0]["name"], "exec_command");
    EXPECT_EQ(json::parse(out[0]["arguments"].get<std::string>()), json({{"cmd", "echo hi"}}));

    // Streamed: the call arrives as a function_call item, no text before it.
    req["stream"] = true;
    SseResult s = sse(port(), "/v1/responses", req);
    ASSERT_EQ(s.status, 200);
    std::string name;
    for (const SseEvent& e : s.events) {
        EXPECT_NE(e.event, "response.output_text.delta") << e.data;
        if (e.event == "response.output_item.done") name = json::parse(e.data)["item"].value("name", "");
    }
    EXPECT_EQ(name, "exec_command");

    // Chat Completions' form of the same choice.
    json chat = {{"model", "args"}, {"messages", {{{"role", "user"}, {"content", "Say hi."}}}}, {"tools", chat_tools()},
                 {"tool_choice", {{"type", "function"}, {"function", {{"name", "exec_command"}}}}}};
    HttpResult c = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(c.status, 200) << c.body;
    const json choice = c.json_body()["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "exec_command");
    EXPECT_EQ(json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()), json({{"cmd", "echo hi"}}));

    // "required": the model picks the function (this one writes its name).
    req = {{"model", "pick"}, {"input", "Do something."}, {"tools", kTools}, {"tool_choice", "required"}};
    r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    out = r.json_body()["output"];
    ASSERT_EQ(out.size(), 1u) << out.dump();
    EXPECT_EQ(out[0]["name"], "exec_command");
    EXPECT_EQ(json::parse(out[0]["arguments"].get<std::string>()), json::object());

    // With json_object too, the forced call is still the answer (the format constrains content, and there is none).
    req["text"] = {{"format", {{"type", "json_object"}}}};
    r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json_body()["output"][0]["type"], "function_call") << r.body;
    req.erase("text");

    // Left to "auto", the same model's answer is just text: the forcing made the call.
    req["model"] = "args";
    req["tool_choice"] = "auto";
    r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json_body()["output"][0]["type"], "message");
}

// A call's JSON is held to the tools' schema: tiny-qwen2 (random weights) forced to call writes a
// function_call whose arguments fit the tool's parameters, on both APIs (unconstrained, its "arguments"
// were never JSON). No strings in them: this model rarely closes one (a call cut off by max_output_tokens
// would not count). With parallel_tool_calls false, the same call ends the answer: what the model goes on
// to write after it (here, more calls and text) is not generated.
TEST_F(ToolChoiceHttp, ARandomModelsForcedCallFitsTheToolsParameters) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    ASSERT_EQ(post_json(port(), "/v1/models", {{"path", shared_path("models/tiny-qwen2-f32.gguf")}, {"id", "random"}}).status, 201);
    const json params = {{"type", "object"},
                         {"properties", {{"days", {{"type", "integer"}}}, {"hot", {{"type", "boolean"}}}}},
                         {"required", {"days", "hot"}},
                         {"additionalProperties", false}};
    auto fits = [](const std::string& arguments) {
        const json a = json::parse(arguments);  // throws (fails) if not JSON
        EXPECT_EQ(a.size(), 2u) << arguments;
        EXPECT_TRUE(a["days"].is_number_integer() && a["hot"].is_boolean()) << arguments;
    };
    const int seed = 1;  // (one seed: constrained sampling on random weights is slow under TSan)
    const json responses = {{"model", "random"}, {"input", "Weather in Oslo?"}, {"max_output_tokens", 200}, {"seed", seed},
                            {"tools", {{{"type", "function"}, {"name", "get_weather"}, {"parameters", params}}}},
                            {"tool_choice", "required"}};
    const json chat = {{"model", "random"}, {"messages", {{{"role", "user"}, {"content", "Weather in Oslo?"}}}},
                       {"max_tokens", 200}, {"seed", seed},
                       {"tools", {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", params}}}}}},
                       {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}};
    struct Answer {
        json calls = json::array();  // the arguments of each call, in order
        int tokens = 0;
        std::string end;             // Responses: status; Chat Completions: finish_reason
    };
    auto respond = [&](bool parallel) {
        json req = responses;
        req["parallel_tool_calls"] = parallel;
        HttpResult r = post_json(port(), "/v1/responses", req);
        EXPECT_EQ(r.status, 200) << r.body;
        const json body = r.json_body();  // (a range-for over a temporary's member would outlive it)
        Answer a;
        for (const json& item : body["output"]) {
            if (item["type"] != "function_call") continue;
            EXPECT_EQ(item["name"], "get_weather");
            fits(item["arguments"].get<std::string>());
            a.calls.push_back(item["arguments"]);
        }
        a.tokens = body["usage"]["output_tokens"];
        a.end = body["status"];
        return a;
    };
    auto complete = [&](bool parallel) {
        json req = chat;
        req["parallel_tool_calls"] = parallel;
        HttpResult c = post_json(port(), "/v1/chat/completions", req);
        EXPECT_EQ(c.status, 200) << c.body;
        const json reply = c.json_body();
        Answer a;
        for (const json& call : reply["choices"][0]["message"].value("tool_calls", json::array())) {
            EXPECT_EQ(call["function"]["name"], "get_weather");
            fits(call["function"]["arguments"].get<std::string>());
            a.calls.push_back(call["function"]["arguments"]);
        }
        a.tokens = reply["usage"]["completion_tokens"];
        a.end = reply["choices"][0]["finish_reason"];
        return a;
    };
    for (bool on_chat : {false, true}) {
        SCOPED_TRACE(on_chat ? "chat completions" : "responses");
        const Answer all = on_chat ? complete(true) : respond(true);
        ASSERT_FALSE(all.calls.empty()) << "no forced call was whole within 200 tokens";
        const Answer one = on_chat ? complete(false) : respond(false);
        ASSERT_EQ(one.calls.size(), 1u);
        EXPECT_EQ(one.calls[0], all.calls[0]) << "the same draws, up to the end of the first call";
        EXPECT_EQ(one.end, on_chat ? "tool_calls" : "completed");
        EXPECT_LT(one.tokens, all.tokens) << "generation ended at the first call's closing tag";
        EXPECT_EQ(all.tokens, 200) << "with parallel calls, this model writes on to the token limit";
    }
}

// tool_choice allowed_tools: every tool stays in the prompt (its cached prefix unchanged), and the call may
// name only the allowed functions. tiny-qwen2 (random weights) forced to call by mode "required": the
// prompt is the same whichever function is allowed, so only the constraint can make the two calls differ.
TEST_F(ToolChoiceHttp, AllowedToolsNarrowTheCallToTheFunctionsItNames) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    ASSERT_EQ(post_json(port(), "/v1/models", {{"path", shared_path("models/tiny-qwen2-f32.gguf")}, {"id", "random"}}).status, 201);
    auto params = [](const char* key) {
        return json{{"type", "object"}, {"properties", {{key, {{"type", "integer"}}}}}, {"required", {key}}, {"additionalProperties", false}};
    };
    const json tools = {{{"type", "function"}, {"name", "get_weather"}, {"parameters", params("days")}},
                        {{"type", "function"}, {"name", "get_time"}, {"parameters", params("zone")}}};
    int prompt_tokens = -1;
    for (const char* allowed : {"get_weather", "get_time"}) {
        SCOPED_TRACE(allowed);
        const json choice = {{"type", "allowed_tools"}, {"mode", "required"}, {"tools", {{{"type", "function"}, {"name", allowed}}}}};
        HttpResult r = post_json(port(), "/v1/responses",
                                 {{"model", "random"}, {"input", "Weather in Oslo?"}, {"max_output_tokens", 120}, {"seed", 1}, {"tools", tools},
                                  {"tool_choice", choice}, {"parallel_tool_calls", false}});
        ASSERT_EQ(r.status, 200) << r.body;
        const json body = r.json_body();
        ASSERT_EQ(body["output"].size(), 1u) << body["output"].dump();
        EXPECT_EQ(body["output"][0]["type"], "function_call");
        EXPECT_EQ(body["output"][0]["name"], allowed);
        EXPECT_EQ(json::parse(body["output"][0]["arguments"].get<std::string>()).size(), 1u) << body["output"][0]["arguments"];
        EXPECT_EQ(body["tool_choice"], choice) << "echoed as given";
        if (prompt_tokens >= 0) {
            EXPECT_EQ(body["usage"]["input_tokens"], prompt_tokens) << "the same prompt";
        }
        prompt_tokens = body["usage"]["input_tokens"];
    }
    // Chat's shape (under "allowed_tools"); the "pick" model writes exec_command's name itself.
    const json chat_choice = {{"type", "allowed_tools"},
                              {"allowed_tools", {{"mode", "required"}, {"tools", {{{"type", "function"}, {"function", {{"name", "exec_command"}}}}}}}}};
    HttpResult c = post_json(port(), "/v1/chat/completions",
                             {{"model", "pick"}, {"messages", {{{"role", "user"}, {"content", "Do something."}}}}, {"tools", chat_tools()},
                              {"tool_choice", chat_choice}});
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(c.json_body()["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "exec_command") << c.body;
    // mode "auto" naming no function (only a built-in tool): no call, as with "none" — where "caller" would call.
    const json none_allowed = {{"type", "allowed_tools"}, {"mode", "auto"}, {"tools", {{{"type", "web_search"}}}}};
    HttpResult text = post_json(port(), "/v1/responses",
                                {{"model", "caller"}, {"input", "Run echo."}, {"tools", kTools}, {"tool_choice", none_allowed}, {"max_output_tokens", 32}});
    ASSERT_EQ(text.status, 200) << text.body;
    EXPECT_EQ(text.json_body()["output"][0]["type"], "message") << text.body;
    HttpResult calls = post_json(port(), "/v1/responses",
                                 {{"model", "caller"}, {"input", "Run echo."}, {"tools", kTools},
                                  {"tool_choice", {{"type", "allowed_tools"}, {"mode", "auto"}, {"tools", {{{"type", "function"}, {"name", "exec_command"}}}}}}});
    ASSERT_EQ(calls.status, 200) << calls.body;
    EXPECT_EQ(calls.json_body()["output"].back()["type"], "function_call") << calls.body;
    // Mistakes name the field.
    const std::pair<json, const char*> bad[] = {
        {{{"type", "allowed_tools"}, {"mode", "sometimes"}, {"tools", json::array()}}, "tool_choice.mode"},
        {{{"type", "allowed_tools"}, {"tools", json::array()}}, "tool_choice.mode"},
        {{{"type", "allowed_tools"}, {"mode", "auto"}}, "tool_choice.tools"},
        {{{"type", "allowed_tools"}, {"mode", "auto"}, {"tools", {{{"type", "function"}, {"name", "nope"}}}}}, "tool_choice.tools[0]"},
        {{{"type", "allowed_tools"}, {"mode", "auto"}, {"tools", {5}}}, "tool_choice.tools[0]"},
        {{{"type", "allowed_tools"}, {"mode", "required"}, {"tools", {{{"type", "web_search"}}}}}, "tool_choice"},
        {{{"type", "allowed_tools"}, {"allowed_tools", {{"mode", "auto"}, {"tools", {{{"type", "function"}, {"function", {{"name", "nope"}}}}}}}}},
         "tool_choice.allowed_tools.tools[0]"},
    };
    for (const auto& [choice, param] : bad) {
        HttpResult e = post_json(port(), "/v1/responses", {{"model", "caller"}, {"input", "x"}, {"tools", kTools}, {"tool_choice", choice}});
        EXPECT_EQ(e.status, 400) << choice.dump() << " " << e.body;
        EXPECT_EQ(e.json_body()["error"]["param"], param) << e.body;
    }
}

// json_object on both APIs: the "args" model's own answer ({"cmd":"echo hi"}} and a closing tag) is not
// JSON; constrained, it is one complete JSON object, and the answer ends there.
TEST_F(ToolChoiceHttp, JsonObjectFormatMakesTheAnswerOneJsonObject) {
    json chat = {{"model", "args"}, {"messages", {{{"role", "user"}, {"content", "JSON please."}}}}, {"max_tokens", 64}, {"temperature", 0}};
    const std::string free_text = post_json(port(), "/v1/chat/completions", chat).json_body()["choices"][0]["message"]["content"];
    EXPECT_FALSE(json::accept(free_text)) << free_text;
    chat["response_format"] = {{"type", "json_object"}};
    HttpResult c = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(c.status, 200) << c.body;
    const json choice = c.json_body()["choices"][0];
    const std::string constrained = choice["message"]["content"];
    ASSERT_TRUE(json::accept(constrained)) << constrained;
    EXPECT_TRUE(json::parse(constrained).is_object());
    EXPECT_EQ(choice["finish_reason"], "stop");

    json resp = {{"model", "args"}, {"input", "JSON please."}, {"max_output_tokens", 64}, {"temperature", 0},
                 {"text", {{"format", {{"type", "json_object"}}}}}};
    HttpResult r = post_json(port(), "/v1/responses", resp);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json_body()["output"][0]["content"][0]["text"], constrained) << "the same constrained draw on both APIs";
    EXPECT_EQ(r.json_body()["text"]["format"]["type"], "json_object") << "echoed";
}

// json_schema on both APIs. The "args" model's own answer starts {"cmd":"echo hi"}: with a schema of one
// string "cmd" it is kept up to where the object closes; with a schema it knows nothing of (an integer, a
// boolean and an enum, all required, nothing else allowed) the answer still fits it. Streamed as not.
TEST_F(ToolChoiceHttp, JsonSchemaFormatMakesTheAnswerFitTheSchema) {
    const json cmd = {{"type", "object"}, {"properties", {{"cmd", {{"type", "string"}}}}}, {"required", {"cmd"}}, {"additionalProperties", false}};
    json chat = {{"model", "args"}, {"messages", {{{"role", "user"}, {"content", "JSON please."}}}}, {"max_tokens", 64}, {"temperature", 0},
                 {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "command"}, {"strict", true}, {"schema", cmd}}}}}};
    HttpResult c = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(c.status, 200) << c.body;
    const json choice = c.json_body()["choices"][0];
    const std::string text = choice["message"]["content"];
    ASSERT_TRUE(json::accept(text)) << text;
    EXPECT_TRUE(json::parse(text)["cmd"].is_string()) << text;
    EXPECT_EQ(json::parse(text).size(), 1u) << text;
    EXPECT_TRUE(text.starts_with("{\"cmd\":\"echo hi")) << text;
    EXPECT_EQ(choice["finish_reason"], "stop");

    const json other = json::parse(R"({"type": "object", "additionalProperties": false, "required": ["answer", "ok", "why"],
        "properties": {"answer": {"type": "integer"}, "ok": {"type": "boolean"}, "why": {"enum": ["x", "yy"]}}})");
    json resp = {{"model", "args"}, {"input", "JSON please."}, {"max_output_tokens", 64}, {"temperature", 0},
                 {"text", {{"format", {{"type", "json_schema"}, {"name", "other"}, {"schema", other}}}}}};
    HttpResult r = post_json(port(), "/v1/responses", resp);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json_body()["status"], "completed") << r.body;
    const std::string answer = r.json_body()["output"][0]["content"][0]["text"];
    ASSERT_TRUE(json::accept(answer)) << answer;
    const json obj = json::parse(answer);
    EXPECT_EQ(obj.size(), 3u) << answer;
    EXPECT_TRUE(obj["answer"].is_number_integer()) << answer;
    EXPECT_TRUE(obj["ok"].is_boolean()) << answer;
    EXPECT_TRUE(obj["why"] == "x" || obj["why"] == "yy") << answer;
    EXPECT_EQ(r.json_body()["text"]["format"]["name"], "other") << "echoed";

    resp["stream"] = true;
    SseResult s = sse(port(), "/v1/responses", resp);
    ASSERT_EQ(s.status, 200);
    std::string streamed;
    for (const SseEvent& e : s.events)
        if (e.event == "response.output_text.delta") streamed += json::parse(e.data)["delta"].get<std::string>();
    EXPECT_EQ(streamed, answer);
}

// A JSON format with tools the model may call: the answer is JSON text or a call (as an agent loop with an
// output schema needs: Codex's --output-schema sends the format on every request of the turn). The
// "caller" model answers with a call straight away; without tools, or with tool_choice "none", its answer
// is JSON instead.
TEST_F(ToolChoiceHttp, WithToolsAJsonFormattedAnswerMayBeACall) {
    const json schema = {{"type", "object"}, {"properties", {{"cmd", {{"type", "string"}}}}}, {"required", {"cmd"}}, {"additionalProperties", false}};
    json req = {{"model", "caller"}, {"input", "Run echo."}, {"tools", kTools}, {"max_output_tokens", 48}, {"temperature", 0},
                {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", schema}}}}}};
    HttpResult r = post_json(port(), "/v1/responses", req);
    ASSERT_EQ(r.status, 200) << r.body;
    json out = r.json_body()["output"];
    ASSERT_EQ(out.size(), 1u) << out.dump();
    EXPECT_EQ(out[0]["type"], "function_call") << out.dump();
    EXPECT_EQ(json::parse(out[0]["arguments"].get<std::string>()), json({{"cmd", "echo flint-tool-ran"}}));

    for (const char* variant : {"no tools", "tool_choice none"}) {
        json q = req;
        if (std::string(variant) == "no tools") q.erase("tools");
        else q["tool_choice"] = "none";
        r = post_json(port(), "/v1/responses", q);
        ASSERT_EQ(r.status, 200) << r.body;
        out = r.json_body()["output"];
        ASSERT_EQ(out[0]["type"], "message") << variant << ": " << out.dump();
        // Out of its script this model rambles inside the string (it may not close it in 48 tokens): what
        // matters is that the answer is the constrained JSON, not a call.
        const std::string text = out[0]["content"][0]["text"];
        EXPECT_TRUE(text.starts_with("{\"cmd\":")) << variant << ": " << text;
        EXPECT_EQ(text.find("tool_call"), std::string::npos) << variant << ": " << text;
    }

    json chat = {{"model", "caller"}, {"messages", {{{"role", "user"}, {"content", "Run echo."}}}}, {"tools", chat_tools()},
                 {"max_tokens", 48}, {"temperature", 0}, {"response_format", {{"type", "json_object"}}}};
    HttpResult c = post_json(port(), "/v1/chat/completions", chat);
    ASSERT_EQ(c.status, 200) << c.body;
    const json choice = c.json_body()["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << c.body;
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << c.body;
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "exec_command");
}

// The deprecated function-calling form (`functions`, `function_call`, role "function", an assistant message's
// `function_call`): read as tools and tool_choice, answered in its own shape — the call as the message's
// `function_call` and finish_reason "function_call" — streamed and not.
TEST_F(ToolChoiceHttp, DeprecatedFunctionsAreAnsweredInTheirOwnShape) {
    json functions = json::array();
    for (const json& t : chat_tools()) functions.push_back(t["function"]);
    json req = {{"model", "caller"}, {"messages", {{{"role", "user"}, {"content", "Run echo."}}}}, {"functions", functions}};
    HttpResult r = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    json choice = r.json_body()["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "function_call") << r.body;
    EXPECT_FALSE(choice["message"].contains("tool_calls")) << r.body;
    EXPECT_EQ(choice["message"]["function_call"]["name"], "exec_command");
    EXPECT_EQ(json::parse(choice["message"]["function_call"]["arguments"].get<std::string>()), json({{"cmd", "echo flint-tool-ran"}}));

    req["stream"] = true;
    SseResult s = sse(port(), "/v1/chat/completions", req);
    ASSERT_EQ(s.status, 200) << s.body;
    json call;
    std::string finish;
    for (const SseEvent& e : s.events) {
        if (e.data == "[DONE]") break;
        const json c = json::parse(e.data);
        const json& d = c["choices"][0]["delta"];
        EXPECT_FALSE(d.contains("tool_calls")) << e.data;
        if (d.contains("function_call")) call = d["function_call"];
        if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(call["name"], "exec_command") << s.body;
    EXPECT_EQ(finish, "function_call");

    // function_call forces a named function ("args" writes only the arguments) or, "none", rules calls out.
    req = {{"model", "args"}, {"messages", {{{"role", "user"}, {"content", "Say hi."}}}}, {"functions", functions},
           {"function_call", {{"name", "exec_command"}}}};
    r = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.json_body()["choices"][0]["message"]["function_call"]["arguments"].get<std::string>()),
              json({{"cmd", "echo hi"}}));
    req["model"] = "caller";  // a call is its first token: banned, it says something else until max_tokens
    req["function_call"] = "none";
    req["max_tokens"] = 8;
    r = post_json(port(), "/v1/chat/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json_body()["choices"][0]["finish_reason"], "length") << r.body;
    EXPECT_FALSE(r.json_body()["choices"][0]["message"].contains("function_call"));

    // A conversation in the old shape (the assistant's function_call, the result as role "function") is read.
    req = {{"model", "caller"},
           {"functions", functions},
           {"messages",
            {{{"role", "user"}, {"content", "Run echo."}},
             {{"role", "assistant"}, {"content", nullptr}, {"function_call", {{"name", "exec_command"}, {"arguments", "{\"cmd\":\"echo\"}"}}}},
             {{"role", "function"}, {"name", "exec_command"}, {"content", "flint-tool-ran"}}}}};
    r = post_json(port(), "/v1/chat/completions", req);
    EXPECT_EQ(r.status, 200) << r.body;

    // Mixed or malformed: 400s naming the parameter.
    const std::vector<std::pair<json, std::string>> bad = {
        {{{"functions", functions}, {"tools", chat_tools()}}, "functions"},
        {{{"functions", functions}, {"function_call", "auto"}, {"tool_choice", "auto"}}, "function_call"},
        {{{"function_call", "auto"}}, "function_call"},
        {{{"functions", "exec_command"}}, "functions"},
        {{{"functions", json::array()}}, "functions"},
        {{{"functions", {{{"parameters", json::object()}}}}}, "functions[0].name"},
        {{{"functions", functions}, {"function_call", {{"name", "nope"}}}}, "function_call"},
        {{{"functions", functions}, {"function_call", "required"}}, "function_call"}};
    for (const auto& [extra, param] : bad) {
        json b = {{"model", "caller"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}};
        b.update(extra);
        HttpResult e = post_json(port(), "/v1/chat/completions", b);
        EXPECT_EQ(e.status, 400) << extra.dump() << " " << e.body;
        EXPECT_EQ(e.json_body()["error"]["param"], param) << e.body;
    }
}

TEST_F(ToolChoiceHttp, AFunctionNotAmongTheToolsOrAnUnknownFormIs400) {
    const json bad[] = {json{{"type", "function"}, {"name", "nope"}}, json("sometimes"), json{{"type", "file_search"}}};
    for (const json& tc : bad) {
        HttpResult r = post_json(port(), "/v1/responses", {{"model", "args"}, {"input", "x"}, {"tools", kTools}, {"tool_choice", tc}});
        EXPECT_EQ(r.status, 400) << tc.dump() << " " << r.body;
        EXPECT_EQ(r.json_body()["error"]["param"], "tool_choice") << r.body;
        HttpResult c = post_json(port(), "/v1/chat/completions",
                                 {{"model", "args"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", chat_tools()}, {"tool_choice", tc}});
        EXPECT_EQ(c.status, 400) << tc.dump() << " " << c.body;
    }
    HttpResult none = post_json(port(), "/v1/responses", {{"model", "args"}, {"input", "x"}, {"tool_choice", "required"}});
    EXPECT_EQ(none.status, 400) << none.body;
    EXPECT_EQ(none.json_body()["error"]["param"], "tool_choice");
}

}  // namespace
}  // namespace flint::test
