// write_scripted_model / `flint mkmodel --script`: whatever the prompt — plain, a chat turn, a long one,
// one ending in a token of the script — the model writes the script and then its end token, greedily and
// sampled; scripts it cannot write are refused with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <unistd.h>

#include "model/scripted_model.h"
#include "model_test_util.h"
#include "sample/sampler.h"
#include "test_paths.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace flint;

namespace {

// The models carry the default tokenizer: Qwen2.5's, from ../shared/tokenizers/qwen2 (default_tokenizer_files()).
std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("flint-script-" + std::to_string(::getpid()) + "-" + name)).string();
}

// Up to `n` tokens after `prompt`, stopping after an end-of-generation token (included).
std::vector<int32_t> generate(const std::shared_ptr<Model>& m, const Tokenizer& tok, std::vector<int32_t> prompt,
                              SamplingParams sp, int n) {
    test::Runner r(m, static_cast<int>(prompt.size()) + n + 1);
    Sampler sampler(sp, m->config.n_vocab);
    std::vector<int32_t> history = prompt, out;
    std::vector<float> logits = r.run(prompt, 0, Logits::Last);
    for (int i = 0; i < n; ++i) {
        const int32_t t = sampler.sample(logits.data(), history).token;
        out.push_back(t);
        history.push_back(t);
        if (tok.is_eog(t)) break;
        logits = r.run({t}, static_cast<int>(history.size()) - 1, Logits::Last);
    }
    return out;
}

struct Scripted {
    std::shared_ptr<Model> model;
    std::shared_ptr<Tokenizer> tok;
    ScriptedModelResult info;
};

Scripted make(const std::string& script, const std::string& name, const std::string& then = "", const std::string& marker = "") {
    const std::string path = temp_path(name);
    Scripted s;
    s.info = write_scripted_model({.script = script, .then = then, .marker = marker, .ctx = 4096}, path);
    s.model = Model::load(path);
    s.tok = Tokenizer::from_gguf(*s.model->file);
    std::filesystem::remove(path);
    return s;
}

TEST(ScriptedModel, WritesTheScriptWhateverThePrompt) {
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    const std::string script = "Hello from flint.";
    Scripted s = make(script, "hello.gguf");
    EXPECT_EQ(s.info.tokens, s.tok->encode(script, false, false));
    EXPECT_EQ(s.info.end_token, s.tok->eos());
    std::string long_prompt;
    for (int i = 0; i < 200; ++i) long_prompt += "def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + "\n";
    const std::vector<ChatMessage> turn = {{"system", "You are terse."}, {"user", "Say hello."}};
    const std::string chat = apply_chat_template(detect_chat_format(s.tok->chat_template()), turn, true);
    for (const std::string& prompt : {std::string("Once upon a time"), chat, long_prompt, std::string("x")}) {
        SCOPED_TRACE(prompt.substr(0, 40));
        const std::vector<int32_t> p = s.tok->encode(prompt, false, true);
        for (float temp : {0.0f, 1.0f, 2.0f})
            for (uint64_t seed : {1u, 2u, 3u}) {
                std::vector<int32_t> out = generate(s.model, *s.tok, p, {.temperature = temp, .seed = seed}, 32);
                ASSERT_FALSE(out.empty());
                EXPECT_EQ(out.back(), s.info.end_token) << "temperature " << temp << " seed " << seed;
                out.pop_back();
                EXPECT_EQ(s.tok->decode(out), script) << "temperature " << temp << " seed " << seed;
            }
    }
    // A prompt that ends in one of the script's tokens continues the script from there.
    std::vector<int32_t> p = s.tok->encode("Well: ", false, false);
    p.push_back(s.info.tokens[1]);
    std::vector<int32_t> out = generate(s.model, *s.tok, p, {.temperature = 0}, 32);
    out.pop_back();
    EXPECT_EQ(out, std::vector<int32_t>(s.info.tokens.begin() + 2, s.info.tokens.end()));
}

// With a second script: a tool call until a tool's output (Qwen's <tool_response>, whose "_response" token
// is the marker) is anywhere in the context, then the final answer — Codex's agent loop in two turns.
TEST(ScriptedModel, SwitchesToTheSecondScriptOnceTheMarkerIsInTheContext) {
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    // Compact JSON: its tokens are distinct, and none is the "\n" a chat prompt ends with.
    const std::string call = R"(<tool_call>{"name":"exec_command","arguments":{"cmd": "echo flint-tool-ran"}}</tool_call>)";
    const std::string answer = "Done: the command ran.";
    Scripted s = make(call, "two.gguf", answer, "_response");
    ASSERT_GE(s.info.marker, 0);
    EXPECT_EQ(s.info.tokens.front(), *s.tok->find_token("<tool_call>")) << "special-token markup is parsed";
    std::string filler;
    for (int i = 0; i < 120; ++i) filler += "line " + std::to_string(i) + " of the tool's output\n";
    auto turn = [&](const std::string& user, const std::string& tool_output) {
        std::vector<ChatMessage> msgs = {{"system", "You run commands."}, {"user", user}};
        if (!tool_output.empty()) {
            msgs.push_back({"assistant", call});
            msgs.push_back({"user", "<tool_response>\n" + tool_output + "\n</tool_response>"});
        }
        return s.tok->encode(apply_chat_template(detect_chat_format(s.tok->chat_template()), msgs, true), false, true);
    };
    const std::vector<std::pair<std::vector<int32_t>, std::string>> cases = {
        {turn("Run echo hi.", ""), call},
        {turn("Run echo hi.", "hi"), answer},
        {turn("Run echo hi.", filler), answer},              // the marker ~1,500 tokens back
        {s.tok->encode("x_response", false, false), answer}, // the marker as the last token
    };
    // Once the marker is seen, the first script's start is well below every token the scripts do not place
    // (not tied with them at ~0): a constrained decoder that may write neither script's start but may write
    // "@" — or the "{" of JSON — picks that, whatever the kernels' rounding. (It decided Codex's
    // --output-schema turn: a second tool call on one machine, the JSON answer on another.)
    const int32_t unplaced = s.tok->encode("@", false, false).at(0);
    for (const auto& script : {s.info.tokens, s.info.then_tokens}) ASSERT_EQ(std::count(script.begin(), script.end(), unplaced), 0);
    for (size_t i = 1; i < cases.size(); ++i) {
        test::Runner r(s.model, static_cast<int>(cases[i].first.size()) + 1);
        const std::vector<float> logits = r.run(cases[i].first, 0, Logits::Last);
        EXPECT_LT(logits[s.info.tokens.front()], logits[unplaced] - 16) << "case " << i;
        EXPECT_GT(logits[s.info.then_tokens.front()], logits[unplaced] + 32) << "case " << i;
    }
    for (const auto& [prompt, want] : cases)
        for (float temp : {0.0f, 1.0f, 2.0f}) {
            std::vector<int32_t> out = generate(s.model, *s.tok, prompt, {.temperature = temp, .seed = 7}, 64);
            ASSERT_EQ(out.back(), s.info.end_token) << "temperature " << temp;
            out.pop_back();
            EXPECT_EQ(s.tok->decode(out), want) << "temperature " << temp << ", prompt of " << prompt.size() << " tokens";
        }
}

TEST(ScriptedModel, LongScriptsWidenTheModel) {
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    // 70 distinct words, each one token: more one-hot places than one 64-wide head has.
    Scripted probe = make("x", "probe.gguf");
    std::string script;
    int words = 0;
    for (int32_t id = 0; id < probe.tok->n_vocab() && words < 70; ++id) {
        const std::string& p = probe.tok->piece(id);
        if (p.size() < 5 || p.size() > 9 || p[0] != ' ') continue;
        if (!std::all_of(p.begin() + 1, p.end(), [](char c) { return c >= 'a' && c <= 'z'; })) continue;
        script += p;
        ++words;
    }
    Scripted s = make(script, "long.gguf");
    ASSERT_GT(s.info.tokens.size(), 64u);
    EXPECT_EQ(s.info.n_embd, 128u);
    std::vector<int32_t> out = generate(s.model, *s.tok, s.tok->encode("Go.", false, false), {.temperature = 0}, 300);
    ASSERT_EQ(out.back(), s.info.end_token);
    out.pop_back();
    EXPECT_EQ(s.tok->decode(out), script);
}

TEST(ScriptedModel, RefusesScriptsItCannotWrite) {
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    const std::string path = temp_path("bad.gguf");
    auto message = [&](const std::string& script, const std::string& then = "", const std::string& marker = "") {
        try {
            write_scripted_model({.script = script, .then = then, .marker = marker}, path);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_NE(message("").find("the script is empty"), std::string::npos);
    const std::string repeated = message("go go go");
    EXPECT_NE(repeated.find("the token \" go\" occurs twice in the scripts (at place 2 and 3)"), std::string::npos) << repeated;
    const std::string shared = message("Hello there.", "Hello again.", "_response");
    EXPECT_NE(shared.find("\"Hello\" occurs twice"), std::string::npos) << shared;
    EXPECT_NE(message("Hi.", "Bye.", "<tool_response>").find("must be one"), std::string::npos);
    EXPECT_NE(message("Hi.", "Bye.", "").find("needs both"), std::string::npos);
    EXPECT_NE(message("x_response", "Bye.", "_response").find("contains the marker"), std::string::npos);
    EXPECT_NE(message("Hi.<|im_end|>").find("contains the end-of-sequence token"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(path)) << "nothing written on a refused script";
}

}  // namespace
