#include "server/output_format.h"

#include <algorithm>
#include <map>
#include <set>

#include "server/json_fields.h"

namespace flint::server {
namespace {

using Kind = JsonSchemaNode::Kind;

// Keywords that only describe (ignored), and those the recogniser enforces. Anything else is refused.
const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                            "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
const std::set<std::string> kEnforced = {"type", "properties", "required", "additionalProperties", "items", "minItems",
                                         "maxItems", "enum", "const", "anyOf", "$ref"};
const std::set<std::string> kTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};
constexpr int kMaxSchemaDepth = 64;
constexpr size_t kMaxNodes = 4096;
constexpr int64_t kMaxReadings = 256;  // (the recogniser keeps the first kMaxThreads that survive a byte)

[[noreturn]] void unsupported(const std::string& at, const std::string& what) {
    throw bad_request("Invalid schema for '" + at + "': " + what, at, "invalid_json_schema");
}

bool fits_type(const json& v, const std::string& type) {
    if (type == "string") return v.is_string();
    if (type == "number") return v.is_number();
    if (type == "integer") return v.is_number_integer() || v.is_number_unsigned();
    if (type == "boolean") return v.is_boolean();
    if (type == "null") return v.is_null();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    return false;
}

class Compiler {
public:
    Compiler(const json& root, std::string param) : root_(root), param_(std::move(param)), out_(std::make_shared<JsonSchema>()) {}

    std::shared_ptr<const JsonSchema> run() {
        out_->root = compile(root_, param_, 0);
        if (out_->nodes[out_->root].kind != Kind::Object)
            unsupported(param_, "the root must be an object (\"type\": \"object\").");
        std::vector<uint8_t> state(out_->nodes.size(), 0);
        std::vector<int64_t> readings(out_->nodes.size(), 0);
        for (size_t n = 0; n < out_->nodes.size(); ++n)
            if (expansions(static_cast<int>(n), state, readings) > kMaxReadings)
                unsupported(where_[n], "its alternatives (anyOf, type lists) nest into more than " + std::to_string(kMaxReadings) +
                                           " readings of one value.");
        return out_;
    }

private:
    int add(JsonSchemaNode n, const std::string& at) {
        if (out_->nodes.size() >= kMaxNodes) unsupported(at, "the schema is too large (" + std::to_string(kMaxNodes) + " nodes at most).");
        where_.resize(out_->nodes.size());
        where_.push_back(at);
        return out_->add(std::move(n));
    }

    // How many readings a value of node `n` starts (alternatives within alternatives are all followed at the
    // value's first byte). A loop through alternatives alone (a: anyOf [$ref a, …]) would never end: refused.
    int64_t expansions(int n, std::vector<uint8_t>& state, std::vector<int64_t>& readings) const {
        const JsonSchemaNode& node = out_->nodes[n];
        if (node.kind != Kind::AnyOf) return 1;
        if (state[n] == 1) unsupported(where_[n], "its alternatives refer back to themselves before any value starts.");
        if (state[n] == 2) return readings[n];
        state[n] = 1;
        int64_t sum = 0;
        for (int o : node.options) sum = std::min<int64_t>(sum + expansions(o, state, readings), int64_t{1} << 40);
        state[n] = 2;
        return readings[n] = sum;
    }

    int compile(const json& s, const std::string& at, int depth) {
        if (depth > kMaxSchemaDepth) unsupported(at, "nested more than " + std::to_string(kMaxSchemaDepth) + " levels deep.");
        if (s.is_boolean()) {
            if (!s.get<bool>()) unsupported(at, "the schema `false` accepts nothing.");
            return 0;
        }
        if (!s.is_object()) wrong_type(at, "a schema (an object)");
        std::vector<std::string> enforced;
        for (const auto& [k, v] : s.items()) {
            if (kEnforced.count(k)) enforced.push_back(k);
            else if (!kAnnotations.count(k))
                unsupported(at + "." + k, "'" + k + "' is not supported. flint enforces type, properties, required, "
                                          "additionalProperties, items, minItems, maxItems, enum, const, anyOf and $ref.");
        }
        auto only = [&](const std::string& key, std::initializer_list<const char*> allowed) {
            for (const std::string& k : enforced)
                if (k != key && std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }))
                    unsupported(at + "." + k, "'" + k + "' beside '" + key + "' is not supported.");
        };
        if (const json* r = field(s, "$ref")) {
            only("$ref", {});
            if (!r->is_string()) wrong_type(at + ".$ref", "a string");
            return ref(r->get<std::string>(), at + ".$ref", depth);
        }
        if (const json* any = field(s, "anyOf")) {
            only("anyOf", {});
            if (!any->is_array() || any->empty()) wrong_type(at + ".anyOf", "a non-empty array of schemas");
            JsonSchemaNode n;
            n.kind = Kind::AnyOf;
            for (size_t i = 0; i < any->size(); ++i) n.options.push_back(compile((*any)[i], at + ".anyOf[" + std::to_string(i) + "]", depth + 1));
            return add(std::move(n), at);
        }
        std::vector<std::string> types;
        if (const json* t = field(s, "type")) {
            if (t->is_string()) types.push_back(t->get<std::string>());
            else if (t->is_array() && !t->empty() && std::all_of(t->begin(), t->end(), [](const json& x) { return x.is_string(); }))
                for (const json& x : *t) types.push_back(x.get<std::string>());
            else wrong_type(at + ".type", "a type name or a non-empty array of them");
            for (const std::string& ty : types)
                if (!kTypes.count(ty)) unsupported(at + ".type", "unknown type '" + ty + "'.");
        }
        if (field(s, "enum") || s.contains("const")) {
            only(field(s, "enum") ? "enum" : "const", {"enum", "const", "type"});
            return enumeration(s, types, at);
        }
        if (types.empty()) {  // no type: what the keywords describe, else anything
            if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) types = {"object"};
            else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) types = {"array"};
            else return 0;
        }
        if (types.size() == 1) return typed(s, types[0], at, depth);
        JsonSchemaNode n;
        n.kind = Kind::AnyOf;
        for (const std::string& ty : types) n.options.push_back(typed(s, ty, at, depth));
        return add(std::move(n), at);
    }

    // A property's key is written without escapes (the recogniser compares its bytes), so a name that would
    // need one could never be written.
    static void check_name(const std::string& name, const std::string& at) {
        if (std::any_of(name.begin(), name.end(), [](char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; }))
            unsupported(at, "property name " + json(name).dump() + " has a character JSON must escape: not supported.");
    }

    // enum / const (with an optional type, which must fit the values: those that do not are left out).
    int enumeration(const json& s, const std::vector<std::string>& types, const std::string& at) {
        if (field(s, "enum") && s.contains("const")) unsupported(at, "'enum' and 'const' together are not supported.");
        json values = json::array();
        if (const json* e = field(s, "enum")) {
            if (!e->is_array() || e->empty()) wrong_type(at + ".enum", "a non-empty array");
            values = *e;
        } else {
            values.push_back(s["const"]);
        }
        JsonSchemaNode n;
        n.kind = Kind::Enum;
        for (const json& v : values) {
            const bool fits = types.empty() || std::any_of(types.begin(), types.end(), [&](const std::string& t) { return fits_type(v, t); });
            if (fits) n.values.push_back(v.dump());
        }
        if (n.values.empty()) unsupported(at, "no value of 'enum'/'const' has the schema's type: it accepts nothing.");
        return add(std::move(n), at);
    }

    int typed(const json& s, const std::string& type, const std::string& at, int depth) {
        JsonSchemaNode n;
        if (type == "object") {
            n.kind = Kind::Object;
            if (const json* p = field(s, "properties")) {
                if (!p->is_object()) wrong_type(at + ".properties", "an object");
                for (const auto& [name, sub] : p->items()) {
                    check_name(name, at + ".properties");
                    n.names.push_back(name);
                    n.props.push_back(compile(sub, at + ".properties." + name, depth + 1));
                }
            }
            if (const json* r = field(s, "required")) {
                if (!r->is_array()) wrong_type(at + ".required", "an array of property names");
                for (const json& name : *r) {
                    if (!name.is_string()) wrong_type(at + ".required", "an array of property names");
                    auto it = std::find(n.names.begin(), n.names.end(), name.get<std::string>());
                    if (it == n.names.end()) {  // required but not described: any value
                        check_name(name.get<std::string>(), at + ".required");
                        n.names.push_back(name.get<std::string>());
                        n.props.push_back(0);
                        it = n.names.end() - 1;
                    }
                    if (it - n.names.begin() < 64) n.required |= uint64_t{1} << (it - n.names.begin());
                }
            }
            if (n.names.size() > JsonSchema::kMaxProperties)
                unsupported(at + ".properties", "more than " + std::to_string(JsonSchema::kMaxProperties) + " properties in one object.");
            if (const json* a = field(s, "additionalProperties")) {
                if (a->is_boolean()) n.allow_additional = a->get<bool>();
                else n.additional = compile(*a, at + ".additionalProperties", depth + 1);
            }
        } else if (type == "array") {
            n.kind = Kind::Array;
            if (const json* i = field(s, "items")) {
                if (i->is_array()) unsupported(at + ".items", "tuple arrays (an array of item schemas) are not supported.");
                n.items = compile(*i, at + ".items", depth + 1);
            }
            n.min_items = static_cast<int>(opt_int(s, "minItems", at + ".minItems", 0, 1 << 20).value_or(0));
            n.max_items = static_cast<int>(opt_int(s, "maxItems", at + ".maxItems", 0, 1 << 20).value_or(-1));
            if (n.max_items >= 0 && n.max_items < n.min_items) unsupported(at, "maxItems is less than minItems: it accepts nothing.");
        } else {
            n.kind = type == "string" ? Kind::String : type == "number" ? Kind::Number : type == "integer" ? Kind::Integer
                   : type == "boolean" ? Kind::Boolean : Kind::Null;
        }
        // Keywords of another type are not enforced on this one (JSON Schema applies them only to values of
        // their type), so e.g. {"type": ["object", "null"], "properties": …} is fine.
        return add(std::move(n), at);
    }

    // "#", "#/$defs/Name", "#/definitions/Name" or any other JSON pointer into the request's schema.
    int ref(const std::string& target, const std::string& at, int depth) {
        if (target.empty() || target[0] != '#') unsupported(at, "only references within the schema (\"#…\") are supported, not '" + target + "'.");
        if (auto it = refs_.find(target); it != refs_.end()) return it->second;
        json::json_pointer ptr;
        try {
            ptr = json::json_pointer(target.substr(1));
        } catch (const json::exception&) {
            unsupported(at, "'" + target + "' is not a JSON pointer.");
        }
        if (!root_.contains(ptr)) unsupported(at, "'" + target + "' points at nothing in the schema.");
        const int slot = add(JsonSchemaNode{}, at);  // filled below; a recursive reference finds it here
        refs_[target] = slot;
        const int node = compile(root_.at(ptr), at, depth + 1);
        out_->nodes[slot] = JsonSchemaNode(out_->nodes[node]);
        return slot;
    }

    const json& root_;
    std::string param_;
    std::shared_ptr<JsonSchema> out_;
    std::map<std::string, int> refs_;
    std::vector<std::string> where_;  // each node's place in the request, for errors
};

}  // namespace

std::shared_ptr<const JsonSchema> compile_json_schema(const json& schema, const std::string& param) {
    return Compiler(schema, param).run();
}

std::shared_ptr<const JsonSchema> output_format(const json& format, const std::string& param, FormatApi api) {
    if (!format.is_object()) wrong_type(param, "an object");
    const std::string type = opt_string(format, "type", param + ".type").value_or("text");
    if (type == "text") return nullptr;
    if (type == "json_object") return JsonSchema::any_object();
    if (type != "json_schema")
        throw bad_request("Invalid value for '" + param + ".type': '" + type + "'. Supported: 'text', 'json_object', 'json_schema'.",
                          param + ".type", "invalid_value");
    const json* spec = &format;
    std::string at = param;
    if (api == FormatApi::Chat) {
        spec = field(format, "json_schema");
        at = param + ".json_schema";
        if (!spec) throw bad_request("Missing required parameter: '" + at + "'.", at, "missing_required_parameter");
        if (!spec->is_object()) wrong_type(at, "an object");
    }
    const std::optional<std::string> name = opt_string(*spec, "name", at + ".name");
    if (!name) throw bad_request("Missing required parameter: '" + at + ".name'.", at + ".name", "missing_required_parameter");
    opt_bool(*spec, "strict", at + ".strict");
    opt_string(*spec, "description", at + ".description");
    const json* schema = field(*spec, "schema");
    if (!schema) throw bad_request("Missing required parameter: '" + at + ".schema'.", at + ".schema", "missing_required_parameter");
    return compile_json_schema(*schema, at + ".schema");
}

// {"name": one of `names`, "arguments": any object}: a call to one of many tools, its arguments unchecked.
static std::shared_ptr<const JsonSchema> loose_call_schema(const std::vector<std::pair<size_t, const json*>>& functions) {
    auto out = std::make_shared<JsonSchema>();
    JsonSchemaNode name;
    name.kind = JsonSchemaNode::Kind::Enum;
    for (const auto& [i, f] : functions) name.values.push_back((*f)["name"].dump());
    JsonSchemaNode arguments;
    arguments.kind = JsonSchemaNode::Kind::Object;  // no properties, any others: any object
    JsonSchemaNode call;
    call.kind = JsonSchemaNode::Kind::Object;
    call.names = {"name", "arguments"};
    call.props = {out->add(std::move(name)), out->add(std::move(arguments))};
    call.required = 3;
    call.allow_additional = false;
    out->root = out->add(std::move(call));
    return out;
}

std::shared_ptr<const JsonSchema> tool_call_schema(const json& tools) {
    if (!tools.is_array()) return nullptr;
    std::vector<std::pair<size_t, const json*>> functions;  // (index in tools, the function)
    for (size_t i = 0; i < tools.size(); ++i)
        if (const json* fn = function_tool(tools[i]); fn && fn->contains("name") && (*fn)["name"].is_string()) functions.push_back({i, fn});
    if (functions.empty()) return nullptr;
    if (functions.size() > kMaxConstrainedTools) return loose_call_schema(functions);
    auto out = std::make_shared<JsonSchema>();
    std::vector<int> calls;
    for (const auto& [i, fn] : functions) {
        const json& f = *fn;
        std::shared_ptr<const JsonSchema> params;
        if (const json* p = field(f, "parameters"); p && !p->is_null()) {
            try {
                params = compile_json_schema(*p, "tools[" + std::to_string(i) + "].parameters");
            } catch (const ApiError&) {
                // Not enforceable here: the call's arguments are then any object.
            }
        }
        if (!params) params = JsonSchema::any_object();
        // The tool's nodes, renumbered after those already in `out` (node 0, Any, is shared).
        const int base = static_cast<int>(out->nodes.size()) - 1;
        auto at = [base](int n) { return n == 0 ? 0 : n + base; };
        for (size_t n = 1; n < params->nodes.size(); ++n) {
            JsonSchemaNode node = params->nodes[n];
            for (int& p : node.props) p = at(p);
            for (int& o : node.options) o = at(o);
            node.additional = at(node.additional);
            node.items = at(node.items);
            out->nodes.push_back(std::move(node));
        }
        JsonSchemaNode name;
        name.kind = JsonSchemaNode::Kind::Enum;
        name.values = {json(f["name"]).dump()};
        JsonSchemaNode call;
        call.kind = JsonSchemaNode::Kind::Object;
        call.names = {"name", "arguments"};
        call.props = {out->add(std::move(name)), at(params->root)};
        call.required = 3;
        call.allow_additional = false;
        calls.push_back(out->add(std::move(call)));
    }
    if (calls.size() == 1) {
        out->root = calls[0];
    } else {
        JsonSchemaNode any;
        any.kind = JsonSchemaNode::Kind::AnyOf;
        any.options = calls;
        out->root = out->add(std::move(any));
    }
    return out;
}

}  // namespace flint::server
