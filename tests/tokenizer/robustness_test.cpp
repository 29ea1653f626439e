// Inputs that break naive tokenizers: very long single pieces (one 200 KB word, 200 KB of spaces — the
// regex backtracks on `\s+(?!\S)`), and concurrent use of one Tokenizer from several threads.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tokenizer_test_util.h"

using namespace flint;

namespace {

TEST(Robustness, LongPiecesTokenizeAndRoundTrip) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("models/flint-tiny-code.gguf");
    auto qwen = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    auto spm = test::load_tokenizer("models/flint-tiny-code.gguf");
    std::string word;
    for (int i = 0; i < 20000; ++i) word += "abcdefghij"[i % 10];
    const std::vector<std::string> inputs = {std::string(200000, ' '), std::string(200000, '\n'), word, std::string(50000, '9') + "é"};
    for (const auto& text : inputs) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto ids = qwen->encode(text, false, false);
        EXPECT_EQ(qwen->decode(ids), text);
        const auto ids2 = spm->encode(text, false, false);
        EXPECT_EQ(spm->decode(ids2, true), text);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_LT(s, 20.0) << "quadratic behaviour on a long piece?";  // generous: Debug + ASan on a busy CI box
    }
}

TEST(Robustness, ConcurrentEncodesAgree) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    std::string text;
    for (int i = 0; i < 200; ++i) text += "for (int i = 0; i < n; ++i) { sum += v[i] * 3.14159; } // ünïcode 🚀\n";
    const auto expected = tok->encode(text, false, false);
    std::vector<std::vector<TokenId>> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t)
        threads.emplace_back([&, t] {
            for (int r = 0; r < 5; ++r) got[t] = tok->encode(text, false, false);
        });
    for (auto& th : threads) th.join();
    for (const auto& g : got) EXPECT_EQ(g, expected);
}

TEST(Robustness, PieceCacheNeverMixesTokenizers) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("tokenizers/vocab-tests/ggml-vocab-gpt-2.gguf");
    auto qwen = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    auto gpt2 = test::load_tokenizer("tokenizers/vocab-tests/ggml-vocab-gpt-2.gguf");
    for (int i = 0; i < 3; ++i) {  // alternate on one thread: each switch must not reuse the other's entries
        EXPECT_EQ(qwen->encode("Hello world", false, false), (std::vector<TokenId>{9707, 1879}));
        EXPECT_EQ(gpt2->encode("Hello world", false, false), (std::vector<TokenId>{15496, 995}));
    }
}

}  // namespace
