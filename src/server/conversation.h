// flint/server/conversation.h — where a conversation becomes prompt tokens.
//
// Items (Responses input items, or Chat Completions messages converted to items) are rendered with the
// model's chat format, then encoded. A continuation (previous_response_id) never re-tokenises earlier
// turns: its prompt is the previous response's exact token history (prompt + generated tokens, so the
// runtime's prefix cache finds all of it) followed by the tokens of the newly rendered turns only.
//
// Models without a chat template (stories260K) use the plain-text fallback: the message texts joined with
// "\n", no role markers, BOS added — the model simply continues the text. Documented in README (API).
//
// What clients wrote (message text, call arguments, tool outputs, tool signatures) is encoded as plain text:
// "<|im_end|>" in a pasted file stays text and cannot end the turn; only the format's markup and the tool
// tags around that text become special tokens (tokenizer/chat_template.h, render_chat).
//
// Function tools follow Qwen2.5's convention: tool signatures in the system message inside <tools>,
// calls written by the model as <tool_call>{"name":…,"arguments":…}</tool_call>, results fed back as a
// user turn wrapped in <tool_response>.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace flint::server {

struct ModelEntry;

struct InputItem {
    enum class Kind { Message, FunctionCall, FunctionCallOutput };
    Kind kind = Kind::Message;
    std::string role;       // message: system | developer | user | assistant
    std::string text;       // message: its text parts joined
    std::string call_id;    // function_call, function_call_output
    std::string name;       // function_call
    std::string arguments;  // function_call (JSON text)
    std::string output;     // function_call_output

    static InputItem message(std::string role, std::string text) {
        InputItem it;
        it.role = std::move(role);
        it.text = std::move(text);
        return it;
    }
};

// What a continuation needs from the response it continues.
struct History {
    std::string model;
    std::vector<int32_t> tokens;               // prompt + output of that response
    std::optional<std::string> instructions;   // to avoid repeating identical instructions
};

struct PromptParts {
    std::optional<std::string> instructions;
    std::span<const InputItem> items;
    const nlohmann::json* tools = nullptr;     // array of function tools, or null
};

// The prompt tokens. Throws ApiError for an unusable conversation. `spare`: room to reserve beyond them, for
// the answer's tokens that are appended to make the response's history (a continuation is then built with
// one copy of the conversation, and finishing adds none).
std::vector<int32_t> build_prompt(const ModelEntry& m, const PromptParts& p, const History* previous, size_t spare = 0);

// truncation "auto" for a continued conversation: removes at least `excess` tokens from the oldest turns of
// `history`, keeping its first turn (the system prompt, or the first message) and its last exchange. Chat formats drop whole turns,
// found by the format's turn-opening special token (ChatML <|im_start|>, Llama 3 <|start_header_id|>, Zephyr's
// role tokens, Llama 2's BOS); a plain-text model has no turns, so its oldest tokens after BOS go. Removes as
// much as it can when that is less than `excess`; returns false when nothing could be removed.
bool drop_oldest_turns(const ModelEntry& m, History& history, size_t excess);

// The <tools> system block for a tools array (empty when there are no function tools): its tags and
// instructions as markup, the client's signatures as plain text.
std::vector<TextPart> render_tools(const nlohmann::json& tools);

// tool_choice → the start of the answer the server writes for the model, so that it must call: "required"
// or allowed_tools with mode "required" → `<tool_call>\n{"name": "` (the model picks the function), a named
// function (Responses {"type":"function","name":N}, Chat {"type":"function","function":{"name":N}}) → the
// same up to `"arguments":`. "auto", "none", allowed_tools with mode "auto", or absent → "". The prefix is
// appended to the prompt and fed to the tool-call parser ahead of the model's text. Throws ApiError (param
// tool_choice…) for an unknown form, a function not among the tools, or a call required with no function
// tool to call.
std::string forced_call_prefix(const nlohmann::json& tool_choice, const nlohmann::json& tools);

// The request's tools the model may call this turn: none for "none"; for allowed_tools (Responses
// {"type":"allowed_tools","mode":…,"tools":[…]}, Chat the same under "allowed_tools") the function tools
// it names, with their full definitions (entries of other types name no function flint has, and are
// skipped); otherwise all of them. All the tools stay in the prompt, so a client can keep one tools list —
// and the prompt's cached prefix — and narrow the choice turn by turn. Throws as forced_call_prefix does.
nlohmann::json callable_tools(const nlohmann::json& tool_choice, const nlohmann::json& tools);

// Qwen2.5's tool-call markup, around a {"name":…,"arguments":…} object.
constexpr const char* kToolOpen = "<tool_call>";
constexpr const char* kToolClose = "</tool_call>";

// Tool calls parsed out of generated text: the text outside the calls (a malformed call's included), and
// each call.
struct ParsedToolCall {
    std::string name;
    std::string arguments;  // JSON text
};
struct ParsedOutput {
    std::string text;
    std::vector<ParsedToolCall> calls;
};
ParsedOutput parse_tool_calls(const std::string& text);

}  // namespace flint::server
