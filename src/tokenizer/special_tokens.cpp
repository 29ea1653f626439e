#include "tokenizer/special_tokens.h"

#include <algorithm>

#include "tokenizer/vocab.h"

namespace flint {

std::vector<TokenId> special_token_ids(const Vocab& vocab) {
    std::vector<TokenId> ids;
    for (TokenId id = 0; id < vocab.size(); ++id) {
        const TokenType t = vocab.type[id];
        if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) && !vocab.text[id].empty())
            ids.push_back(id);
    }
    std::stable_sort(ids.begin(), ids.end(),
                     [&](TokenId a, TokenId b) { return vocab.text[a].size() > vocab.text[b].size(); });
    return ids;
}

std::vector<TokenId> textual_token_ids(const Vocab& vocab) {
    auto has_role = [&](TokenId id) {
        for (TokenId r : {vocab.bos, vocab.eos, vocab.eot, vocab.eom, vocab.unk, vocab.pad, vocab.fim_pre, vocab.fim_suf,
                          vocab.fim_mid, vocab.fim_pad, vocab.fim_rep, vocab.fim_sep})
            if (r == id) return true;
        return std::binary_search(vocab.eog.begin(), vocab.eog.end(), id);
    };
    auto markup = [](std::string_view s) {
        return s.size() >= 3 && ((s.front() == '<' && s.back() == '>') || (s.front() == '[' && s.back() == ']'));
    };
    std::vector<TokenId> ids;
    for (TokenId id : special_token_ids(vocab))
        if (vocab.type[id] == TokenType::UserDefined && !has_role(id) && !markup(vocab.text[id])) ids.push_back(id);
    return ids;
}

bool SpecialScope::allows(TokenId id, size_t begin, size_t end) const {
    if (std::binary_search(textual.begin(), textual.end(), id)) return true;
    // The last range starting at or before `begin` must reach `end`.
    auto r = std::upper_bound(markup.begin(), markup.end(), begin,
                              [](size_t at, const std::pair<size_t, size_t>& m) { return at < m.first; });
    return r != markup.begin() && std::prev(r)->second >= end;
}

void split_special(const Vocab& vocab, const std::vector<TokenId>& specials, std::string_view text,
                   std::vector<Fragment>& out, const SpecialScope* scope) {
    std::vector<Fragment> cur{Fragment{text, -1}}, next;
    for (TokenId id : specials) {
        const std::string_view needle = vocab.text[id];
        bool found = false;
        for (const Fragment& f : cur)
            if (f.token < 0 && f.text.find(needle) != std::string_view::npos) {
                found = true;
                break;
            }
        if (!found) continue;
        next.clear();
        for (const Fragment& f : cur) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            std::string_view rest = f.text;
            for (size_t from = 0, at; (at = rest.find(needle, from)) != std::string_view::npos;) {
                const size_t begin = static_cast<size_t>(rest.data() + at - text.data());
                if (scope && !scope->allows(id, begin, begin + needle.size())) {
                    from = at + 1;  // not here; an overlapping occurrence may be
                    continue;
                }
                if (at > 0) next.push_back(Fragment{rest.substr(0, at), -1});
                next.push_back(Fragment{needle, id});
                rest.remove_prefix(at + needle.size());
                from = 0;
            }
            if (!rest.empty()) next.push_back(Fragment{rest, -1});
        }
        cur.swap(next);
    }
    for (const Fragment& f : cur)
        if (f.token >= 0 || !f.text.empty()) out.push_back(f);
}

}  // namespace flint
