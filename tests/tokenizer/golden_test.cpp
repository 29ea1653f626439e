// Reference tokenizations from ../shared/golden/: the token files the logits goldens were computed from,
// and the Qwen2.5 tokenizer cases (HF outputs verified externally, and cases derived by a reference
// tokenizer that reproduces every verified case).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer_test_util.h"

using namespace flint;

namespace {

// golden/<name>.prompt.txt is the exact prompt, trailing newline included where the file has one;
// golden/<name>.tokens is one id per line.
void expect_golden_tokens(const std::string& model, const std::string& name, bool add_bos, bool parse_special) {
    FLINT_REQUIRE_SHARED(model);
    FLINT_REQUIRE_SHARED("golden/" + name + ".tokens");
    auto tok = test::load_tokenizer(model);
    const std::string prompt = test::read_file(test::shared_path("golden/" + name + ".prompt.txt"));
    const auto expected = test::parse_ids(test::read_file(test::shared_path("golden/" + name + ".tokens")));
    ASSERT_FALSE(expected.empty());
    const auto ids = tok->encode(prompt, add_bos, parse_special);
    EXPECT_EQ(ids, expected) << name;
    // Round trip: the text after BOS is the prompt again (SPM: less the space prefix encode() added).
    const size_t skip = add_bos ? 1 : 0;
    ASSERT_GE(ids.size(), skip);
    EXPECT_EQ(tok->decode(std::span<const TokenId>(ids).subspan(skip), true), prompt) << name;
}

TEST(GoldenTokens, TinyQwen2PromptParsesChatMLSpecialsWithoutBos) {
    expect_golden_tokens("models/tiny-qwen2-f32.gguf", "tiny-qwen2", false, true);
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    EXPECT_FALSE(tok->add_bos());
    // And the ids decode back to the prompt file byte for byte.
    const std::string prompt = test::read_file(test::shared_path("golden/tiny-qwen2.prompt.txt"));
    EXPECT_EQ(tok->decode(tok->encode(prompt, false, true)), prompt);
}

TEST(GoldenTokens, Stories260KPromptWithBos) {
    expect_golden_tokens("models/stories260K.gguf", "stories260K", true, false);
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    EXPECT_TRUE(tok->add_bos());  // absent from the file: SPM default
    EXPECT_EQ(tok->bos(), 1);
}

TEST(GoldenTokens, FlintTinyCodePromptWithBos) {
    expect_golden_tokens("models/flint-tiny-code.gguf", "flint-tiny-code", true, false);
}

TEST(GoldenTokens, Stories260KExactJsonRunsTokenizeAsRecorded) {
    FLINT_REQUIRE_SHARED("golden/stories260K.llamacpp-exact.json");
    const auto j = nlohmann::json::parse(test::read_file(test::shared_path("golden/stories260K.llamacpp-exact.json")));
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    int checked = 0;
    for (const auto& p : j["runs"]) {
        if (!p.is_object() || !p.contains("prompt") || !p.contains("tokens")) continue;
        const auto expected = p["tokens"].get<std::vector<TokenId>>();
        EXPECT_EQ(tok->encode(p["prompt"].get<std::string>(), true, false), expected) << p["prompt"];
        ++checked;
    }
    EXPECT_GT(checked, 0) << "no prompt/tokens pairs found in the JSON";
}

class QwenCases : public ::testing::Test {
protected:
    void SetUp() override {
        FLINT_REQUIRE_SHARED("golden/qwen2-tokenizer-cases.json");
        FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
        cases = nlohmann::json::parse(test::read_file(test::shared_path("golden/qwen2-tokenizer-cases.json")));
        tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    }
    // Every case lists text with the added tokens written in it (HF split_special_tokens=false): parse
    // specials, no BOS. And byte-level BPE round-trips exactly.
    void check(const nlohmann::json& list, const char* group) {
        ASSERT_TRUE(list.is_array()) << group;
        ASSERT_FALSE(list.empty()) << group;
        for (const auto& c : list) {
            const std::string text = c["text"].get<std::string>();
            const auto expected = c["ids"].get<std::vector<TokenId>>();
            const auto got = tok->encode(text, false, true);
            EXPECT_EQ(got, expected) << group << ": \"" << text << "\"";
            EXPECT_EQ(tok->decode(got), text) << group;
        }
    }
    nlohmann::json cases;
    std::shared_ptr<Tokenizer> tok;
};

TEST_F(QwenCases, VerifiedExternalCases) { check(cases["verified_external"], "verified_external"); }
TEST_F(QwenCases, ReferenceDerivedCases) { check(cases["derived_by_reference_tokenizer"]["cases"], "derived"); }

TEST_F(QwenCases, SpecialTokensStayTextWithoutParseSpecial) {
    const auto ids = tok->encode("<|im_start|>hello<|im_end|>", false, false);
    for (TokenId id : ids) EXPECT_LT(id, 151643) << "a special token was recognised with parse_special=false";
    EXPECT_EQ(tok->decode(ids), "<|im_start|>hello<|im_end|>");
}

}  // namespace
