// flint/tokenizer/bpe.h — byte-level BPE: one pre-tokenized piece of raw bytes → token ids.
//
// Works on token ids, not strings: a piece starts as one symbol per byte (the byte's GPT-2 code point is
// a token in every byte-level vocab), and a merge table keyed by (left id, right id) gives the merge's
// rank and the merged token. The lowest-ranked adjacent pair is merged first, ties going to the leftmost,
// exactly as the reference engines do; a heap keeps that O(n log n) for long pieces.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace flint {

struct Vocab;

class BpeModel {
public:
    // Consumes vocab.merges; throws flint::Error naming a merge whose parts are not tokens.
    explicit BpeModel(const Vocab& vocab);

    // Appends the tokens of one piece of raw bytes. Short pieces go through a per-thread cache: source
    // code repeats the same words and indents, and a hash lookup is ~10x cheaper than merging again.
    void encode_piece(std::string_view bytes, std::vector<TokenId>& out) const;
    // The merge itself, without the cache.
    void merge_piece(std::string_view bytes, std::vector<TokenId>& out) const;

    size_t n_merges() const { return n_merges_; }

private:
    struct Merge {
        uint64_t key = ~0ull;  // (left << 32) | right; ~0: empty slot
        int32_t rank = 0;
        TokenId merged = -1;
    };
    const Merge* find(TokenId left, TokenId right) const;
    void insert(TokenId left, TokenId right, int32_t rank, TokenId merged);

    const Vocab& vocab_;
    TokenId byte_token_[256];
    std::vector<Merge> table_;  // open addressing, power-of-two size, at most half full
    uint64_t mask_ = 0;
    size_t n_merges_ = 0;
    uint64_t instance_ = 0;  // distinguishes this model in the per-thread caches (never reused)
};

}  // namespace flint
