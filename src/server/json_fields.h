// flint/server/json_fields.h — typed reads of request fields. A present field of the wrong type is a
// 400 naming the param; an absent (or null) field leaves the default. Unknown fields are never looked at.
#pragma once
#include <cmath>
#include <cstdio>
#include <optional>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/errors.h"
#include "util/utf8.h"

namespace flint::server {

using json = nlohmann::json;

inline const json* field(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

// A function tool's own object in either API's shape — Responses' flat {type, name, parameters…}, Chat's
// {type, function: {name, parameters…}} (a tool_choice naming a function has the same two shapes) — or null
// when `tool` is not a function tool.
inline const json* function_tool(const json& tool) {
    if (!tool.is_object()) return nullptr;
    auto type = tool.find("type");
    if (type == tool.end() || *type != "function") return nullptr;
    auto it = tool.find("function");
    return it != tool.end() && it->is_object() ? &*it : &tool;
}

[[noreturn]] inline void wrong_type(const std::string& param, const char* expected) {
    throw bad_request("Invalid type for '" + param + "': expected " + expected + ".", param, "invalid_type");
}

[[noreturn]] inline void missing(const std::string& param) {
    throw bad_request("Missing required parameter: '" + param + "'.", param, "missing_required_parameter");
}

inline std::optional<std::string> opt_string(const json& obj, const char* key, const std::string& param) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(param, "a string");
    return v->get<std::string>();
}

inline std::optional<bool> opt_bool(const json& obj, const char* key, const std::string& param) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(param, "a boolean");
    return v->get<bool>();
}

// A range's end as a person writes it: 0, 1, 2.5, 1e+06 (std::to_string gave 0.000000).
inline std::string bound(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

inline std::optional<double> opt_number(const json& obj, const char* key, const std::string& param, double lo, double hi) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(param, "a number");
    double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
        throw bad_request("Invalid '" + param + "': " + v->dump() + " is out of range [" + bound(lo) + ", " + bound(hi) + "].",
                          param, "invalid_value");
    return d;
}

inline std::optional<int64_t> opt_int(const json& obj, const char* key, const std::string& param, int64_t lo, int64_t hi) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() && !v->is_number_unsigned()) wrong_type(param, "an integer");
    int64_t i = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : v->get<int64_t>();
    if (i < lo || i > hi)
        throw bad_request("Invalid '" + param + "': " + std::to_string(i) + " is out of range [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "].",
                          param, "invalid_value");
    return i;
}

// A function's definition ({name, description, parameters, strict}, `param` names it): the name a
// non-empty string, the others, where given, a string, an object and a boolean.
inline void check_function(const json& f, const std::string& param) {
    const std::optional<std::string> name = opt_string(f, "name", param + ".name");
    if (!name) missing(param + ".name");
    if (name->empty())
        throw bad_request("Invalid '" + param + ".name': empty string.", param + ".name", "empty_string");
    opt_string(f, "description", param + ".description");
    if (const json* p = field(f, "parameters"); p && !p->is_object()) wrong_type(param + ".parameters", "an object (a JSON Schema)");
    opt_bool(f, "strict", param + ".strict");
}

// `tools`: an array of objects, each with a string `type`; function tools (either API's shape: Responses'
// flat one, Chat's under "function") checked as above. Other types pass: flint has no built-in tools, and
// ignores them (Codex sends web_search).
inline void check_tools(const json& tools) {
    if (!tools.is_array()) wrong_type("tools", "an array");
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const json& t = tools[i];
        if (!t.is_object()) wrong_type(at, "an object");
        const std::optional<std::string> type = opt_string(t, "type", at + ".type");
        if (!type) missing(at + ".type");
        if (*type != "function") continue;
        if (const json* f = field(t, "function")) {
            if (!f->is_object()) wrong_type(at + ".function", "an object {name, description, parameters}");
            check_function(*f, at + ".function");
        } else {
            check_function(t, at);
        }
    }
}

// `tool_choice`: a string ("auto", "none", "required"; conversation.h forced_call_prefix says which) or an
// object with a string `type`.
inline void check_tool_choice(const json& tc) {
    if (tc.is_string()) return;
    if (!tc.is_object()) wrong_type("tool_choice", "a string or an object");
    if (!opt_string(tc, "type", "tool_choice.type")) missing("tool_choice.type");
}

// Parses a request body; malformed JSON (including invalid UTF-8 in strings) is a 400.
inline json parse_body(const std::string& body) {
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
        throw bad_request("We could not parse the JSON body of your request. The body must be valid JSON in UTF-8.", "",
                          "invalid_json");
    if (!j.is_object()) throw bad_request("The request body must be a JSON object.", "", "invalid_json");
    return j;
}

// JSON text for a client; invalid UTF-8 (which the engine never produces, but user text might carry
// through) is replaced rather than thrown.
inline std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Appends `s` as a JSON string literal, exactly as dump() writes it: quotes, backslashes and control
// characters escaped (\b \f \n \r \t, else \u00xx), UTF-8 as is; invalid UTF-8 goes through dump().
// For the events written without a DOM (responses_api.cpp).
inline void append_json_string(std::string& out, std::string_view s) {
    if (!valid_utf8(s)) {
        out += dump(json(std::string(s)));
        return;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    size_t plain = 0;  // start of the run not yet copied
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out.append(s.data() + plain, i - plain);
        plain = i + 1;
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 15];
        }
    }
    out.append(s.data() + plain, s.size() - plain);
    out += '"';
}

// Message content: a string, or an array of parts whose texts are joined. A part whose type is not one of
// `text_types` is refused (400 naming the part), not silently dropped; a part without a type counts as
// the first of them. Shared by the Chat Completions and Responses parsers.
inline std::string text_content(const json& content, const std::string& param, std::initializer_list<std::string_view> text_types) {
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(param, "a string or an array of content parts");
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string p = param + "[" + std::to_string(i) + "]";
        if (!part.is_object()) wrong_type(p, "an object");
        const std::string type = opt_string(part, "type", p + ".type").value_or(std::string(*text_types.begin()));
        bool ok = false;
        for (std::string_view t : text_types) ok = ok || type == t;
        if (!ok)
            throw bad_request("Content part type '" + type + "' is not supported by this server (text only).", p + ".type",
                              "unsupported_content");
        text += opt_string(part, "text", p + ".text").value_or("");
    }
    return text;
}

}  // namespace flint::server
