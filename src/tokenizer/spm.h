// flint/tokenizer/spm.h — SentencePiece-style tokenization (`tokenizer.ggml.model = llama`).
//
// The text (spaces already escaped to U+2581 "▁") starts as one symbol per UTF-8 character; the adjacent
// pair whose concatenation is the vocab token with the highest score is merged first (ties: leftmost),
// until no pair forms a token. A final symbol that is not a token is emitted as byte-fallback tokens
// <0xNN> (or the unknown token when the vocab has no byte tokens). This is the algorithm llama.cpp uses
// for SPM vocabs, and it matches sentencepiece's BPE-model encoder.
#pragma once
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace flint {

struct Vocab;

class SpmModel {
public:
    explicit SpmModel(const Vocab& vocab);
    // `text` must already be whitespace-escaped.
    void encode(std::string_view text, std::vector<TokenId>& out) const;
    TokenId byte_token(uint8_t b) const { return byte_token_[b]; }

private:
    const Vocab& vocab_;
    TokenId byte_token_[256];
};

// " " → "▁" (U+2581), the SentencePiece whitespace escape.
std::string escape_spm_whitespace(std::string_view text);

}  // namespace flint
