#include "tokenizer/fim.h"

#include "util/error.h"

namespace flint {
namespace {

void require_fim(const Tokenizer& tok) {
    if (has_fim(tok)) return;
    std::string missing;
    if (tok.fim_prefix() < 0) missing += " prefix";
    if (tok.fim_suffix() < 0) missing += " suffix";
    if (tok.fim_middle() < 0) missing += " middle";
    fail("this model's vocabulary has no fill-in-the-middle tokens (missing:", missing,
         "; looked for tokenizer.ggml.fim_*_token_id and <|fim_prefix|>/<fim_prefix>-style names): it cannot do FIM");
}

void require_repo(const Tokenizer& tok) {
    if (tok.fim_repo() >= 0 && tok.fim_file_sep() >= 0) return;
    fail("this model's vocabulary has no repo-level tokens (<|repo_name|>, <|file_sep|>): repo-level prompts need them");
}

void append_text(const Tokenizer& tok, std::string_view text, std::vector<TokenId>& out) {
    const auto ids = tok.encode(text, false, /*parse_special=*/false);
    out.insert(out.end(), ids.begin(), ids.end());
}

void append_fim(const Tokenizer& tok, std::string_view prefix, std::string_view suffix, std::string_view middle,
                std::vector<TokenId>& out) {
    out.push_back(tok.fim_prefix());
    append_text(tok, prefix, out);
    out.push_back(tok.fim_suffix());
    append_text(tok, suffix, out);
    out.push_back(tok.fim_middle());
    if (!middle.empty()) append_text(tok, middle, out);
}

}  // namespace

bool has_fim(const Tokenizer& tok) { return tok.fim_prefix() >= 0 && tok.fim_suffix() >= 0 && tok.fim_middle() >= 0; }
bool has_repo_fim(const Tokenizer& tok) { return has_fim(tok) && tok.fim_repo() >= 0 && tok.fim_file_sep() >= 0; }

std::vector<TokenId> fim_tokens(const Tokenizer& tok, std::string_view prefix, std::string_view suffix,
                                std::string_view middle) {
    require_fim(tok);
    std::vector<TokenId> out;
    if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
    append_fim(tok, prefix, suffix, middle, out);
    return out;
}

CursorSplit split_cursor_band(std::string_view prefix, int band_lines) {
    if (band_lines <= 0) return {prefix, {}};
    size_t at = 0, line = 0;  // at: where the last line whose index is a multiple of band_lines starts
    for (size_t i = 0; i < prefix.size(); ++i)
        if (prefix[i] == '\n' && ++line % static_cast<size_t>(band_lines) == 0) at = i + 1;
    return {prefix.substr(0, at), prefix.substr(at)};
}

std::vector<TokenId> repo_context_tokens(const Tokenizer& tok, std::string_view repo_name, std::span<const RepoFile> files) {
    require_repo(tok);
    std::vector<TokenId> out;
    out.push_back(tok.fim_repo());
    append_text(tok, std::string(repo_name) + "\n", out);
    for (const RepoFile& f : files) {
        out.push_back(tok.fim_file_sep());
        append_text(tok, f.path + "\n" + f.content, out);
    }
    return out;
}

std::vector<TokenId> repo_fim_tokens(const Tokenizer& tok, std::string_view repo_name, std::span<const RepoFile> files,
                                     std::string_view path, std::string_view prefix, std::string_view suffix,
                                     std::string_view middle) {
    require_fim(tok);
    std::vector<TokenId> out;
    if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
    const auto ctx = repo_context_tokens(tok, repo_name, files);
    out.insert(out.end(), ctx.begin(), ctx.end());
    out.push_back(tok.fim_file_sep());
    append_text(tok, std::string(path) + "\n", out);
    append_fim(tok, prefix, suffix, middle, out);
    return out;
}

std::string fim_prompt(const Tokenizer& tok, std::string_view prefix, std::string_view suffix, std::string_view middle) {
    require_fim(tok);
    std::string s = tok.token_text(tok.fim_prefix());
    s += prefix;
    s += tok.token_text(tok.fim_suffix());
    s += suffix;
    s += tok.token_text(tok.fim_middle());
    s += middle;
    return s;
}

}  // namespace flint
