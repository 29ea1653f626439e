// The Tokenizer's metadata surface (ids, types, pieces, end of generation), SPM space-prefix handling,
// invalid UTF-8 input, pre-tokenizer pieces, and errors with context for bad metadata.
#include <gtest/gtest.h>

#include <cstring>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer_test_util.h"
#include "util/error.h"

using namespace flint;

namespace {

TEST(TokenizerApi, Qwen2Metadata) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    auto tok = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    EXPECT_EQ(tok->model_kind(), "gpt2");
    EXPECT_EQ(tok->pre(), "qwen2");
    EXPECT_EQ(tok->n_vocab(), 151936);
    EXPECT_EQ(tok->bos(), 151643);
    EXPECT_EQ(tok->eos(), 151645);
    EXPECT_EQ(tok->eot(), 151645);  // no eot key: found by name <|im_end|>
    EXPECT_TRUE(tok->is_eog(151645));
    EXPECT_TRUE(tok->is_eog(151643));  // <|endoftext|> also ends generation (generation_config eos ids)
    EXPECT_FALSE(tok->is_eog(198));
    EXPECT_FALSE(tok->is_eog(-1));
    EXPECT_EQ(tok->token_type(151644), TokenType::Control);
    EXPECT_EQ(tok->token_type(151700), TokenType::Unused);
    EXPECT_EQ(tok->token_type(9707), TokenType::Normal);
    EXPECT_EQ(tok->token_text(9707), "Hello");
    EXPECT_EQ(tok->token_text(220), "Ġ");
    EXPECT_EQ(tok->token_to_piece(220), " ");
    EXPECT_EQ(tok->token_to_piece(198), "\n");
    EXPECT_EQ(tok->token_to_piece(151644), "<|im_start|>");
    EXPECT_EQ(tok->find_token("<|im_start|>"), 151644);
    EXPECT_EQ(tok->find_token("no such token here"), std::nullopt);
    EXPECT_THROW(tok->token_text(151936), Error);
    EXPECT_THROW(tok->token_to_piece(-1), Error);
}

TEST(TokenizerApi, SpmSpacePrefixAndBytePieces) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    EXPECT_EQ(tok->model_kind(), "llama");
    EXPECT_TRUE(tok->add_space_prefix());
    EXPECT_EQ(tok->eot(), -1);
    EXPECT_TRUE(tok->is_eog(2));
    const auto ids = tok->encode("Once upon a time", false, false);
    EXPECT_EQ(tok->decode(ids), " Once upon a time");
    EXPECT_EQ(tok->decode(ids, true), "Once upon a time");
    const auto with_bos = tok->encode("Once upon a time", true, false);
    ASSERT_EQ(with_bos.size(), ids.size() + 1);
    EXPECT_EQ(with_bos[0], 1);
    EXPECT_EQ(tok->decode(with_bos, true), "<s>Once upon a time");
    EXPECT_EQ(tok->token_to_piece(*tok->find_token("<0x0A>")), "\n");
    EXPECT_TRUE(tok->encode("", false, false).empty());
    EXPECT_EQ(tok->encode("", true, false), std::vector<TokenId>{1});
}

TEST(TokenizerApi, SpmParseSpecialRecognisesControlTokens) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto tok = test::load_tokenizer("models/stories260K.gguf");
    const auto parsed = tok->encode("Hi</s>Bye", false, true);
    EXPECT_EQ(std::count(parsed.begin(), parsed.end(), 2), 1);
    const auto plain = tok->encode("Hi</s>Bye", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
    // The text after a special token gets the space prefix again (as the reference engine does).
    EXPECT_EQ(tok->decode(parsed), " Hi</s> Bye");
}

TEST(TokenizerApi, InvalidUtf8InputRoundTrips) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string text = "ok\xFF\xC3 x\xE2\x82 \xF0\x9F\x9A\x80 end\x80";
    auto qwen = test::load_tokenizer("models/tiny-qwen2-f32.gguf");
    EXPECT_EQ(qwen->decode(qwen->encode(text, false, false)), text);
    auto spm = test::load_tokenizer("models/stories260K.gguf");
    EXPECT_EQ(spm->decode(spm->encode(text, false, false), true), text);
}

// A prompt's parts are split around special tokens as one text: MPT's whitespace-run tokens (recognised in
// plain text too) span a boundary between two plain parts, or between markup and plain text, as they do in
// the concatenation; a control token spelled across markup and plain text is not one. Found by
// fuzz/tokenizer_fuzz.cpp ("  " cut in two encoded as two single spaces).
TEST(TokenizerApi, PartsAreSplitAroundSpecialTokensAsOneText) {
    FLINT_REQUIRE_SHARED("tokenizers/vocab-tests/ggml-vocab-mpt.gguf");
    auto tok = test::load_tokenizer("tokenizers/vocab-tests/ggml-vocab-mpt.gguf");
    for (const std::string text : {"  ", "a    b", "x\n     y  ", "    "}) {
        const std::vector<TokenId> whole = tok->encode(text, false, false);
        for (size_t cut = 0; cut <= text.size(); ++cut) {
            const TextPart plain[2] = {{text.substr(0, cut), false}, {text.substr(cut), false}};
            EXPECT_EQ(tok->encode(plain, false), whole) << "cut at " << cut << " of \"" << text << "\"";
            const TextPart mixed[2] = {{text.substr(0, cut), true}, {text.substr(cut), false}};
            EXPECT_EQ(tok->encode(mixed, false), tok->encode(text, false, true)) << "cut at " << cut;
        }
    }
    const std::optional<TokenId> eot = tok->find_token("<|endoftext|>");
    ASSERT_TRUE(eot.has_value());
    const TextPart across[2] = {{"a <|endof", true}, {"text|> b", false}};
    const std::vector<TokenId> ids = tok->encode(across, false);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), *eot), 0) << "its last bytes are plain text";
    const TextPart inside[2] = {{"a <|endoftext|>", true}, {" b", false}};
    const std::vector<TokenId> marked = tok->encode(inside, false);
    EXPECT_EQ(std::count(marked.begin(), marked.end(), *eot), 1);
}

TEST(TokenizerApi, Qwen2PreTokenizerPieces) {
    auto pre = PreTokenizer::for_pre("qwen2");
    std::vector<std::string_view> pieces;
    pre->split("Hello world  123\n\n  x's", pieces);
    const std::vector<std::string_view> expected = {"Hello", " world", " ", " ", "1", "2", "3", "\n\n", " ", " x", "'s"};
    EXPECT_EQ(pieces, expected);
}

TEST(TokenizerApi, EveryListedPreTokenizerCompiles) {
    for (const auto& name : PreTokenizer::known_names()) {
        auto pre = PreTokenizer::for_pre(name);
        std::vector<std::string_view> pieces;
        pre->split("int x = 42; // ok\n", pieces);
        std::string joined;
        for (auto p : pieces) joined += p;
        EXPECT_EQ(joined, "int x = 42; // ok\n") << name << ": pieces must cover the text";
    }
    try {
        PreTokenizer::for_pre("klingon");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("klingon"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("qwen2"), std::string::npos) << "lists the known names";
    }
}

// ---- bad metadata --------------------------------------------------------------------------------

// A minimal GGUF v3 with string / string-array metadata only.
struct GgufBuilder {
    std::vector<uint8_t> b;
    uint64_t n_kv = 0;
    GgufBuilder() {
        put("GGUF", 4);
        u32(3);
        u64(0);  // tensors
        u64(0);  // kv count, patched in bytes()
    }
    void put(const void* p, size_t n) { b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); }
    void u32(uint32_t v) { put(&v, 4); }
    void u64(uint64_t v) { put(&v, 8); }
    void str(std::string_view s) {
        u64(s.size());
        put(s.data(), s.size());
    }
    GgufBuilder& kv_str(std::string_view k, std::string_view v) {
        str(k);
        u32(8);
        str(v);
        ++n_kv;
        return *this;
    }
    GgufBuilder& kv_strs(std::string_view k, const std::vector<std::string>& v) {
        str(k);
        u32(9);
        u32(8);
        u64(v.size());
        for (const auto& s : v) str(s);
        ++n_kv;
        return *this;
    }
    GgufBuilder& kv_i32s(std::string_view k, const std::vector<int32_t>& v) {
        str(k);
        u32(9);
        u32(5);  // INT32
        u64(v.size());
        for (int32_t x : v) u32(static_cast<uint32_t>(x));
        ++n_kv;
        return *this;
    }
    std::vector<uint8_t> bytes() {
        std::memcpy(b.data() + 16, &n_kv, 8);
        return b;
    }
};

std::string load_error(std::vector<uint8_t> bytes) {
    try {
        auto f = gguf::File::parse(bytes.data(), bytes.size(), "test.gguf");
        Tokenizer::from_gguf(*f);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(TokenizerApi, MissingTokenizerIsAClearError) {
    const std::string e = load_error(GgufBuilder().kv_str("general.architecture", "llama").bytes());
    EXPECT_NE(e.find("test.gguf"), std::string::npos) << e;
    EXPECT_NE(e.find("tokenizer.ggml.model"), std::string::npos) << e;
}

TEST(TokenizerApi, UnknownModelAndPreAreClearErrors) {
    std::string e = load_error(GgufBuilder().kv_str("tokenizer.ggml.model", "wordpiece").kv_strs("tokenizer.ggml.tokens", {"a"}).bytes());
    EXPECT_NE(e.find("wordpiece"), std::string::npos) << e;
    e = load_error(GgufBuilder()
                       .kv_str("tokenizer.ggml.model", "gpt2")
                       .kv_str("tokenizer.ggml.pre", "nonsense")
                       .kv_strs("tokenizer.ggml.tokens", {"a", "b", "ab"})
                       .kv_strs("tokenizer.ggml.merges", {"a b"})
                       .bytes());
    EXPECT_NE(e.find("test.gguf"), std::string::npos) << e;
    EXPECT_NE(e.find("nonsense"), std::string::npos) << e;
    e = load_error(GgufBuilder().kv_str("tokenizer.ggml.model", "gpt2").kv_strs("tokenizer.ggml.tokens", {"a"}).bytes());
    EXPECT_NE(e.find("tokenizer.ggml.merges"), std::string::npos) << e;
}

// A SentencePiece byte token must be <0xHH>: decoding reads the byte from the two digits. Anything else so
// typed is a corrupt vocabulary, refused at load by index and text (before, "<0xZZ>" threw std::invalid_argument
// out of the loader, which is not a flint::Error).
TEST(TokenizerApi, AMalformedSpmByteTokenIsAClearError) {
    auto spm = [](const std::string& byte_token) {
        return GgufBuilder()
            .kv_str("tokenizer.ggml.model", "llama")
            .kv_strs("tokenizer.ggml.tokens", {"<unk>", byte_token, "\xE2\x96\x81" "a"})
            .kv_i32s("tokenizer.ggml.token_type", {2, 6, 1})
            .bytes();
    };
    for (const std::string bad : {"<0xZZ>", "<0x4G>", "<0x41", "<0x411>", "A", "<0x\xff\xfe>"}) {
        const std::string e = load_error(spm(bad));
        EXPECT_NE(e.find("tokenizer.ggml.tokens[1]"), std::string::npos) << bad << ": " << e;
        EXPECT_NE(e.find("<0xHH>"), std::string::npos) << bad << ": " << e;
    }
    EXPECT_NE(load_error(spm("<0x\xff\xfe>")).find("\\xff"), std::string::npos) << "bad bytes are escaped";
    for (const std::string good : {"<0x41>", "<0x0a>", "<0xFF>"}) {
        const std::vector<uint8_t> bytes = spm(good);
        auto f = gguf::File::parse(bytes.data(), bytes.size(), "test.gguf");
        auto tok = Tokenizer::from_gguf(*f);
        const std::string piece = tok->token_to_piece(1);
        ASSERT_EQ(piece.size(), 1u) << good;
        EXPECT_EQ(static_cast<unsigned char>(piece[0]), std::stoul(good.substr(3, 2), nullptr, 16)) << good;
    }
}

TEST(TokenizerApi, TinyHandBuiltBpeMergesByRank) {
    // Vocab "a" "b" "ab" "ba" "aba": merges (b a) before (a b) — "aba" must become a + ba, not ab + a.
    auto bytes = GgufBuilder()
                     .kv_str("tokenizer.ggml.model", "gpt2")
                     .kv_str("tokenizer.ggml.pre", "gpt-2")
                     .kv_strs("tokenizer.ggml.tokens", {"a", "b", "ab", "ba", "aba"})
                     .kv_strs("tokenizer.ggml.merges", {"b a", "a b", "a ba"})
                     .bytes();
    auto f = gguf::File::parse(bytes.data(), bytes.size(), "tiny.gguf");
    auto tok = Tokenizer::from_gguf(*f);
    EXPECT_EQ(tok->encode("aba", false, false), std::vector<TokenId>{4});
    EXPECT_EQ(tok->encode("abab", false, false), (std::vector<TokenId>{4, 1}));
    EXPECT_EQ(tok->encode("ab", false, false), std::vector<TokenId>{2});
}

TEST(TokenizerApi, Llama3IgnoresMergesForWholeTokenPieces) {
    // Llama 3's tokenizer.json has ignore_merges: a pre-tokenized piece that is itself a token is taken
    // whole, even when the merges would not build it.
    auto make = [](std::string_view pre) {
        auto bytes = GgufBuilder()
                         .kv_str("tokenizer.ggml.model", "gpt2")
                         .kv_str("tokenizer.ggml.pre", pre)
                         .kv_strs("tokenizer.ggml.tokens", {"a", "b", "ab", "ba", "aba"})
                         .kv_strs("tokenizer.ggml.merges", {"b a", "a b"})
                         .bytes();
        auto f = gguf::File::parse(bytes.data(), bytes.size(), "tiny.gguf");
        return Tokenizer::from_gguf(*f);
    };
    EXPECT_EQ(make("gpt-2")->encode("aba", false, false), (std::vector<TokenId>{0, 3}));
    EXPECT_EQ(make("llama-bpe")->encode("aba", false, false), std::vector<TokenId>{4});
}

TEST(TokenizerApi, Llama3PreTokenizerGroupsDigitsByThree) {
    auto pre = PreTokenizer::for_pre("llama-bpe");
    std::vector<std::string_view> pieces;
    pre->split("x=1234567;\n\n", pieces);
    const std::vector<std::string_view> expected = {"x", "=", "123", "456", "7", ";\n\n"};
    EXPECT_EQ(pieces, expected);
}

}  // namespace
