#include "tokenizer/chat_template.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "util/error.h"

namespace flint {
namespace {

bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return s;
}

enum class Role { System, User, Assistant, Tool };

Role parse_role(std::string_view r) {
    if (r == "system" || r == "developer") return Role::System;
    if (r == "user") return Role::User;
    if (r == "assistant") return Role::Assistant;
    if (r == "tool") return Role::Tool;
    fail("chat message role \"", r, "\" is not one of system, developer, user, assistant, tool");
}

struct Msg {
    Role role;
    std::string_view content;
};

std::vector<Msg> normalise(std::span<const ChatMessage> messages, std::string_view default_system) {
    std::vector<Msg> out;
    if (!default_system.empty() && (messages.empty() || parse_role(messages[0].role) != Role::System))
        out.push_back(Msg{Role::System, default_system});
    for (const auto& m : messages) out.push_back(Msg{parse_role(m.role), m.content});
    return out;
}

// <|im_start|>role\ncontent<|im_end|>\n — Qwen2.5's template, including its tool-result wrapping:
// consecutive tool messages share one user turn, each inside <tool_response> tags.
std::string chatml(const std::vector<Msg>& msgs, bool gen) {
    std::string s;
    for (size_t i = 0; i < msgs.size(); ++i) {
        const Msg& m = msgs[i];
        if (m.role == Role::Tool) {
            if (i == 0 || msgs[i - 1].role != Role::Tool) s += "<|im_start|>user";
            s += "\n<tool_response>\n";
            s += m.content;
            s += "\n</tool_response>";
            if (i + 1 == msgs.size() || msgs[i + 1].role != Role::Tool) s += "<|im_end|>\n";
            continue;
        }
        s += "<|im_start|>";
        s += m.role == Role::System ? "system" : m.role == Role::User ? "user" : "assistant";
        s += "\n";
        s += m.content;
        s += "<|im_end|>\n";
    }
    if (gen) s += "<|im_start|>assistant\n";
    return s;
}

// Meta's Llama 3 / 3.1 template (content trimmed; tool results use the "ipython" role). The leading
// <|begin_of_text|> is the BOS the tokenizer adds.
std::string llama3(const std::vector<Msg>& msgs, bool gen) {
    std::string s;
    for (const Msg& m : msgs) {
        s += "<|start_header_id|>";
        s += m.role == Role::System ? "system" : m.role == Role::User ? "user" : m.role == Role::Assistant ? "assistant" : "ipython";
        s += "<|end_header_id|>\n\n";
        s += trim(m.content);
        s += "<|eot_id|>";
    }
    if (gen) s += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return s;
}

// Meta's Llama 2 chat template: the system prompt folds into the first user turn inside <<SYS>>; every
// exchange is "[INST] user [/INST] assistant </s>", and each later turn opens with <s>. The first <s> is
// the BOS the tokenizer adds. The prompt ends with "[/INST]", so add_generation_prompt changes nothing.
// Tool results are sent as user turns (Llama 2 has no tool role).
std::string llama2(const std::vector<Msg>& msgs) {
    std::string s, system;
    bool first_turn = true;
    size_t i = 0;
    if (!msgs.empty() && msgs[0].role == Role::System) system = std::string(trim(msgs[i++].content));
    for (; i < msgs.size(); ++i) {
        const Msg& m = msgs[i];
        if (m.role == Role::Assistant) {
            s += " ";
            s += trim(m.content);
            s += " </s>";
            continue;
        }
        if (m.role == Role::System) fail("llama2 chat format: a system message is only allowed first");
        if (!first_turn) s += "<s>";
        s += "[INST] ";
        if (first_turn && !system.empty()) s += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
        s += trim(m.content);
        s += " [/INST]";
        first_turn = false;
    }
    return s;
}

// HuggingFaceH4/zephyr: "<|role|>\ncontent</s>\n" per message; tool results as user turns.
std::string zephyr(const std::vector<Msg>& msgs, bool gen) {
    std::string s;
    for (const Msg& m : msgs) {
        s += m.role == Role::System ? "<|system|>\n" : m.role == Role::Assistant ? "<|assistant|>\n" : "<|user|>\n";
        s += m.content;
        s += "</s>\n";
    }
    if (gen) s += "<|assistant|>\n";
    return s;
}

}  // namespace

ChatFormat detect_chat_format(std::string_view t) {
    if (t.empty()) return ChatFormat::Unknown;
    if (contains(t, "<|im_start|>")) return ChatFormat::ChatML;
    if (contains(t, "<|start_header_id|>") && contains(t, "<|eot_id|>")) return ChatFormat::Llama3;
    if (contains(t, "[INST]")) return ChatFormat::Llama2;
    // Zephyr ends turns with the eos token; Phi-3 uses the same role tags but ends turns with <|end|>.
    if (contains(t, "<|user|>") && contains(t, "<|assistant|>") && !contains(t, "<|end|>")) return ChatFormat::Zephyr;
    return ChatFormat::Unknown;
}

std::optional<ChatFormat> chat_format_from_name(std::string_view name) {
    std::string n(name);
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (n == "chatml") return ChatFormat::ChatML;
    if (n == "llama3") return ChatFormat::Llama3;
    if (n == "llama2") return ChatFormat::Llama2;
    if (n == "zephyr") return ChatFormat::Zephyr;
    return std::nullopt;
}

std::string_view chat_format_name(ChatFormat f) {
    switch (f) {
        case ChatFormat::ChatML: return "chatml";
        case ChatFormat::Llama3: return "llama3";
        case ChatFormat::Llama2: return "llama2";
        case ChatFormat::Zephyr: return "zephyr";
        case ChatFormat::Unknown: break;
    }
    return "unknown";
}

ChatFormat resolve_chat_format(std::string_view jinja_template, std::string_view override_name) {
    if (!override_name.empty()) {
        if (auto f = chat_format_from_name(override_name)) return *f;
        fail("unknown chat format \"", override_name, "\" (known: chatml, llama3, llama2, zephyr)");
    }
    const ChatFormat f = detect_chat_format(jinja_template);
    if (f != ChatFormat::Unknown) return f;
    if (jinja_template.empty())
        fail("the model has no chat template (tokenizer.chat_template is absent), so it may not be a chat model; "
             "pass a chat format (chatml, llama3, llama2, zephyr) to force one, or use plain completion");
    fail("the model's chat template is not one flint recognises; pass a chat format (chatml, llama3, llama2, zephyr)");
}

std::string chat_default_system(std::string_view t) {
    // Qwen2.5 writes its fallback as a literal: '<|im_start|>system\nYou are Qwen…<|im_end|>\n'.
    const std::string_view open = "'<|im_start|>system\\n";
    for (size_t at = t.find(open); at != std::string_view::npos; at = t.find(open, at + 1)) {
        const size_t start = at + open.size();
        const size_t end = t.find("<|im_end|>", start);
        if (end == std::string_view::npos) break;
        const std::string_view body = t.substr(start, end - start);
        if (!body.empty() && body.find_first_of("'+{}\\") == std::string_view::npos) return std::string(body);
    }
    return {};
}

std::string apply_chat_template(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt) {
    return apply_chat_template(format, messages, add_generation_prompt, {});
}

std::string apply_chat_template(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                                std::string_view default_system) {
    const auto msgs = normalise(messages, default_system);
    switch (format) {
        case ChatFormat::ChatML: return chatml(msgs, add_generation_prompt);
        case ChatFormat::Llama3: return llama3(msgs, add_generation_prompt);
        case ChatFormat::Llama2: return llama2(msgs);
        case ChatFormat::Zephyr: return zephyr(msgs, add_generation_prompt);
        case ChatFormat::Unknown: break;
    }
    fail("apply_chat_template: no chat format (the model's template was not recognised; choose chatml, llama3, "
         "llama2 or zephyr)");
}

}  // namespace flint
