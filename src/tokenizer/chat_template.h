// flint/tokenizer/chat_template.h — conversation → prompt text, for the chat formats small code models use.
//
// Native formatting, no Jinja engine: the model's tokenizer.chat_template is only *recognised*
// (detect_chat_format) and the matching format is written by hand here, as parts (render_chat) whose
// markup holds the special tokens and whose plain text is the messages' (see render_chat).
//
// Roles: system, developer (treated as system), user, assistant, tool.
// A model without a template (e.g. stories260K, a plain story model) detects as Unknown: callers must
// either take a format from the user (chat_format_from_name) or refuse chat and use plain completion —
// resolve_chat_format() does that with a clear error. Guessing ChatML would feed such a model tokens it
// has never seen.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace flint {

enum class ChatFormat { ChatML, Llama3, Llama2, Zephyr, Unknown };

struct ChatMessage {
    std::string role;     // system | developer | user | assistant | tool
    std::string content;  // plain text: special-token spellings in it stay text when encoded
    // When not empty, the content instead: plain text and markup (e.g. the server's <tool_call> wrapping
    // around a call's arguments), in order.
    std::vector<TextPart> parts = {};
};

// Recognises a Jinja chat template by its marker tokens. "" (no template) → Unknown.
ChatFormat detect_chat_format(std::string_view jinja_template);
// "chatml", "llama3", "llama2", "zephyr" (case-insensitive) → format; anything else → nullopt.
std::optional<ChatFormat> chat_format_from_name(std::string_view name);
std::string_view chat_format_name(ChatFormat f);

// The override when given (error if it is not a format name), else the detected format; throws
// flint::Error when neither gives a known format ("no chat template … pass --chat-format …").
ChatFormat resolve_chat_format(std::string_view jinja_template, std::string_view override_name);

// The system prompt a template inserts when the conversation has none (Qwen2.5: "You are Qwen, created
// by Alibaba Cloud. You are a helpful assistant."), or "" when it inserts none.
std::string chat_default_system(std::string_view jinja_template);

// The prompt for `messages` as parts: the format's markup, and the contents as plain text (or their own
// parts). Encode it with Tokenizer::encode(parts, tokenizer.add_bos()): the formats below never write the
// leading BOS themselves. A message can then not open or close a turn by writing "<|im_end|>": only the
// format's markup becomes special tokens.
std::vector<TextPart> render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                                  std::string_view default_system = {});

// The prompt text for `messages` (render_chat's parts joined); with add_generation_prompt it ends with the
// assistant's turn header.
// Throws flint::Error for Unknown or an unknown role.
std::string apply_chat_template(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt);
// Same, inserting `default_system` as the system message when the conversation starts without one
// (pass chat_default_system(template) to reproduce templates such as Qwen2.5's exactly).
std::string apply_chat_template(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                                std::string_view default_system);

}  // namespace flint
