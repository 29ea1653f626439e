// Streaming detokenization never emits invalid UTF-8: a character split across tokens (byte-level BPE
// pieces, SPM byte-fallback tokens) is held back until complete, and bytes that can never become valid
// are replaced with U+FFFD.
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

using namespace flint;

namespace {

// Pushes ids one at a time; checks every delta is valid UTF-8; returns the concatenation plus flush().
std::string stream_all(const Tokenizer& tok, const std::vector<TokenId>& ids, int* held_back = nullptr) {
    StreamDecoder d(tok);
    std::string all;
    for (TokenId id : ids) {
        const std::string delta = d.push(id);
        EXPECT_TRUE(utf8::is_valid(delta)) << "token " << id;
        if (held_back && delta.size() < tok.piece(id).size()) ++*held_back;
        all += delta;
    }
    const std::string rest = d.flush();
    EXPECT_TRUE(utf8::is_valid(rest));
    return all + rest;
}

TEST(StreamDecoder, ByteLevelBpeHoldsBackSplitCharacters) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    const std::string text = "Ünïcödé ñ 你好，世界 🚀🔥 العربية 😶‍🌫️ ✅";
    const auto ids = tok->encode(text, false, false);
    // 🚀 is split over several byte-level tokens in this vocab (reference ids 11162 248 222).
    bool split = false;
    for (TokenId id : ids) split |= !utf8::is_valid(tok->piece(id));
    ASSERT_TRUE(split) << "the test text must contain a character split across tokens";
    int held = 0;
    EXPECT_EQ(stream_all(*tok, ids, &held), text);
    EXPECT_GT(held, 0);
}

TEST(StreamDecoder, SpmByteFallbackTokensJoinIntoOneCharacter) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    const auto ids = tok->encode("é€😀", false, false);  // 😀 is not in the 512-token vocab: byte fallback
    const auto f0 = tok->find_token("<0xF0>");  // first byte of "😀"
    ASSERT_TRUE(f0.has_value());
    EXPECT_NE(std::find(ids.begin(), ids.end(), *f0), ids.end());
    const auto c3 = tok->find_token("<0xC3>");
    ASSERT_TRUE(c3.has_value());
    StreamDecoder d(*tok);
    EXPECT_EQ(d.push(*c3), "");  // first byte of "é": held back
    EXPECT_EQ(d.push(*tok->find_token("<0xA9>")), "é");
    EXPECT_EQ(d.flush(), "");
    int held = 0;
    EXPECT_EQ(stream_all(*tok, ids, &held), " é€😀");  // SPM's space prefix is part of the first piece
    EXPECT_GE(held, 3);
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    StreamDecoder d(*tok);
    EXPECT_EQ(d.push(*tok->find_token("<0xFF>")), "\xEF\xBF\xBD");  // can never start a character
    EXPECT_EQ(d.push(*tok->find_token("<0xE4>")), "");              // could: held back
    EXPECT_EQ(d.push(*tok->find_token("<0x41>")), "\xEF\xBF\xBD" "A");  // …but "A" breaks it
    EXPECT_EQ(d.push(*tok->find_token("<0xE4>")), "");
    EXPECT_EQ(d.push(*tok->find_token("<0xB8>")), "");
    EXPECT_EQ(d.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated at the end
    EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, RandomTokenStreamsAreAlwaysValidUtf8) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    std::mt19937 rng(7);
    std::uniform_int_distribution<TokenId> any(0, tok->n_vocab() - 1);
    for (int run = 0; run < 50; ++run) {
        std::vector<TokenId> ids(40);
        for (auto& id : ids) id = any(rng);
        const std::string out = stream_all(*tok, ids);
        EXPECT_TRUE(utf8::is_valid(out));
        // When the raw bytes are valid, streaming changes nothing.
        const std::string raw = tok->decode(ids);
        if (utf8::is_valid(raw)) EXPECT_EQ(out, raw);
        else EXPECT_EQ(out, utf8::sanitize(raw));
    }
}

}  // namespace
