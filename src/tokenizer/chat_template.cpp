#include "tokenizer/chat_template.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "util/error.h"

namespace flint {
namespace {

bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

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
    std::span<const TextPart> parts;  // when not empty, the content
    std::string_view content;         // plain text otherwise
};

std::vector<Msg> normalise(std::span<const ChatMessage> messages, std::string_view default_system) {
    std::vector<Msg> out;
    if (!default_system.empty() && (messages.empty() || parse_role(messages[0].role) != Role::System))
        out.push_back(Msg{Role::System, {}, default_system});
    for (const auto& m : messages) out.push_back(Msg{parse_role(m.role), m.parts, m.content});
    return out;
}

// A message's content as (text, markup) pieces; `trimmed`: without leading and trailing whitespace, which
// Llama's templates strip (through pieces that are all whitespace).
using Pieces = std::vector<std::pair<std::string_view, bool>>;
Pieces content_of(const Msg& m, bool trimmed) {
    Pieces pieces;
    if (m.parts.empty()) pieces.emplace_back(m.content, false);
    for (const TextPart& p : m.parts) pieces.emplace_back(p.text, p.markup);
    if (trimmed) {
        auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
        for (auto& [t, mk] : pieces) {
            while (!t.empty() && ws(t.front())) t.remove_prefix(1);
            if (!t.empty()) break;
        }
        for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
            while (!it->first.empty() && ws(it->first.back())) it->first.remove_suffix(1);
            if (!it->first.empty()) break;
        }
    }
    return pieces;
}

// The prompt being written: the format's markup, and the messages' contents as they came (plain text, or
// their own parts). Adjacent pieces of one kind are joined.
class Out {
public:
    void markup(std::string_view s) { add(s, true); }
    void content(const Pieces& pieces) {
        for (const auto& [t, mk] : pieces) add(t, mk);
    }
    void content(const Msg& m, bool trimmed = false) { content(content_of(m, trimmed)); }
    std::vector<TextPart> take() { return std::move(parts_); }

private:
    void add(std::string_view s, bool markup) {
        if (s.empty()) return;
        if (!parts_.empty() && parts_.back().markup == markup) parts_.back().text += s;
        else parts_.push_back(TextPart{std::string(s), markup});
    }
    std::vector<TextPart> parts_;
};

// <|im_start|>role\ncontent<|im_end|>\n — Qwen2.5's template, including its tool-result wrapping:
// consecutive tool messages share one user turn, each inside <tool_response> tags.
void chatml(const std::vector<Msg>& msgs, bool gen, Out& o) {
    for (size_t i = 0; i < msgs.size(); ++i) {
        const Msg& m = msgs[i];
        if (m.role == Role::Tool) {
            if (i == 0 || msgs[i - 1].role != Role::Tool) o.markup("<|im_start|>user");
            o.markup("\n<tool_response>\n");
            o.content(m);
            o.markup("\n</tool_response>");
            if (i + 1 == msgs.size() || msgs[i + 1].role != Role::Tool) o.markup("<|im_end|>\n");
            continue;
        }
        o.markup("<|im_start|>");
        o.markup(m.role == Role::System ? "system" : m.role == Role::User ? "user" : "assistant");
        o.markup("\n");
        o.content(m);
        o.markup("<|im_end|>\n");
    }
    if (gen) o.markup("<|im_start|>assistant\n");
}

// Meta's Llama 3 / 3.1 template (content trimmed; tool results use the "ipython" role). The leading
// <|begin_of_text|> is the BOS the tokenizer adds.
void llama3(const std::vector<Msg>& msgs, bool gen, Out& o) {
    for (const Msg& m : msgs) {
        o.markup("<|start_header_id|>");
        o.markup(m.role == Role::System ? "system" : m.role == Role::User ? "user" : m.role == Role::Assistant ? "assistant" : "ipython");
        o.markup("<|end_header_id|>\n\n");
        o.content(m, true);
        o.markup("<|eot_id|>");
    }
    if (gen) o.markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
}

// Meta's Llama 2 chat template: the system prompt folds into the first user turn inside <<SYS>>; every
// exchange is "[INST] user [/INST] assistant </s>", and each later turn opens with <s>. The first <s> is
// the BOS the tokenizer adds. The prompt ends with "[/INST]", so add_generation_prompt changes nothing.
// Tool results are sent as user turns (Llama 2 has no tool role).
void llama2(const std::vector<Msg>& msgs, Out& o) {
    bool first_turn = true;
    size_t i = 0;
    Pieces system;  // trimmed; empty when there is none or it is all whitespace
    if (!msgs.empty() && msgs[0].role == Role::System) system = content_of(msgs[i++], true);
    std::erase_if(system, [](const auto& p) { return p.first.empty(); });
    for (; i < msgs.size(); ++i) {
        const Msg& m = msgs[i];
        if (m.role == Role::Assistant) {
            o.markup(" ");
            o.content(m, true);
            o.markup(" </s>");
            continue;
        }
        if (m.role == Role::System) fail("llama2 chat format: a system message is only allowed first");
        if (!first_turn) o.markup("<s>");
        o.markup("[INST] ");
        if (first_turn && !system.empty()) {
            o.markup("<<SYS>>\n");
            o.content(system);
            o.markup("\n<</SYS>>\n\n");
        }
        o.content(m, true);
        o.markup(" [/INST]");
        first_turn = false;
    }
}

// HuggingFaceH4/zephyr: "<|role|>\ncontent</s>\n" per message; tool results as user turns.
void zephyr(const std::vector<Msg>& msgs, bool gen, Out& o) {
    for (const Msg& m : msgs) {
        o.markup(m.role == Role::System ? "<|system|>\n" : m.role == Role::Assistant ? "<|assistant|>\n" : "<|user|>\n");
        o.content(m);
        o.markup("</s>\n");
    }
    if (gen) o.markup("<|assistant|>\n");
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

std::vector<TextPart> render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                                  std::string_view default_system) {
    const auto msgs = normalise(messages, default_system);
    Out o;
    switch (format) {
        case ChatFormat::ChatML: chatml(msgs, add_generation_prompt, o); return o.take();
        case ChatFormat::Llama3: llama3(msgs, add_generation_prompt, o); return o.take();
        case ChatFormat::Llama2: llama2(msgs, o); return o.take();
        case ChatFormat::Zephyr: zephyr(msgs, add_generation_prompt, o); return o.take();
        case ChatFormat::Unknown: break;
    }
    fail("apply_chat_template: no chat format (the model's template was not recognised; choose chatml, llama3, "
         "llama2 or zephyr)");
}

std::string apply_chat_template(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt) {
    return apply_chat_template(format, messages, add_generation_prompt, {});
}

std::string apply_chat_template(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                                std::string_view default_system) {
    std::string s;
    for (const TextPart& p : render_chat(format, messages, add_generation_prompt, default_system)) s += p.text;
    return s;
}

}  // namespace flint
