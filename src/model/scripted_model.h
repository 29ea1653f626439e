// flint/model/scripted_model.h — a GGUF whose model writes a given text and then its end-of-sequence token,
// whatever the prompt; optionally a second text once a marker token is anywhere in its context (what
// `flint mkmodel --script TEXT [--then TEXT --marker TOKEN]` runs). A fixture for driving real clients end
// to end through the real engine with answers known in advance — e.g. Codex CLI's agent loop: a tool call
// first, then, once the tool's output (Qwen's <tool_response>) is in the conversation, a final answer.
//
// How: one llama layer, one-hot token embeddings (a "place" per script token, one shared by every other
// token) and an output matrix that maps each script token to the next, so the next token depends on the
// current one only — a chain. Any other token leads to the first script's first token; each script's last
// token leads to end-of-sequence. The FFN and all attention heads but one are zero. That head (only with a
// second script) sets a "seen" flag in the residual stream when the marker token is anywhere in the
// context — a constant query against a key only the marker has, in dimensions RoPE leaves alone — and the
// flag turns "any other token" towards the second script's start instead. Every choice wins by >= 32
// logits, so greedy decoding and sampling at any temperature up to ~2 follow the script. Hence: the
// scripts' tokens must be distinct (within and across the two), and a prompt that ends in one of them
// continues that script from there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/random_model.h"

namespace flint {

struct ScriptedModelOptions {
    std::string script;           // the text every answer is (special-token markup such as <tool_call> is parsed)
    std::string then = {};        // optional: the text once `marker` is in the context
    std::string marker = {};      // one token's text (with `then`)
    uint32_t ctx = 32768;         // context_length to record (long agent prompts fit; the KV is tiny)
    TokenizerFiles tokenizer = default_tokenizer_files();
};

struct ScriptedModelResult {
    std::vector<int32_t> tokens;       // the script, tokenized
    std::vector<int32_t> then_tokens;  // the second script (empty without one)
    int32_t marker = -1;
    int32_t end_token = -1;            // what follows each script
    uint32_t n_vocab = 0;
    uint32_t n_embd = 0;
};

// Throws flint::Error when a script is empty, repeats a token (or shares one with the other script, or
// holds the marker or the end token), the marker is not one token, or the tokenizer has no
// end-of-sequence token.
ScriptedModelResult write_scripted_model(const ScriptedModelOptions& o, const std::string& out_path);

}  // namespace flint
