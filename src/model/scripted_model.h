// flint/model/scripted_model.h — a GGUF whose model writes a given text and then its end-of-sequence token,
// whatever the prompt (what `flint mkmodel --script TEXT` runs). A fixture for driving real clients end to
// end (Codex CLI, the SDKs) through the real engine with an answer known in advance.
//
// How: one llama layer whose weights are all zero (attention and FFN add nothing to the residual stream),
// one-hot token embeddings and an output matrix that maps each of the script's tokens to the next one. The
// next token then depends only on the current one — a chain — with a margin of 64 logits over every other
// token, so greedy decoding and sampling at any temperature up to ~2 write the script. Every token that is
// not in the script leads to its first token; the last leads to end-of-sequence. So the script's tokens
// must be distinct, and a prompt that ends in one of them continues the script from there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/random_model.h"

namespace flint {

struct ScriptedModelOptions {
    std::string script;           // the text every answer is
    uint32_t ctx = 32768;         // context_length to record (long agent prompts fit; the KV is tiny)
    TokenizerFiles tokenizer = default_tokenizer_files();
};

struct ScriptedModelResult {
    std::vector<int32_t> tokens;  // the script, tokenized
    int32_t end_token = -1;       // what follows it
    uint32_t n_vocab = 0;
    uint32_t n_embd = 0;
};

// The script is tokenized as plain text (special-token markup in it stays text). Throws flint::Error when it
// is empty, repeats a token, or the tokenizer has no end-of-sequence token.
ScriptedModelResult write_scripted_model(const ScriptedModelOptions& o, const std::string& out_path);

}  // namespace flint
