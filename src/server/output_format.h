// flint/server/output_format.h — a request's output format: free text, any JSON object, or a JSON Schema
//
// Chat Completions `response_format` and Responses `text.format`. "text" → null; "json_object" → any
// object; "json_schema" → the request's schema compiled to sample/json_schema.h's nodes, which constrained
// sampling then follows byte by byte. A schema keyword flint cannot enforce (pattern, format, minimum, …)
// is a 400 naming it and where it is, never accepted and then answered with JSON that may not fit.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "sample/json_schema.h"

namespace flint::server {

enum class FormatApi { Chat, Responses };  // where the schema sits: json_schema.schema, or schema

// Throws ApiError (400) naming `param` (or the part of it) when the format is malformed or unsupported.
std::shared_ptr<const JsonSchema> output_format(const nlohmann::json& format, const std::string& param, FormatApi api);

// The schema alone (the value of `schema`), compiled; `param` names it in errors. The root must be an
// object, as OpenAI requires.
std::shared_ptr<const JsonSchema> compile_json_schema(const nlohmann::json& schema, const std::string& param);

// What a tool call's JSON may be — {"name": N, "arguments": …} with N's parameters, for each function tool
// (Responses' flat shape or Chat's "function" object) — for constrained sampling inside <tool_call>. A
// tool without parameters, or whose parameters use a keyword flint cannot enforce, takes any object as its
// arguments. More than kMaxConstrainedTools of them (too many readings to follow at once): the name is one
// of theirs and the arguments any object. Null when there is no function tool.
constexpr size_t kMaxConstrainedTools = 32;
std::shared_ptr<const JsonSchema> tool_call_schema(const nlohmann::json& tools);

}  // namespace flint::server
