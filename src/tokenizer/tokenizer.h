// flint/tokenizer/tokenizer.h — where bytes become tokens and tokens become bytes.
//
// Built from a GGUF file's `tokenizer.*` metadata (see vocab.h for the keys). Two algorithms:
//   SPM  (tokenizer.ggml.model = "llama"): score-ordered merges over characters, byte fallback <0xNN>,
//        spaces escaped to "▁" and (add_space_prefix, default on) a space prepended to each text
//        fragment that starts the input or follows a special token (spm.h).
//   BPE  (tokenizer.ggml.model = "gpt2"): pre-tokenizer regexes chosen by tokenizer.ggml.pre
//        (pre_tokenizer.h), then rank-ordered merges over GPT-2 byte-level symbols (bpe.h).
// encode() pipeline: [BOS] → special-token split (parse_special only; special_tokens.h) → per fragment
// SPM or pre-tokenize + BPE. decode() concatenates token_to_piece().
//
// Thread safety: a Tokenizer is immutable after from_gguf; encode/decode may run concurrently.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flint {

namespace gguf {
class File;
}

using TokenId = int32_t;

// A piece of a prompt for encode(parts): markup (a chat format's own text, the server's tool wrapping),
// whose special-token spellings become those tokens, or plain text (what users, files and tools wrote),
// read as parse_special = false reads it — so "<|im_end|>" in a pasted file stays text.
struct TextPart {
    std::string text;
    bool markup = false;
};

enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct Vocab;
class PreTokenizer;
class BpeModel;
class SpmModel;

class Tokenizer {
public:
    // Throws flint::Error naming the file and key when the metadata is missing or malformed.
    static std::shared_ptr<Tokenizer> from_gguf(const gguf::File& f);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // ---- text → tokens ---------------------------------------------------------------------------
    // add_bos: prepend bos() (if the vocab has one; pass add_bos() for the model's own convention).
    // parse_special: recognise special (control) and user-defined tokens written in the text; never when
    // false — except plain-text user-defined tokens without a role (e.g. MPT's whitespace runs), which the
    // model's own tokenizer always produces (see special_tokens.h).
    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const;
    // The parts' concatenation, specials recognised in markup only (the plain-text ones above anywhere, also
    // across a part boundary). Plain text joins the markup around it into one fragment between special
    // tokens, so with no special spellings in the plain parts this is encode(concatenation, add_bos, true),
    // and plain parts alone are encode(concatenation, add_bos, false); encode(text, …) is encode of one part.
    std::vector<TokenId> encode(std::span<const TextPart> parts, bool add_bos) const;

    // ---- tokens → text ---------------------------------------------------------------------------
    // Concatenated pieces as bytes (specials rendered as their text). The bytes may be invalid UTF-8 if
    // `ids` ends inside a character; use StreamDecoder for incremental output.
    std::string decode(std::span<const TokenId> ids) const;
    // As decode(), but for SPM vocabs with add_space_prefix drops the one space encode() prepended
    // (from the first text token), so decode(encode(x, false, false), true) == x.
    std::string decode(std::span<const TokenId> ids, bool strip_space_prefix) const;
    // Bytes this token stands for (SPM: ▁→space, <0xNN>→byte; BPE: byte-level decoded; specials: their text).
    std::string token_to_piece(TokenId id) const;
    const std::string& piece(TokenId id) const;  // same as token_to_piece, without a copy

    // ---- vocabulary ------------------------------------------------------------------------------
    const std::string& token_text(TokenId id) const;  // raw vocab string; throws for an invalid id
    int32_t n_vocab() const;
    TokenType token_type(TokenId id) const;
    float token_score(TokenId id) const;
    std::optional<TokenId> find_token(std::string_view text) const;
    bool is_special(TokenId id) const;  // control, user-defined, unknown or unused

    TokenId bos() const;  // -1 when absent
    TokenId eos() const;
    TokenId eot() const;
    bool add_bos() const;  // from metadata (default true for SPM, false for BPE unless set)
    bool add_space_prefix() const;
    // End of generation: eos, eot, eom, and the known end-of-turn tokens the vocab has
    // (<|im_end|>, <|endoftext|>, <|eot_id|>, <|end|>, <end_of_turn>, …).
    bool is_eog(TokenId id) const;
    const std::vector<TokenId>& eog_ids() const;

    // FIM tokens: tokenizer.ggml.fim_{pre,suf,mid,rep,sep}_token_id, else found by name
    // (<|fim_prefix|>, <fim_prefix>, <PRE>…). -1 when absent.
    TokenId fim_prefix() const;
    TokenId fim_suffix() const;
    TokenId fim_middle() const;
    TokenId fim_repo() const;
    TokenId fim_file_sep() const;

    std::string_view model_kind() const;  // "llama" (SPM) or "gpt2" (BPE)
    std::string_view pre() const;         // tokenizer.ggml.pre ("" when absent)
    const std::string& chat_template() const;  // tokenizer.chat_template or ""
    const Vocab& vocab() const { return *vocab_; }

private:
    Tokenizer();
    void encode_text(std::string_view text, bool after_special, std::vector<TokenId>& out) const;

    std::unique_ptr<Vocab> vocab_;
    std::unique_ptr<PreTokenizer> pre_;  // BPE only
    std::unique_ptr<BpeModel> bpe_;      // BPE only
    std::unique_ptr<SpmModel> spm_;      // SPM only
    std::vector<TokenId> specials_;      // recognised by parse_special, longest text first
    std::vector<TokenId> textual_;       // recognised always (special_tokens.h), longest text first
    std::vector<TokenId> textual_sorted_;  // the same, by id (SpecialScope)
    std::vector<std::string> pieces_;    // [n_vocab] token_to_piece, precomputed
};

// Streaming detokenizer: push ids as they are generated; returns only complete valid UTF-8; holds back a
// character split across tokens; flush() returns what is left (invalid trailing bytes replaced with U+FFFD).
// Bytes that can never become valid (e.g. a lone continuation byte) are replaced with U+FFFD at once.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok);
    std::string push(TokenId id);
    std::string push_bytes(std::string_view bytes);  // same, for raw bytes
    std::string flush();

private:
    const Tokenizer& tok_;
    std::string pending_;  // at most 3 bytes: the start of an incomplete character
};

}  // namespace flint
