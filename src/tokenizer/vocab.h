// flint/tokenizer/vocab.h — the vocabulary as stored in GGUF `tokenizer.*` metadata, loaded once.
//
// Keys read (all optional unless noted): tokenizer.ggml.model (required: "llama" = SentencePiece,
// "gpt2" = byte-level BPE), .pre, .tokens (required), .token_type, .scores, .merges (required for gpt2),
// .bos/.eos/.eot/.eom/.unknown/.padding_token_id, .fim_{pre,suf,mid,pad,rep,sep}_token_id
// (also the older .prefix/.suffix/.middle_token_id), .add_bos_token, .add_eos_token, .add_space_prefix,
// tokenizer.chat_template. Ids that are out of range (e.g. 0xFFFFFFFF) mean "absent".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace flint {

// Text → id, open addressing over one flat array: looked up for every merge candidate (SPM) and every
// merge at load (BPE), where a node-based std::unordered_map spent half the load time chasing pointers.
class TokenIndex {
public:
    void build(const std::vector<std::string>& text);  // the first id wins for duplicate texts
    TokenId find(std::string_view s, const std::vector<std::string>& text) const;

private:
    static uint64_t hash(std::string_view s);
    std::vector<uint64_t> slots_;  // (hash >> 32) << 32 | (id + 1); 0: empty
    uint64_t mask_ = 0;
};

struct Vocab {
    Vocab() = default;
    Vocab(Vocab&&) = default;
    Vocab& operator=(Vocab&&) = default;
    Vocab(const Vocab&) = delete;  // large: move it
    Vocab& operator=(const Vocab&) = delete;

    enum class Kind { Spm, Bpe };
    Kind kind = Kind::Spm;
    std::string model;  // tokenizer.ggml.model
    std::string pre;    // tokenizer.ggml.pre ("" when absent)

    std::vector<std::string> text;  // [n_vocab] raw vocab strings
    std::vector<float> score;       // [n_vocab] SPM merge priority (higher merges first); 0 when absent
    std::vector<TokenType> type;    // [n_vocab]
    TokenIndex index;               // text → id

    // Byte-level BPE merges, "left right" in rank order. Views into the gguf::File: valid only while it
    // lives; the BPE model consumes them during Tokenizer::from_gguf and the tokenizer then clears them.
    std::vector<std::string_view> merges;

    TokenId bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
    TokenId fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
    bool add_bos = false, add_eos = false;
    bool add_space_prefix = false;  // SPM: prepend a space to text that starts a fragment
    bool ignore_merges = false;     // BPE (llama3): a piece that is itself a token is not merged
    std::vector<TokenId> eog;       // sorted: end-of-generation ids
    std::string chat_template;

    int32_t size() const { return static_cast<int32_t>(text.size()); }
    bool valid(TokenId id) const { return id >= 0 && id < size(); }
    TokenId find(std::string_view s) const {
        return index.find(s, text);
    }
};

// Throws flint::Error naming the file and key on malformed or missing metadata.
Vocab load_vocab(const gguf::File& f);

// "<0xHH>" with two hex digits: how SentencePiece spells a byte token.
bool spm_byte_token(std::string_view text);

}  // namespace flint
