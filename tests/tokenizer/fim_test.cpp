// Fill-in-the-middle prompts: Qwen2.5-Coder's <|fim_*|> layout and repo-level context against the
// reference ids, flint-tiny-code's SPM <fim_*> tokens with BOS, and a clear error without FIM tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/fim.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

using namespace flint;

namespace {

nlohmann::json derived_case(size_t k) {
    const auto j = nlohmann::json::parse(test::read_file(test::shared_path("golden/qwen2-tokenizer-cases.json")));
    return j["derived_by_reference_tokenizer"]["cases"][k];
}

TEST(Fim, Qwen2PromptMatchesReferenceIds) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("golden/qwen2-tokenizer-cases.json");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    EXPECT_EQ(tok->fim_prefix(), 151659);
    EXPECT_EQ(tok->fim_suffix(), 151661);
    EXPECT_EQ(tok->fim_middle(), 151660);
    const auto c = derived_case(0);  // "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n    return c\n<|fim_middle|>"
    ASSERT_EQ(c["text"].get<std::string>().rfind("<|fim_prefix|>", 0), 0u);
    EXPECT_EQ(fim_tokens(*tok, "def add(a, b):\n    ", "\n    return c\n"), c["ids"].get<std::vector<TokenId>>());
    EXPECT_EQ(fim_prompt(*tok, "def add(a, b):\n    ", "\n    return c\n"), c["text"].get<std::string>());
}

TEST(Fim, UserCodeContainingFimMarkersStaysText) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    const auto ids = fim_tokens(*tok, "s = '<|fim_middle|><|endoftext|>'\n", "");
    EXPECT_EQ(std::count(ids.begin(), ids.end(), tok->fim_middle()), 1) << "only the real FIM middle token";
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 151643), 0);
    EXPECT_EQ(ids.back(), tok->fim_middle());
}

TEST(Fim, Qwen2RepoLevelContextMatchesReferenceIds) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("golden/qwen2-tokenizer-cases.json");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    ASSERT_TRUE(has_repo_fim(*tok));
    const auto c = derived_case(1);  // <|repo_name|>library-system\n<|file_sep|>library.py\n…<|file_sep|>main.py\n…
    const std::vector<RepoFile> files = {
        {"library.py", "class Book:\n    def __init__(self, title):\n        self.title = title\n"},
        {"main.py", "from library import Book\n"}};
    EXPECT_EQ(repo_context_tokens(*tok, "library-system", files), c["ids"].get<std::vector<TokenId>>());

    // The edited file comes last, as <|file_sep|>path\n and its FIM prompt.
    const std::vector<RepoFile> ctx = {files[0]};
    const auto ids = repo_fim_tokens(*tok, "library-system", ctx, "main.py", "from library import ", "\n");
    const auto expected_text = "<|repo_name|>library-system\n<|file_sep|>library.py\n" + files[0].content +
                               "<|file_sep|>main.py\n<|fim_prefix|>from library import <|fim_suffix|>\n<|fim_middle|>";
    EXPECT_EQ(ids, tok->encode(expected_text, false, true));
}

TEST(Fim, TheBandBeforeTheCursorStartsOnAMultipleOfItsLines) {
    auto check = [](std::string_view prefix, int band, std::string_view above, std::string_view rest) {
        const CursorSplit s = split_cursor_band(prefix, band);
        EXPECT_EQ(s.above, above) << prefix << " / " << band;
        EXPECT_EQ(s.band, rest) << prefix << " / " << band;
    };
    // One line: the cursor's line alone, after the last newline.
    check("a = 1\nb = a + ", 1, "a = 1\n", "b = a + ");
    check("a = 1\n", 1, "a = 1\n", "");           // the cursor at a line's start: nothing of its line yet
    check("x = 1", 1, "", "x = 1");                 // the first line
    check("", 1, "", "");
    check("a\r\n  b", 1, "a\r\n", "  b");          // CRLF: the line ends at its \n
    // 0: no band.
    check("a\nb\nc", 0, "a\nb\nc", "");
    // Three lines: lines 0-2, 3-5, …; the cursor on line 4 (0-based) → the band is lines 3-4.
    const std::string text = "l0\nl1\nl2\nl3\nl4 x";
    check(text, 3, "l0\nl1\nl2\n", "l3\nl4 x");
    check("l0\nl1\nl2\nl3\n", 3, "l0\nl1\nl2\n", "l3\n");  // on line 4 at its start
    check("l0\nl1\nl2\n", 3, "l0\nl1\nl2\n", "");             // line 3 starts a band
    check("l0\nl1", 3, "", "l0\nl1");
    check(text, 100, "", text);
    // Typing on, Enter included, keeps the lines above the band the same until the next multiple.
    for (const std::string typed : {"l3", "l3\n", "l3\nl4", "l3\nl4\nl5"})
        EXPECT_EQ(split_cursor_band("l0\nl1\nl2\n" + typed, 3).above, "l0\nl1\nl2\n") << typed;
    EXPECT_EQ(split_cursor_band("l0\nl1\nl2\nl3\nl4\nl5\n", 3).above, "l0\nl1\nl2\nl3\nl4\nl5\n");
}

TEST(Fim, TheMiddleStartGoesAfterFimMiddle) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    const std::string above = "def add(a, b):\n", head = "    return a", suffix = "\n\nprint(add(1, 2))\n";
    auto expected = fim_tokens(*tok, above, suffix);  // … <|fim_middle|>, then the head as text
    EXPECT_EQ(expected.back(), tok->fim_middle());
    for (TokenId id : tok->encode(head, false, false)) expected.push_back(id);
    EXPECT_EQ(fim_tokens(*tok, above, suffix, head), expected);
    EXPECT_EQ(fim_prompt(*tok, above, suffix, head), "<|fim_prefix|>" + above + "<|fim_suffix|>" + suffix + "<|fim_middle|>" + head);
    // The head is user text too: a marker in it stays text.
    const auto marked = fim_tokens(*tok, above, suffix, "s = '<|fim_middle|>'");
    EXPECT_EQ(std::count(marked.begin(), marked.end(), tok->fim_middle()), 1);
    // Repo-level: the same tail after the repo context.
    const std::vector<RepoFile> ctx = {{"a.py", "x = 1\n"}};
    const auto repo = repo_fim_tokens(*tok, "r", ctx, "b.py", above, suffix, head);
    ASSERT_GE(repo.size(), expected.size());
    EXPECT_TRUE(std::equal(expected.begin() + (tok->add_bos() ? 1 : 0), expected.end(), repo.end() - (expected.size() - (tok->add_bos() ? 1 : 0))));
}

TEST(Fim, FlintTinyCodeUsesItsSpmFimTokensWithBos) {
    FLINT_REQUIRE_SHARED("models/flint-tiny-code.gguf");
    auto tok = test::load_tokenizer("models/flint-tiny-code.gguf");
    EXPECT_EQ(tok->fim_prefix(), 3);  // from tokenizer.ggml.fim_*_token_id
    EXPECT_EQ(tok->fim_suffix(), 5);
    EXPECT_EQ(tok->fim_middle(), 4);
    const std::string prefix = "def add(a, b):\n    ", suffix = "\n\nprint(add(1, 2))\n";
    const auto ids = fim_tokens(*tok, prefix, suffix);
    std::vector<TokenId> expected = {tok->bos(), 3};
    for (TokenId id : tok->encode(prefix, false, false)) expected.push_back(id);
    expected.push_back(5);
    for (TokenId id : tok->encode(suffix, false, false)) expected.push_back(id);
    expected.push_back(4);
    EXPECT_EQ(ids, expected);
    EXPECT_EQ(fim_prompt(*tok, "a", "b"), "<fim_prefix>a<fim_suffix>b<fim_middle>");
    // <fim_prefix> is a user-defined token: written in code, it is text unless parse_special.
    const auto plain = tok->encode("x = '<fim_prefix>'", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 3), 0);
    const auto special = tok->encode("x = '<fim_prefix>'", false, true);
    EXPECT_EQ(std::count(special.begin(), special.end(), 3), 1);
    EXPECT_FALSE(has_repo_fim(*tok));
    EXPECT_THROW(repo_context_tokens(*tok, "r", {}), Error);
}

TEST(Fim, Stories260KHasNoFimTokens) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    EXPECT_FALSE(has_fim(*tok));
    try {
        fim_tokens(*tok, "a", "b");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("fill-in-the-middle"), std::string::npos) << e.what();
    }
    EXPECT_THROW(fim_prompt(*tok, "a", "b"), Error);
}

}  // namespace
