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
// from it (it is trained to predict each middle token from the ones before, so this is in distribution).
// Editor completion puts the last lines before the cursor there (split_cursor_band; llama.vim does it with
// the cursor's line): while the user types, only that text changes, so the prompt through <fim_middle> —
// the whole suffix too — stays the same and a prefix cache covers it. A band of several lines keeps that
// true across Enter: typing on, the lines above the band and the suffix below the cursor do not change.
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

// The text before a cursor split into the lines above a band and the band: the lines from the last line
// whose index (0-based, counted from the text's start) is a multiple of band_lines, through the cursor's
// line up to the cursor. band_lines 1: the cursor's line alone; 0: no band (all of it above).
struct CursorSplit {
    std::string_view above, band;
};
CursorSplit split_cursor_band(std::string_view prefix, int band_lines);

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
