// Fill-in-the-middle on /v1/completions (`suffix`) and its flint extensions: the last lines before the
// cursor after <fim_middle> (fim_band_lines, default 8), so typing on reuses the cached suffix;
// and repo-level FIM (repo_name, path, context_files), Qwen2.5-Coder's <|repo_name|> / <|file_sep|> prompt
// (tokenizer/fim.h, checked against the reference tokenizer in tests/tokenizer/fim_test.cpp). What the
// server cannot honour is refused, naming the field.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"
#include "tokenizer/fim.h"

namespace flint::test {
namespace {

class FimHttp : public ::testing::Test {
protected:
    void SetUp() override {
        if (!shared_exists("models/tiny-qwen2-f32.gguf") || !shared_exists("models/stories260K.gguf"))
            GTEST_SKIP() << "../shared models absent";
        models_ = std::make_unique<TestModels>(shared_exists("models/flint-tiny-code.gguf"));
        RuntimeConfig rc;
        rc.threads = 1;
        rc.ctx = 512;
        rc.kv_type = DType::F32;
        models_->registry.load({"qwen", shared_path("models/tiny-qwen2-f32.gguf")}, rc, "", false);
        server_ = std::make_unique<TestServer>(server::ServerConfig{}, *models_);
    }
    void TearDown() override {
        server_.reset();
        models_.reset();
    }
    int port() const { return server_->port(); }
    std::unique_ptr<TestModels> models_;
    std::unique_ptr<TestServer> server_;
};

json repo_request() {
    return {{"model", "qwen"},
            {"prompt", "from library import "},
            {"suffix", "\n\nbook = Book()\n"},
            {"repo_name", "library-system"},
            {"path", "main.py"},
            {"context_files", {{{"path", "library.py"}, {"content", "class Book:\n    pass\n"}}}},
            {"temperature", 0},
            {"max_tokens", 6}};
}

TEST_F(FimHttp, TheServerBuildsTheRepoLevelPrompt) {
    const json req = repo_request();
    HttpResult r = post_json(port(), "/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const auto tok = models_->registry.find("qwen")->tokenizer;
    const std::vector<RepoFile> files = {{"library.py", "class Book:\n    pass\n"}};
    // The prompt "from library import " has no newline: all of it is the cursor's line, after <fim_middle>.
    const auto ids = repo_fim_tokens(*tok, "library-system", files, "main.py", "", "\n\nbook = Book()\n", "from library import ");
    EXPECT_EQ(r.json_body()["usage"]["prompt_tokens"].get<size_t>(), ids.size());
    // The same prompt given as those token ids: the same greedy text, so it was that prompt.
    json by_ids = {{"model", "qwen"}, {"prompt", ids}, {"temperature", 0}, {"max_tokens", 6}};
    HttpResult same = post_json(port(), "/v1/completions", by_ids);
    ASSERT_EQ(same.status, 200) << same.body;
    EXPECT_EQ(r.json_body()["choices"][0]["text"], same.json_body()["choices"][0]["text"]);
    // Without the repo fields it is the file-level FIM prompt, a different one.
    json plain = req;
    plain.erase("repo_name");
    plain.erase("path");
    plain.erase("context_files");
    HttpResult p = post_json(port(), "/v1/completions", plain);
    ASSERT_EQ(p.status, 200) << p.body;
    EXPECT_EQ(p.json_body()["usage"]["prompt_tokens"].get<size_t>(), fim_tokens(*tok, "", "\n\nbook = Book()\n", "from library import ").size());
}

// A completion's greedy text and token counts.
struct Answer {
    std::string text;
    int prompt_tokens = 0, cached = 0;
};
Answer answer(int port, const json& req) {
    HttpResult r = post_json(port, "/v1/completions", req);
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    const json j = r.json_body();
    Answer a;
    a.text = j["choices"][0]["text"].get<std::string>();
    a.prompt_tokens = j["usage"]["prompt_tokens"].get<int>();
    a.cached = j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
    return a;
}

// Lines "x0 = compute(0)\n" … for lines [from, to).
std::string numbered_lines(int from, int to) {
    std::string s;
    for (int i = from; i < to; ++i) s += "x" + std::to_string(i) + " = compute(" + std::to_string(i) + ")\n";
    return s;
}

TEST_F(FimHttp, TheBandOfLinesBeforeTheCursorGoesAfterFimMiddle) {
    const auto tok = models_->registry.find("qwen")->tokenizer;
    const std::string prompt = numbered_lines(0, 10) + "    return w", suffix = "\n\nprint(area(2, 3))\n";
    std::vector<std::string> texts;
    // The default band is 8 lines: lines 8-9 and the cursor's line 10 after <fim_middle>; 1: the cursor's
    // line alone; 0: plain PSM, the whole prompt after <fim_prefix>.
    for (int band : {-1, 1, 3, 0}) {
        json req = {{"model", "qwen"}, {"prompt", prompt}, {"suffix", suffix}, {"temperature", 0}, {"max_tokens", 6}};
        if (band >= 0) req["fim_band_lines"] = band;
        const Answer a = answer(port(), req);
        const CursorSplit at = split_cursor_band(prompt, band < 0 ? 8 : band);
        const auto ids = fim_tokens(*tok, at.above, suffix, at.band);
        EXPECT_EQ(a.prompt_tokens, static_cast<int>(ids.size())) << band;
        // The same prompt given as those token ids: the same greedy text, so it was that prompt.
        json by_ids = {{"model", "qwen"}, {"prompt", ids}, {"temperature", 0}, {"max_tokens", 6}};
        EXPECT_EQ(a.text, answer(port(), by_ids).text) << band;
        texts.push_back(a.text);
    }
    EXPECT_EQ(split_cursor_band(prompt, 8).above, numbered_lines(0, 8));
    std::sort(texts.begin(), texts.end());
    EXPECT_GT(std::unique(texts.begin(), texts.end()) - texts.begin(), 1) << "different prompts: the tiny model answers some differently";
}

TEST_F(FimHttp, TypingOnReusesTheCachedSuffixAcrossEnterWithinTheBand) {
    const auto tok = models_->registry.find("qwen")->tokenizer;
    std::string suffix;
    for (int i = 0; i < 6; ++i) suffix += "\nprint(y" + std::to_string(i) + ", x" + std::to_string(i) + ")";
    const int suffix_tokens = static_cast<int>(tok->encode(suffix, false, false).size());
    // Lines 0-8 written; typing line 9, then Enter and line 10: all in the band of lines 8-15.
    const std::string written = numbered_lines(0, 9);
    auto keystroke = [&](const std::string& typed, int band) {
        json req = {{"model", "qwen"}, {"prompt", written + typed}, {"suffix", suffix}, {"temperature", 0}, {"max_tokens", 2}};
        if (band >= 0) req["fim_band_lines"] = band;
        return answer(port(), req);
    };
    const int through_middle = static_cast<int>(fim_tokens(*tok, numbered_lines(0, 8), suffix).size());
    keystroke("y = x", -1);
    for (const std::string typed : {"y = x0", "y = x0\n", "y = x0\nz"}) {
        const Answer a = keystroke(typed, -1);
        EXPECT_GE(a.cached, through_middle) << "'" << typed << "': the suffix was prefilled again";
        EXPECT_LT(a.prompt_tokens - a.cached, 8) << typed;
    }
    // A band of 1 line: Enter moves the line into the prefix, before the suffix, which is prefilled again.
    keystroke("v = x0", 1);
    const Answer within = keystroke("v = x01", 1);
    EXPECT_LT(within.prompt_tokens - within.cached, 8);
    const Answer enter = keystroke("v = x01\nw", 1);
    EXPECT_GT(enter.prompt_tokens - enter.cached, suffix_tokens);
    // Plain PSM: every keystroke changes the text before the suffix.
    keystroke("u = x", 0);
    const Answer psm = keystroke("u = x0", 0);
    EXPECT_GT(psm.prompt_tokens - psm.cached, suffix_tokens);
}

TEST_F(FimHttp, TheServersDefaultBandIsItsFlagAndARequestOverridesIt) {
    server::ServerConfig cfg;
    cfg.fim_band_lines = 0;  // flint serve --fim-band-lines 0: plain PSM unless a request asks
    TestServer psm_server(cfg, *models_);
    const auto tok = models_->registry.find("qwen")->tokenizer;
    const std::string prompt = numbered_lines(0, 10) + "y = ", suffix = "\nprint(y)\n";
    json req = {{"model", "qwen"}, {"prompt", prompt}, {"suffix", suffix}, {"temperature", 0}, {"max_tokens", 4}};
    const Answer plain = answer(psm_server.port(), req);
    json by_ids = {{"model", "qwen"}, {"prompt", fim_tokens(*tok, prompt, suffix)}, {"temperature", 0}, {"max_tokens", 4}};
    EXPECT_EQ(plain.text, answer(psm_server.port(), by_ids).text);
    EXPECT_EQ(plain.prompt_tokens, static_cast<int>(fim_tokens(*tok, prompt, suffix).size()));
    req["fim_band_lines"] = 8;
    const Answer banded = answer(psm_server.port(), req);
    const CursorSplit at = split_cursor_band(prompt, 8);
    by_ids["prompt"] = fim_tokens(*tok, at.above, suffix, at.band);
    EXPECT_EQ(banded.text, answer(psm_server.port(), by_ids).text);
    EXPECT_NE(banded.text, plain.text) << "two different prompts: the tiny model answers them differently";
    // The default server (8) gives that same answer without the field.
    req.erase("fim_band_lines");
    EXPECT_EQ(answer(port(), req).text, banded.text);
}

TEST_F(FimHttp, FimBandLinesIsCheckedLikeTheOtherFields) {
    json req = {{"model", "qwen"}, {"prompt", "a = 1\nb"}, {"suffix", "\n"}, {"max_tokens", 1}};
    for (const json& bad : {json("yes"), json(1.5), json(-1), json(1 << 21)}) {
        req["fim_band_lines"] = bad;
        HttpResult r = post_json(port(), "/v1/completions", req);
        EXPECT_EQ(r.status, 400) << r.body;
        EXPECT_EQ(r.json_body()["error"]["param"], "fim_band_lines") << r.body;
    }
    req["fim_band_lines"] = 4;
    req.erase("suffix");  // it only means something for FIM
    HttpResult r = post_json(port(), "/v1/completions", req);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json_body()["error"]["param"], "fim_band_lines") << r.body;
    EXPECT_NE(r.json_body()["error"]["message"].get<std::string>().find("suffix"), std::string::npos) << r.body;
    req["suffix"] = "\n";
    EXPECT_EQ(post_json(port(), "/v1/completions", req).status, 200);
}

TEST_F(FimHttp, WhatItCannotHonourIsRefusedNamingTheField) {
    struct Case {
        const char* name;
        json edit;  // fields replaced in the request (null: removed)
        std::string param, type;
    };
    const std::vector<Case> cases = {
        {"no suffix", {{"suffix", nullptr}}, "path", "invalid_value"},
        {"path not a string", {{"path", 7}}, "path", "invalid_type"},
        {"repo_name not a string", {{"repo_name", json::array()}}, "repo_name", "invalid_type"},
        {"context_files not an array", {{"context_files", "library.py"}}, "context_files", "invalid_type"},
        {"a context file not an object", {{"context_files", {1}}}, "context_files[0]", "invalid_type"},
        {"a context file without content", {{"context_files", {{{"path", "a.py"}}}}}, "context_files[0]", "invalid_value"},
        {"a context file's path not a string", {{"context_files", {{{"path", 1}, {"content", ""}}}}}, "context_files[0].path", "invalid_type"},
        {"prompt as token ids", {{"prompt", {1, 2, 3}}}, "suffix", ""},
    };
    for (const Case& c : cases) {
        json req = repo_request();
        for (auto& [k, v] : c.edit.items()) {
            if (v.is_null()) req.erase(k);
            else req[k] = v;
        }
        HttpResult r = post_json(port(), "/v1/completions", req);
        EXPECT_EQ(r.status, 400) << c.name << ": " << r.body;
        if (r.status != 400) continue;
        EXPECT_EQ(r.json_body()["error"]["param"], c.param) << c.name << ": " << r.body;
        if (!c.type.empty()) {
            EXPECT_EQ(r.json_body()["error"]["code"], c.type) << c.name << ": " << r.body;
        }
    }
    // A FIM model without the repo tokens (flint-tiny-code has <fim_*> only).
    if (!shared_exists("models/flint-tiny-code.gguf")) GTEST_SKIP() << "flint-tiny-code.gguf absent";
    json req = repo_request();
    req["model"] = "code";
    HttpResult r = post_json(port(), "/v1/completions", req);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json_body()["error"]["param"], "path") << r.body;
    EXPECT_EQ(r.json_body()["error"]["code"], "unsupported_parameter") << r.body;
    EXPECT_NE(r.json_body()["error"]["message"].get<std::string>().find("<|file_sep|>"), std::string::npos) << r.body;
    // And the server still serves.
    req = repo_request();
    EXPECT_EQ(post_json(port(), "/v1/completions", req).status, 200);
}

}  // namespace
}  // namespace flint::test
