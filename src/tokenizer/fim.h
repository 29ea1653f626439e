// flint/tokenizer/fim.h — fill-in-the-middle prompts for code completion at a cursor.
//
// PSM order, the layout FIM code models are trained on:
//     [BOS] <fim_prefix> prefix <fim_suffix> suffix <fim_middle>      → the model writes the middle
// with the vocab's own FIM tokens (Qwen2.5-Coder: <|fim_prefix|>…; StarCoder and flint-tiny-code:
// <fim_prefix>…; found from tokenizer.ggml.fim_* ids or by name). BOS is added when the model adds one.
//
// The functions return token ids, not text: the user's code is encoded with parse_special = false, so
// code that happens to contain "<|fim_prefix|>" stays text and cannot inject control tokens. Each part is
// encoded on its own (as the reference engine's infill does), so for SPM vocabs each part gets the
// add_space_prefix space.
// fim_prompt() returns the same prompt as text for display and logs only.
//
// `middle` (optional) is text the middle already starts with, placed after <fim_middle>: the model goes on
// from it. Editor completion puts the cursor's line there (split_cursor_line, as llama.vim does with
// llama.cpp's infill): while the user types within a line only that text changes, so the prompt up to and
// including <fim_middle> — the whole suffix too — stays the same and a prefix cache covers it.
//
// Repo-level (Qwen2.5-Coder): <|repo_name|>name\n then per file <|file_sep|>path\ncontent, and the file
// being edited last as <|file_sep|>path\n followed by its FIM prompt. Needs <|repo_name|>/<|file_sep|>.
// Every function throws flint::Error naming the missing tokens when the vocab lacks them.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace flint {

bool has_fim(const Tokenizer& tok);       // prefix, suffix and middle tokens all present
bool has_repo_fim(const Tokenizer& tok);  // and <|repo_name|>, <|file_sep|>

std::vector<TokenId> fim_tokens(const Tokenizer& tok, std::string_view prefix, std::string_view suffix,
                                std::string_view middle = {});

// The text before a cursor split after its last '\n': the lines above, and the cursor's line up to the
// cursor (all of it when there is no newline).
struct CursorSplit {
    std::string_view above, line_head;
};
CursorSplit split_cursor_line(std::string_view prefix);

struct RepoFile {
    std::string path;
    std::string content;
};
// <|repo_name|>name\n<|file_sep|>path\ncontent… for the context files (no FIM part, no BOS).
std::vector<TokenId> repo_context_tokens(const Tokenizer& tok, std::string_view repo_name, std::span<const RepoFile> files);
// Repo context, then <|file_sep|>path\n and the FIM prompt for the file being edited. BOS as fim_tokens.
std::vector<TokenId> repo_fim_tokens(const Tokenizer& tok, std::string_view repo_name, std::span<const RepoFile> files,
                                     std::string_view path, std::string_view prefix, std::string_view suffix,
                                     std::string_view middle = {});

// Text form of fim_tokens (special tokens written out, no BOS) — for display and logs; do not encode it
// with parse_special = true if prefix/suffix come from a user.
std::string fim_prompt(const Tokenizer& tok, std::string_view prefix, std::string_view suffix, std::string_view middle = {});

}  // namespace flint
