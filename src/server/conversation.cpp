#include "server/conversation.h"

#include <algorithm>

#include "server/errors.h"
#include "server/json_fields.h"
#include "server/model_registry.h"
#include "util/error.h"

namespace flint::server {
namespace {

bool has_content(const ChatMessage& m) { return !m.content.empty() || !m.parts.empty(); }

// A message's content as parts: its plain text, then markup and text appended.
void append(ChatMessage& m, std::string text, bool markup) {
    if (m.parts.empty() && !m.content.empty()) m.parts.push_back({std::move(m.content), false});
    m.content.clear();
    m.parts.push_back({std::move(text), markup});
}

// <tool_call>\n{"name":…,"arguments":…}\n</tool_call>: the tags are markup, the call (the client's) is text.
void append_tool_call(ChatMessage& m, const InputItem& it) {
    nlohmann::json args = nlohmann::json::parse(it.arguments, nullptr, false);
    nlohmann::json call = {{"name", it.name}, {"arguments", args.is_discarded() ? nlohmann::json(it.arguments) : args}};
    append(m, std::string(kToolOpen) + "\n", true);
    append(m, call.dump(), false);
    append(m, std::string("\n") + kToolClose, true);
}

// Items → chat messages: function calls join the assistant turn they belong to, function outputs become
// one user turn of <tool_response> blocks (Qwen2.5's convention). What clients wrote is plain text, so it
// cannot open or close turns; the tool tags around it are markup.
std::vector<ChatMessage> to_messages(std::span<const InputItem> items) {
    std::vector<ChatMessage> out;
    auto last_is = [&](const char* role) { return !out.empty() && out.back().role == role; };
    bool last_was_output = false;
    for (const InputItem& it : items) {
        switch (it.kind) {
        case InputItem::Kind::Message:
            out.push_back({it.role == "developer" ? "system" : it.role, it.text});
            last_was_output = false;
            break;
        case InputItem::Kind::FunctionCall:
            if (last_is("assistant")) {
                if (has_content(out.back())) append(out.back(), "\n", false);
            } else {
                out.push_back({"assistant", ""});
            }
            append_tool_call(out.back(), it);
            last_was_output = false;
            break;
        case InputItem::Kind::FunctionCallOutput: {
            if (last_was_output) append(out.back(), "\n", false);
            else out.push_back({"user", ""});
            append(out.back(), "<tool_response>\n", true);
            append(out.back(), it.output, false);
            append(out.back(), "\n</tool_response>", true);
            last_was_output = true;
            break;
        }
        }
    }
    return out;
}

// What the format writes after an assistant message's text (ChatML: "<|im_end|>\n"): appended to a
// previous response's tokens before the next turn, so the continuation reads as the template would.
std::string end_of_assistant_turn(ChatFormat f) {
    const std::string mark = "\x01\x02";
    std::vector<ChatMessage> msgs = {{"user", "u"}, {"assistant", mark}};
    std::string s = apply_chat_template(f, msgs, false, "");
    auto pos = s.rfind(mark);
    return pos == std::string::npos ? std::string() : s.substr(pos + mark.size());
}

std::string plain_text(const std::optional<std::string>& instructions, std::span<const InputItem> items) {
    std::string text;
    auto add = [&](const std::string& s) {
        if (s.empty()) return;
        if (!text.empty()) text += "\n";
        text += s;
    };
    if (instructions) add(*instructions);
    for (const InputItem& it : items) {
        if (it.kind == InputItem::Kind::Message) add(it.text);
        else if (it.kind == InputItem::Kind::FunctionCall) add(it.name + "(" + it.arguments + ")");
        else add(it.output);
    }
    return text;
}

// A continuation: the previous history (without the end-of-turn token the model generated: it was never
// forwarded, so it has no KV, and the template's own end-of-turn text puts the same token back) and then
// `delta`, in one buffer with room for `spare` more tokens.
std::vector<int32_t> continue_history(const ModelEntry& m, const History& previous, const std::vector<int32_t>& delta,
                                      size_t spare) {
    size_t keep = previous.tokens.size();
    if (m.chat_format && m.tokenizer->is_eog(previous.tokens.back())) --keep;
    std::vector<int32_t> tokens;
    tokens.reserve(keep + delta.size() + spare);
    tokens.assign(previous.tokens.begin(), previous.tokens.begin() + static_cast<std::ptrdiff_t>(keep));
    tokens.insert(tokens.end(), delta.begin(), delta.end());
    return tokens;
}

}  // namespace

std::vector<TextPart> render_tools(const nlohmann::json& tools) {
    if (!tools.is_array() || tools.empty()) return {};
    std::string lines;
    for (const auto& t : tools) {
        const nlohmann::json* f = function_tool(t);  // (checked where the request was read: json_fields.h check_tools)
        if (!f) continue;
        const nlohmann::json* description = field(*f, "description");
        const nlohmann::json* parameters = field(*f, "parameters");
        nlohmann::json sig = {{"type", "function"},
                              {"function", {{"name", f->value("name", "")},
                                            {"description", description ? *description : ""},
                                            {"parameters", parameters ? *parameters : nlohmann::json::object()}}}};
        lines.append("\n").append(sig.dump());
    }
    if (lines.empty()) return {};
    // The instructions and tags are markup; the signatures, the client's, are text.
    return {{"# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
             "You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
             true},
            {lines, false},
            {"\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
             "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
             "</tool_call>",
             true}};
}

namespace {

// A function tool's (or a tool_choice's) name, in either API's shape: Responses flat, Chat under "function".
std::string function_name(const nlohmann::json& t) {
    const nlohmann::json* f = function_tool(t);
    return f && f->contains("name") && (*f)["name"].is_string() ? (*f)["name"].get<std::string>() : "";
}

std::vector<std::string> function_names(const nlohmann::json& tools) {
    std::vector<std::string> names;
    if (tools.is_array())
        for (const auto& t : tools)
            if (std::string n = function_name(t); !n.empty()) names.push_back(n);
    return names;
}

struct AllowedTools {
    bool required = false;            // mode "required" (else "auto")
    std::vector<std::string> names;   // the functions named, each among the tools
};

// tool_choice {"type": "allowed_tools", …}, read and checked against the tools; nullopt for other forms.
std::optional<AllowedTools> allowed_tools(const nlohmann::json& tool_choice, const nlohmann::json& tools) {
    if (!tool_choice.is_object() || tool_choice.value("type", nlohmann::json()) != "allowed_tools") return std::nullopt;
    const nlohmann::json* spec = &tool_choice;
    std::string param = "tool_choice";
    if (auto it = tool_choice.find("allowed_tools"); it != tool_choice.end()) {  // Chat's shape
        if (!it->is_object()) wrong_type("tool_choice.allowed_tools", "an object {mode, tools}");
        spec = &*it;
        param += ".allowed_tools";
    }
    AllowedTools out;
    const std::optional<std::string> mode = opt_string(*spec, "mode", param + ".mode");
    if (!mode) missing(param + ".mode");
    if (*mode != "auto" && *mode != "required")
        throw bad_request("Invalid '" + param + ".mode': expected \"auto\" or \"required\", got '" + *mode + "'.", param + ".mode",
                          "invalid_value");
    out.required = *mode == "required";
    const nlohmann::json* list = field(*spec, "tools");
    if (!list) missing(param + ".tools");
    if (!list->is_array()) wrong_type(param + ".tools", "an array");
    const std::vector<std::string> names = function_names(tools);
    for (size_t i = 0; i < list->size(); ++i) {
        const std::string at = param + ".tools[" + std::to_string(i) + "]";
        if (!(*list)[i].is_object()) wrong_type(at, "an object");
        if (!function_tool((*list)[i])) continue;  // (a built-in tool: flint has none)
        const std::string name = function_name((*list)[i]);
        if (name.empty()) missing(at + ".name");
        if (std::find(names.begin(), names.end(), name) == names.end())
            throw bad_request("Invalid '" + at + "': function '" + name + "' is not among the tools.", at, "invalid_value");
        out.names.push_back(name);
    }
    return out;
}

}  // namespace

std::string forced_call_prefix(const nlohmann::json& tool_choice, const nlohmann::json& tools) {
    if (tool_choice.is_null() || tool_choice == "auto" || tool_choice == "none") return "";
    const std::string open = std::string(kToolOpen) + "\n{\"name\": \"";
    if (const std::optional<AllowedTools> allowed = allowed_tools(tool_choice, tools)) {
        if (!allowed->required) return "";
        if (allowed->names.empty())
            throw bad_request("tool_choice allowed_tools with mode 'required' needs at least one function tool to call.",
                              "tool_choice", "invalid_value");
        return open;
    }
    const std::vector<std::string> names = function_names(tools);
    if (tool_choice == "required") {
        if (names.empty()) throw bad_request("tool_choice 'required' needs at least one function tool.", "tool_choice", "invalid_value");
        return open;
    }
    const std::string name = function_name(tool_choice);
    if (name.empty())
        throw bad_request("Invalid 'tool_choice': expected \"auto\", \"none\", \"required\", a function "
                          "({\"type\": \"function\", \"name\": …}) or allowed_tools.",
                          "tool_choice", "invalid_value");
    if (std::find(names.begin(), names.end(), name) == names.end())
        throw bad_request("Invalid 'tool_choice': function '" + name + "' is not among the tools.", "tool_choice", "invalid_value");
    return open + name + "\", \"arguments\":";
}

nlohmann::json callable_tools(const nlohmann::json& tool_choice, const nlohmann::json& tools) {
    if (tool_choice == "none" || !tools.is_array()) return nlohmann::json::array();
    const std::optional<AllowedTools> allowed = allowed_tools(tool_choice, tools);
    if (!allowed) return tools;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& t : tools)
        if (std::find(allowed->names.begin(), allowed->names.end(), function_name(t)) != allowed->names.end()) out.push_back(t);
    return out;
}

std::vector<int32_t> build_prompt(const ModelEntry& m, const PromptParts& p, const History* previous, size_t spare) {
    const Tokenizer& tok = *m.tokenizer;
    std::vector<int32_t> tokens;
    bool continuing = previous && !previous->tokens.empty();
    try {
        // Instructions are not inherited through previous_response_id, but a continuation that re-sends the
        // ones its history already starts with must not get them again (clients re-send them every turn).
        const bool new_instructions = p.instructions && !p.instructions->empty() &&
                                      (!continuing || previous->instructions != p.instructions);
        if (!m.chat_format) {
            std::string text = plain_text(continuing && !new_instructions ? std::nullopt : p.instructions, p.items);
            if (continuing) return continue_history(m, *previous, tok.encode(std::string("\n").append(text), false, false), spare);
            tokens = tok.encode(text, tok.add_bos(), false);
            tokens.reserve(tokens.size() + spare);
            return tokens;
        }
        std::vector<ChatMessage> msgs = to_messages(p.items);
        std::vector<TextPart> tools_block = p.tools ? render_tools(*p.tools) : std::vector<TextPart>{};
        if (!continuing) {
            // The system turn: instructions, else the conversation's own system message, else the
            // template's default; tool signatures go at its end.
            ChatMessage system{"system", p.instructions.value_or("")};
            if (system.content.empty() && !msgs.empty() && msgs.front().role == "system") {
                system = std::move(msgs.front());
                msgs.erase(msgs.begin());
            } else if (system.content.empty()) {
                system.content = m.default_system;
            }
            if (!tools_block.empty()) {
                if (has_content(system)) append(system, "\n\n", false);
                for (TextPart& t : tools_block) append(system, std::move(t.text), t.markup);
            }
            if (has_content(system)) msgs.insert(msgs.begin(), std::move(system));
            tokens = tok.encode(render_chat(*m.chat_format, msgs, true), tok.add_bos());
            tokens.reserve(tokens.size() + spare);
            return tokens;
        }
        if (new_instructions) msgs.insert(msgs.begin(), {"system", *p.instructions});
        std::vector<TextPart> parts = render_chat(*m.chat_format, msgs, true);
        parts.insert(parts.begin(), TextPart{end_of_assistant_turn(*m.chat_format), true});
        return continue_history(m, *previous, tok.encode(parts, false), spare);
    } catch (const Error& e) {
        throw bad_request(std::string("cannot build the prompt: ") + e.what(), "input");
    }
}

namespace {

// Token ids that open a turn in `format` (empty when the vocabulary does not have them as single tokens).
std::vector<int32_t> turn_openers(const ModelEntry& m) {
    const Tokenizer& tok = *m.tokenizer;
    std::vector<std::string_view> marks;
    switch (*m.chat_format) {
        case ChatFormat::ChatML: marks = {"<|im_start|>"}; break;
        case ChatFormat::Llama3: marks = {"<|start_header_id|>"}; break;
        case ChatFormat::Zephyr: marks = {"<|system|>", "<|user|>", "<|assistant|>"}; break;
        case ChatFormat::Llama2: return tok.bos() >= 0 ? std::vector<int32_t>{tok.bos()} : std::vector<int32_t>{};
        case ChatFormat::Unknown: return {};
    }
    std::vector<int32_t> ids;
    for (std::string_view s : marks) {
        std::vector<int32_t> t = tok.encode(s, false, true);
        if (t.size() == 1) ids.push_back(t[0]);
    }
    return ids;
}

}  // namespace

bool drop_oldest_turns(const ModelEntry& m, History& history, size_t excess) {
    std::vector<int32_t>& t = history.tokens;
    if (excess == 0 || t.empty()) return false;
    if (!m.chat_format) {
        const size_t keep = (m.tokenizer->add_bos() && t.front() == m.tokenizer->bos()) ? 1 : 0;
        const size_t n = std::min(excess, t.size() - keep);
        t.erase(t.begin() + static_cast<std::ptrdiff_t>(keep), t.begin() + static_cast<std::ptrdiff_t>(keep + n));
        return n > 0;
    }
    const std::vector<int32_t> openers = turn_openers(m);
    std::vector<size_t> starts;  // where each turn begins
    for (size_t i = 0; i < t.size(); ++i)
        if (std::find(openers.begin(), openers.end(), t[i]) != openers.end()) starts.push_back(i);
    // Turn i spans [starts[i], starts[i+1]). Keep the first turn and the last exchange (the question and the
    // answer the new input follows: two turns, or one Llama 2 [INST] pair); drop turns 1..j for the smallest j
    // that frees `excess` tokens, or all that may go.
    const size_t keep_last = *m.chat_format == ChatFormat::Llama2 ? 1 : 2;
    if (starts.size() < 2 + keep_last) return false;
    const size_t last_droppable = starts.size() - 1 - keep_last;  // index of the last turn that may go
    const size_t from = starts[1];
    size_t j = 1;
    while (j < last_droppable && starts[j + 1] - from < excess) ++j;
    t.erase(t.begin() + static_cast<std::ptrdiff_t>(from), t.begin() + static_cast<std::ptrdiff_t>(starts[j + 1]));
    return true;
}

ParsedOutput parse_tool_calls(const std::string& text) {
    ParsedOutput out;
    size_t pos = text.find(kToolOpen);
    if (pos == std::string::npos) {
        out.text = text;
        return out;
    }
    out.text = text.substr(0, pos);
    while (pos != std::string::npos) {
        size_t body = pos + std::string(kToolOpen).size();
        size_t end = text.find(kToolClose, body);
        std::string inner = text.substr(body, end == std::string::npos ? std::string::npos : end - body);
        nlohmann::json call = nlohmann::json::parse(inner, nullptr, false);
        if (call.is_object() && call.contains("name") && call["name"].is_string()) {
            nlohmann::json args = call.value("arguments", nlohmann::json::object());
            out.calls.push_back({call["name"].get<std::string>(), args.is_string() ? args.get<std::string>() : args.dump()});
        } else {
            // Not a call the client could execute: keep it as text rather than dropping what the model wrote.
            out.text += text.substr(pos, end == std::string::npos ? std::string::npos : end + std::string(kToolClose).size() - pos);
        }
        if (end == std::string::npos) break;
        // Text between or after the calls stays text too.
        const size_t after = end + std::string(kToolClose).size();
        pos = text.find(kToolOpen, after);
        out.text += text.substr(after, pos == std::string::npos ? std::string::npos : pos - after);
    }
    return out;
}

}  // namespace flint::server
