#include "tokenizer/vocab.h"

#include <algorithm>
#include <initializer_list>

#include "util/error.h"

namespace flint {
namespace {

TokenId read_id(const gguf::File& f, std::string_view key, int32_t n_vocab) {
    if (!f.has(key)) return -1;
    const int64_t v = f.get_i64(key, -1);
    // 0xFFFFFFFF (u32 -1) and other out-of-range ids are the converters' way to say "none".
    return (v >= 0 && v < n_vocab) ? static_cast<TokenId>(v) : -1;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

TokenId first_present(const Vocab& v, std::initializer_list<std::string_view> names) {
    for (auto n : names)
        if (TokenId id = v.find(n); id >= 0) return id;
    return -1;
}

void fill_special_ids(const gguf::File& f, Vocab& v) {
    const int32_t n = v.size();
    v.bos = read_id(f, "tokenizer.ggml.bos_token_id", n);
    v.eos = read_id(f, "tokenizer.ggml.eos_token_id", n);
    v.eot = read_id(f, "tokenizer.ggml.eot_token_id", n);
    v.eom = read_id(f, "tokenizer.ggml.eom_token_id", n);
    v.unk = read_id(f, "tokenizer.ggml.unknown_token_id", n);
    v.pad = read_id(f, "tokenizer.ggml.padding_token_id", n);
    v.fim_pre = read_id(f, "tokenizer.ggml.fim_pre_token_id", n);
    v.fim_suf = read_id(f, "tokenizer.ggml.fim_suf_token_id", n);
    v.fim_mid = read_id(f, "tokenizer.ggml.fim_mid_token_id", n);
    v.fim_pad = read_id(f, "tokenizer.ggml.fim_pad_token_id", n);
    v.fim_rep = read_id(f, "tokenizer.ggml.fim_rep_token_id", n);
    v.fim_sep = read_id(f, "tokenizer.ggml.fim_sep_token_id", n);
    // Older converters wrote the FIM ids under these names (CodeLlama).
    if (v.fim_pre < 0) v.fim_pre = read_id(f, "tokenizer.ggml.prefix_token_id", n);
    if (v.fim_suf < 0) v.fim_suf = read_id(f, "tokenizer.ggml.suffix_token_id", n);
    if (v.fim_mid < 0) v.fim_mid = read_id(f, "tokenizer.ggml.middle_token_id", n);

    // Many GGUFs omit these keys; the token names are unambiguous across the families we serve.
    if (v.eot < 0) v.eot = first_present(v, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"});
    if (v.fim_pre < 0) v.fim_pre = first_present(v, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "▁<PRE>"});
    if (v.fim_suf < 0) v.fim_suf = first_present(v, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "▁<SUF>"});
    if (v.fim_mid < 0) v.fim_mid = first_present(v, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "▁<MID>"});
    if (v.fim_pad < 0) v.fim_pad = first_present(v, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"});
    if (v.fim_rep < 0) v.fim_rep = first_present(v, {"<|repo_name|>", "<fim-repo>", "<repo_name>", "<reponame>"});
    if (v.fim_sep < 0) v.fim_sep = first_present(v, {"<|file_sep|>", "<fim-sep>", "<file_sep>", "<filename>"});

    // End of generation: the declared ids plus every known end-of-turn token the vocab has. A model
    // trained on ChatML may stop with <|endoftext|> as well as <|im_end|>, whatever eos says.
    std::vector<TokenId> eog;
    for (TokenId id : {v.eos, v.eot, v.eom})
        if (id >= 0) eog.push_back(id);
    for (std::string_view name : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|endoftext|>", "<|end|>",
                                  "<end_of_turn>", "<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>"}) {
        const TokenId id = v.find(name);
        if (id >= 0 && v.type[id] != TokenType::Normal) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    v.eog = std::move(eog);
}

}  // namespace

bool spm_byte_token(std::string_view text) {
    return text.size() == 6 && text.starts_with("<0x") && text.back() == '>' && is_hex(text[3]) && is_hex(text[4]);
}

uint64_t TokenIndex::hash(std::string_view s) {
    // FNV-1a, then a final mix so the high bits (the tag) and the low bits (the slot) both vary.
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

void TokenIndex::build(const std::vector<std::string>& text) {
    size_t cap = 16;
    while (cap < text.size() * 2) cap <<= 1;
    slots_.assign(cap, 0);
    mask_ = cap - 1;
    for (size_t id = 0; id < text.size(); ++id) {
        if (find(text[id], text) >= 0) continue;  // later duplicates do not override earlier ids
        const uint64_t h = hash(text[id]);
        uint64_t i = h & mask_;
        while (slots_[i] != 0) i = (i + 1) & mask_;
        slots_[i] = (h & 0xFFFFFFFF00000000ull) | (id + 1);
    }
}

TokenId TokenIndex::find(std::string_view s, const std::vector<std::string>& text) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(s);
    const uint64_t tag = h & 0xFFFFFFFF00000000ull;
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
        const uint64_t e = slots_[i];
        if (e == 0) return -1;
        if ((e & 0xFFFFFFFF00000000ull) == tag) {
            const auto id = static_cast<TokenId>((e & 0xFFFFFFFFull) - 1);
            if (text[static_cast<size_t>(id)] == s) return id;
        }
    }
}

Vocab load_vocab(const gguf::File& f) {
    Vocab v;
    const std::string where = f.path() + ": ";
    v.model = f.get_string("tokenizer.ggml.model");
    if (v.model.empty()) fail(where, "tokenizer.ggml.model is missing: the file has no tokenizer");
    if (v.model == "llama") v.kind = Vocab::Kind::Spm;
    else if (v.model == "gpt2") v.kind = Vocab::Kind::Bpe;
    else fail(where, "tokenizer.ggml.model ", quoted(v.model), " is not supported (expected \"llama\" or \"gpt2\")");
    v.pre = f.get_string("tokenizer.ggml.pre");

    const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != gguf::ValueType::ARRAY || tokens->elem != gguf::ValueType::STRING)
        fail(where, "tokenizer.ggml.tokens: expected an array of strings");
    const size_t n = tokens->strings.size();
    if (n == 0 || n > static_cast<size_t>(INT32_MAX)) fail(where, "tokenizer.ggml.tokens: bad vocabulary size ", n);
    v.text.assign(tokens->strings.begin(), tokens->strings.end());

    v.score = f.get_f32_array("tokenizer.ggml.scores");
    if (v.score.empty()) v.score.assign(n, 0.0f);
    if (v.score.size() != n)
        fail(where, "tokenizer.ggml.scores: expected ", n, " entries (one per token), got ", v.score.size());

    const auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (!types.empty() && types.size() != n)
        fail(where, "tokenizer.ggml.token_type: expected ", n, " entries (one per token), got ", types.size());
    v.type.assign(n, TokenType::Normal);
    for (size_t k = 0; k < types.size(); ++k) {
        if (types[k] < 0 || types[k] > 6) fail(where, "tokenizer.ggml.token_type[", k, "] = ", types[k], " is not a token type");
        v.type[k] = static_cast<TokenType>(types[k]);
        // SentencePiece spells byte tokens <0xHH>, and decoding reads the byte from those two digits.
        if (v.kind == Vocab::Kind::Spm && v.type[k] == TokenType::Byte && !spm_byte_token(v.text[k]))
            fail(where, "tokenizer.ggml.tokens[", k, "] = ", quoted(v.text[k]), " has token type byte but is not of the form <0xHH>");
    }

    v.index.build(v.text);

    if (v.kind == Vocab::Kind::Bpe) {
        const gguf::Value* m = f.find("tokenizer.ggml.merges");
        if (!m || m->type != gguf::ValueType::ARRAY || m->elem != gguf::ValueType::STRING)
            fail(where, "tokenizer.ggml.merges: required for a gpt2 (BPE) tokenizer, expected an array of strings");
        v.merges = m->strings;
    }

    fill_special_ids(f, v);
    const bool spm = v.kind == Vocab::Kind::Spm;
    v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", spm) && v.bos >= 0;
    v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false) && v.eos >= 0;
    v.add_space_prefix = spm && f.get_bool("tokenizer.ggml.add_space_prefix", true);
    v.ignore_merges = v.pre == "llama3" || v.pre == "llama-bpe" || v.pre == "llama-v3";
    v.chat_template = f.get_string("tokenizer.chat_template");
    return v;
}

}  // namespace flint
