// flint/tokenizer/special_tokens.h — splitting text around special tokens written in it.
//
// With parse_special, the texts of control, user-defined and unknown tokens (e.g. "<|im_start|>",
// "<fim_prefix>", "<unk>") are cut out of the text before pre-tokenization and become their ids
// directly. Longer tokens are matched first over the whole text, then shorter ones in what is left —
// the reference engine's order, which matters when one special's text contains another's.
//
// Without parse_special, control tokens are never recognised. User-defined tokens that are plain text —
// no role (BOS/EOS/EOT/FIM/…) and not markup-shaped like "<…>" or "[…]" — are still recognised, because
// the model's tokenizer always does so (HF "added tokens"): MPT's whitespace-run tokens and
// deepseek-coder's single-character tokens are produced from ordinary text, and the reference vectors
// require them. Markup-shaped or role-bearing user-defined tokens (flint-tiny-code's <fim_prefix>,
// Phi-3's </s>) need parse_special, so user text can never inject them.
#pragma once
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace flint {

struct Vocab;

struct Fragment {
    std::string_view text;  // raw text when token < 0
    TokenId token = -1;
};

// Ids of the tokens that parse_special recognises, longest text first.
std::vector<TokenId> special_token_ids(const Vocab& vocab);
// The subset recognised even without parse_special (plain-text user-defined tokens), longest first.
std::vector<TokenId> textual_token_ids(const Vocab& vocab);

// Which occurrences may become tokens: in a prompt assembled from markup and plain parts, the textual
// tokens anywhere (across a part boundary too, as in the whole text) and the others only inside markup.
// Offsets are into the text given to split_special.
struct SpecialScope {
    std::span<const TokenId> textual;                    // sorted by id
    std::span<const std::pair<size_t, size_t>> markup;  // [begin, end) ranges, sorted, not touching
    bool allows(TokenId id, size_t begin, size_t end) const;
};

// Splits `text` into raw-text fragments and special tokens, in order. `specials` from special_token_ids;
// every occurrence counts unless `scope` says otherwise.
void split_special(const Vocab& vocab, const std::vector<TokenId>& specials, std::string_view text,
                   std::vector<Fragment>& out, const SpecialScope* scope = nullptr);

}  // namespace flint
