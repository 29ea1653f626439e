// Every tokenizer in ../shared round-trips seeded random text: decode(encode(x), strip) == x, and the
// stream decoder, fed the ids one at a time, gives the same bytes. The texts mix what code and chat bring:
// identifiers, digits, punctuation, runs of spaces, tabs and newlines, and characters of every UTF-8
// length (accents, combining marks, CJK, emoji, the edges U+0080, U+07FF, U+0800, U+FFFF, U+10000,
// U+10FFFF), plus special-token text, which encode() with parse_special = false keeps as text.
// A golden vector says the ids are the reference's; this says no text is lost or changed on the way.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer_test_util.h"

namespace flint {
namespace {

std::string random_text(std::mt19937& rng) {
    static const std::vector<std::string> kPieces = {
        "a", "Z", "_x1", "int", "return", "Hello", "world", "0", "42", "3.14159", "1e-9", "100000",
        " ", "  ", "    ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\t\t", "        ",
        "{", "}", "(", ")", ";", "::", "->", "==", "!=", "//", "/*", "*/", "'", "\"", "\\", "`", "#", "@", "$", "%",
        "é", "ñ", "ü", "e\xcc\x81", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xef\xbf\xbf", "\xef\xbb\xbf",
        "日本語", "中文", "한국어", "Ω", "∑", "→", "“", "”", "…", "\xe2\x80\x8b",
        "🚀", "😀", "👍🏽", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
        "<|im_start|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "<|fim_prefix|>", "[INST]",  // not "▁": SPM reads it as an escaped space, as sentencepiece does
    };
    std::uniform_int_distribution<size_t> piece(0, kPieces.size() - 1), len(1, 40);
    std::string s;
    for (size_t n = len(rng); n > 0; --n) s += kPieces[piece(rng)];
    return s;
}

class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, RandomTextComesBackByteForByte) {
    FLINT_REQUIRE_SHARED(GetParam());
    auto tok = test::load_tokenizer(GetParam());
    std::mt19937 rng(20261205);
    for (int i = 0; i < 300; ++i) {
        const std::string text = random_text(rng);
        const std::vector<TokenId> ids = tok->encode(text, false, false);
        ASSERT_EQ(tok->decode(ids, true), text) << "ids: " << ::testing::PrintToString(ids);
        // The stream decoder holds back an unfinished character and gives out the same bytes, once, in
        // order; with add_space_prefix the first piece's leading space is the one encode() added.
        StreamDecoder stream(*tok);
        std::string streamed;
        for (TokenId id : ids) streamed += stream.push(id);
        streamed += stream.flush();
        EXPECT_EQ(streamed, tok->decode(ids, false)) << text;
    }
}

// Any bytes the vocabulary can spell come back too, broken UTF-8 included: byte-level BPE has a symbol
// per byte and SPM falls back to <0xNN> tokens. Some BPE vocabs lack bytes that never occur in UTF-8 (C0,
// C1, F5-FF) or some control bytes (falcon: 28 of them); encode() drops those, as llama.cpp does, and
// deepseek-coder spells C0 etc. with user-defined tokens whose text is the character, not the byte. The
// test finds the spellable bytes first (a byte alone must come back) and draws from them; the Llama,
// Qwen2 and SPM vocabs can spell all 256.
TEST_P(RoundTrip, ArbitraryBytesComeBack) {
    FLINT_REQUIRE_SHARED(GetParam());
    auto tok = test::load_tokenizer(GetParam());
    std::vector<char> spellable;
    for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        if (tok->decode(tok->encode(one, false, false), true) == one) spellable.push_back(one[0]);
    }
    const std::string name = GetParam();
    const bool full = name.find("models/") == 0 || name.find("spm") != name.npos || name.find("phi-3") != name.npos ||
                      name.find("gpt-2") != name.npos;
    if (full) EXPECT_EQ(spellable.size(), 256u);
    else EXPECT_GE(spellable.size(), 256u - 28);
    std::mt19937 rng(7);
    std::uniform_int_distribution<size_t> pick(0, spellable.size() - 1);
    std::uniform_int_distribution<int> len(1, 64), mix(0, 3);
    for (int i = 0; i < 300; ++i) {
        std::string text;
        for (int n = len(rng); n > 0; --n) {
            if (mix(rng) == 0) text += random_text(rng).substr(0, 4);  // pieces of valid text, cut anywhere
            else text += spellable[pick(rng)];
        }
        const std::vector<TokenId> ids = tok->encode(text, false, false);
        ASSERT_EQ(tok->decode(ids, true), text) << "ids: " << ::testing::PrintToString(ids);
    }
}

INSTANTIATE_TEST_SUITE_P(SharedTokenizers, RoundTrip,
                         ::testing::Values("models/stories260K.gguf", "models/tiny-qwen2-f32.gguf",
                                           "models/flint-tiny-code.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-llama-spm.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-phi-3.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-gpt-2.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-deepseek-coder.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-falcon.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-mpt.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-refact.gguf",
                                           "tokenizers/vocab-tests/ggml-vocab-starcoder.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string name = info.param;
                             name = name.substr(name.rfind('/') + 1);
                             name = name.substr(0, name.find(".gguf"));
                             for (char& c : name)
                                 if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

}  // namespace
}  // namespace flint
