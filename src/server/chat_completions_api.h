// flint/server/chat_completions_api.h — POST /v1/chat/completions and the legacy POST /v1/completions
// at the edge: request JSON → native structs, and the completion / chunk objects (PROTOCOL.md §4).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/request.h"
#include "server/conversation.h"
#include "tokenizer/fim.h"
#include "tokenizer/tokenizer.h"

namespace flint::server {

using json = nlohmann::json;

// Sampling and limits shared by both endpoints.
struct CompletionParams {
    std::string model;
    bool stream = false;
    bool include_usage = false;
    std::optional<int64_t> max_tokens;
    std::optional<double> temperature, top_p, presence_penalty, frequency_penalty;
    std::optional<uint64_t> seed;
    std::vector<std::string> stop;
    bool logprobs = false;
    int top_logprobs = 0;
    std::optional<std::string> prediction;
    std::shared_ptr<const JsonSchema> format;  // response_format json_object / json_schema (null: text)
    std::vector<std::pair<int32_t, float>> logit_bias;  // token id → bias (-100 → banned: -inf)
    int n = 1;                                          // choices to generate (1..kMaxChoices)
};
constexpr int kMaxChoices = 16;

struct ChatRequest {
    CompletionParams p;
    std::vector<InputItem> messages;  // system messages included, in order
    json tools = nullptr;
    json tool_choice = "auto";
    bool parallel_tool_calls = true;  // false: at most one call per answer (the first)
    // The deprecated `functions` / `function_call` form, read into tools / tool_choice: the answer's call is
    // then the message's `function_call` (finish_reason "function_call"), one at most.
    bool legacy_functions = false;
};
ChatRequest parse_chat_request(const json& body);

struct CompletionRequest {
    CompletionParams p;
    std::string prompt;
    std::optional<std::vector<int32_t>> prompt_tokens;  // the prompt given as token ids (used as they are)
    std::optional<std::string> suffix;  // fill-in-the-middle when present
    bool echo = false;
    // Repo-level fill-in-the-middle (flint extension; Qwen2.5-Coder's <|repo_name|> / <|file_sep|>): the
    // repository's name, the path of the file being completed, other files before it.
    std::optional<std::string> repo_name, path;
    std::vector<RepoFile> context_files;
    // (flint extension) How the prompt's last lines go after <fim_middle> as the start of the middle
    // (tokenizer/fim.h split_cursor_band), so keystrokes reuse the cached suffix: the band of lines from the
    // last multiple of this many lines through the cursor's. 1: the cursor's line; 0: plain PSM. Absent:
    // the server's --fim-band-lines.
    std::optional<int> fim_band_lines;
    // The first repo-level field given (the one an error names), nullptr when none is: plain FIM.
    const char* repo_field() const {
        return path ? "path" : repo_name ? "repo_name" : !context_files.empty() ? "context_files" : nullptr;
    }
};
CompletionRequest parse_completion_request(const json& body);

json chat_usage(const Usage& u);
// "stop" | "length" | "tool_calls" (and "stop" for a cancelled stream, which has no better name).
std::string finish_reason_string(FinishReason f, bool tool_calls);

// Chat objects. `tool_calls` (may be empty) are in the Chat shape [{id,type,function:{name,arguments}}].
// A completion holds one choice per `n`, each made by chat_choice; a chunk carries one choice's delta.
json chat_choice(int index, const std::string& content, const json& tool_calls, const std::string& finish_reason, const json& logprobs);
json chat_completion_object(const std::string& id, const std::string& model, int64_t created, const json& choices, const Usage& u);
json chat_chunk(const std::string& id, const std::string& model, int64_t created, int index, const json& delta,
                const json& finish_reason, const json& logprobs);
json chat_usage_chunk(const std::string& id, const std::string& model, int64_t created, const Usage& u);

// Legacy completions: `logprobs` null, or the legacy object below.
json completion_choice(int index, const std::string& text, const json& finish_reason, const json& logprobs);
json completion_object(const std::string& id, const std::string& model, int64_t created, const json& choices, const Usage& u);
json completion_chunk(const std::string& id, const std::string& model, int64_t created, int index, const std::string& text,
                      const json& finish_reason, const json& logprobs = nullptr);

// The legacy Completions logprobs object: parallel arrays over a choice's (or a chunk's) tokens —
// tokens (their text), token_logprobs, top_logprobs ({text: logprob} of the top N, the chosen token
// included) and text_offset (where each token's text starts in the choice's text, echoed prompt included).
json legacy_logprobs();
void add_legacy_logprob(json& lp, const Tokenizer& tok, const Event& ev, size_t text_offset);

}  // namespace flint::server
