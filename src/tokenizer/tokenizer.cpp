#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "gguf/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace flint {
namespace {

std::string make_piece(const Vocab& v, TokenId id) {
    const std::string& text = v.text[id];
    const TokenType t = v.type[id];
    if (t != TokenType::Normal && t != TokenType::Byte && t != TokenType::Undefined) return text;  // specials: their text
    if (v.kind == Vocab::Kind::Bpe) return byte_level::decode(text);
    if (t == TokenType::Byte && spm_byte_token(text))  // (load_vocab refuses byte tokens of another form)
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
    std::string out;  // SPM: "▁" is a space
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
            out += ' ';
            i += 3;
        } else {
            out += text[i++];
        }
    }
    return out;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::shared_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
    std::shared_ptr<Tokenizer> t(new Tokenizer());
    t->vocab_ = std::make_unique<Vocab>(load_vocab(f));
    Vocab& v = *t->vocab_;
    try {
        if (v.kind == Vocab::Kind::Bpe) {
            t->pre_ = PreTokenizer::for_pre(v.pre);
            t->bpe_ = std::make_unique<BpeModel>(v);
        } else {
            t->spm_ = std::make_unique<SpmModel>(v);
        }
    } catch (const Error& e) {
        fail(f.path(), ": ", e.what());
    }
    v.merges.clear();  // views into the file, which may now be closed
    v.merges.shrink_to_fit();
    t->specials_ = special_token_ids(v);
    t->textual_ = textual_token_ids(v);
    t->textual_sorted_ = t->textual_;
    std::sort(t->textual_sorted_.begin(), t->textual_sorted_.end());
    t->pieces_.reserve(v.text.size());
    for (TokenId id = 0; id < v.size(); ++id) t->pieces_.push_back(make_piece(v, id));
    return t;
}

// ---- encode ---------------------------------------------------------------------------------------

void Tokenizer::encode_text(std::string_view text, bool after_special, std::vector<TokenId>& out) const {
    if (spm_) {
        std::string escaped = escape_spm_whitespace(text);
        // SentencePiece normalises with a dummy prefix; the reference engine repeats it after every
        // special token, and we follow it so token ids agree.
        if (vocab_->add_space_prefix && after_special) escaped.insert(0, "\xE2\x96\x81");
        spm_->encode(escaped, out);
        return;
    }
    std::vector<std::string_view> pieces;
    pieces.reserve(text.size() / 3 + 4);
    pre_->split(text, pieces);
    for (std::string_view p : pieces) bpe_->encode_piece(p, out);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    const TextPart whole{std::string(text), parse_special};
    return encode(std::span(&whole, 1), add_bos);
}

std::vector<TokenId> Tokenizer::encode(std::span<const TextPart> parts, bool add_bos) const {
    // The parts are split around special tokens as one text: the textual ones anywhere (a whitespace-run
    // token may span two parts, as it would in the concatenation), the others inside markup only
    // (special_tokens.h SpecialScope). The text between two special tokens is then pre-tokenized and merged
    // as one, as encode(concatenation) would.
    std::string concatenated;
    std::string_view text;
    std::vector<std::pair<size_t, size_t>> markup;
    bool any_plain = false;
    size_t at = 0;
    for (const TextPart& p : parts) {
        if (p.markup && !markup.empty() && markup.back().second == at) markup.back().second += p.text.size();
        else if (p.markup) markup.emplace_back(at, at + p.text.size());
        else any_plain |= !p.text.empty();
        at += p.text.size();
    }
    if (parts.size() == 1) {
        text = parts[0].text;
    } else {
        concatenated.reserve(at);
        for (const TextPart& p : parts) concatenated += p.text;
        text = concatenated;
    }
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 2);
    if (add_bos && vocab_->bos >= 0) out.push_back(vocab_->bos);
    std::vector<Fragment> frags;
    const std::vector<TokenId>& recognised = markup.empty() ? textual_ : specials_;
    if (recognised.empty()) {
        frags.push_back(Fragment{text, -1});
    } else if (!markup.empty() && any_plain) {
        const SpecialScope scope{textual_sorted_, markup};
        split_special(*vocab_, recognised, text, frags, &scope);
    } else {
        split_special(*vocab_, recognised, text, frags);
    }
    bool after_special = true;
    for (const Fragment& f : frags) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
        } else if (!f.text.empty()) {
            encode_text(f.text, after_special, out);
            after_special = false;
        }
    }
    return out;
}

// ---- decode ---------------------------------------------------------------------------------------

std::string Tokenizer::decode(std::span<const TokenId> ids) const { return decode(ids, false); }

std::string Tokenizer::decode(std::span<const TokenId> ids, bool strip_space_prefix) const {
    std::string out;
    bool strip = strip_space_prefix && vocab_->add_space_prefix;
    for (TokenId id : ids) {
        const std::string& p = piece(id);
        if (strip && vocab_->type[id] != TokenType::Control) {
            strip = false;
            if (!p.empty() && p[0] == ' ') {
                out.append(p, 1);
                continue;
            }
        }
        out += p;
    }
    return out;
}

const std::string& Tokenizer::piece(TokenId id) const {
    if (!vocab_->valid(id)) fail("token id ", id, " is out of range (vocabulary of ", n_vocab(), ")");
    return pieces_[static_cast<size_t>(id)];
}

std::string Tokenizer::token_to_piece(TokenId id) const { return piece(id); }

// ---- vocabulary -----------------------------------------------------------------------------------

const std::string& Tokenizer::token_text(TokenId id) const {
    if (!vocab_->valid(id)) fail("token id ", id, " is out of range (vocabulary of ", n_vocab(), ")");
    return vocab_->text[static_cast<size_t>(id)];
}
int32_t Tokenizer::n_vocab() const { return vocab_->size(); }
TokenType Tokenizer::token_type(TokenId id) const { return vocab_->valid(id) ? vocab_->type[id] : TokenType::Undefined; }
float Tokenizer::token_score(TokenId id) const { return vocab_->valid(id) ? vocab_->score[id] : 0.0f; }
std::optional<TokenId> Tokenizer::find_token(std::string_view text) const {
    const TokenId id = vocab_->find(text);
    return id >= 0 ? std::optional<TokenId>(id) : std::nullopt;
}
bool Tokenizer::is_special(TokenId id) const {
    const TokenType t = token_type(id);
    return t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown || t == TokenType::Unused;
}
TokenId Tokenizer::bos() const { return vocab_->bos; }
TokenId Tokenizer::eos() const { return vocab_->eos; }
TokenId Tokenizer::eot() const { return vocab_->eot; }
bool Tokenizer::add_bos() const { return vocab_->add_bos; }
bool Tokenizer::add_space_prefix() const { return vocab_->add_space_prefix; }
bool Tokenizer::is_eog(TokenId id) const { return std::binary_search(vocab_->eog.begin(), vocab_->eog.end(), id); }
const std::vector<TokenId>& Tokenizer::eog_ids() const { return vocab_->eog; }
TokenId Tokenizer::fim_prefix() const { return vocab_->fim_pre; }
TokenId Tokenizer::fim_suffix() const { return vocab_->fim_suf; }
TokenId Tokenizer::fim_middle() const { return vocab_->fim_mid; }
TokenId Tokenizer::fim_repo() const { return vocab_->fim_rep; }
TokenId Tokenizer::fim_file_sep() const { return vocab_->fim_sep; }
std::string_view Tokenizer::model_kind() const { return vocab_->model; }
std::string_view Tokenizer::pre() const { return vocab_->pre; }
const std::string& Tokenizer::chat_template() const { return vocab_->chat_template; }

}  // namespace flint
