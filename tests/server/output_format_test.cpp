// Output formats: what each form compiles to, and every schema flint cannot enforce is a 400 that names the
// keyword and where it is (never accepted and then answered with JSON that may not fit).
#include <gtest/gtest.h>

#include "server/errors.h"
#include "server/output_format.h"

namespace flint::server {
namespace {

using nlohmann::json;

// The ApiError a format throws (status 0 if it throws none).
ApiError error_of(const json& format, FormatApi api = FormatApi::Responses) {
    try {
        output_format(format, "text.format", api);
    } catch (const ApiError& e) {
        return e;
    }
    ApiError none;
    none.status = 0;
    return none;
}

json responses_schema(const json& schema) { return {{"type", "json_schema"}, {"name", "x"}, {"schema", schema}}; }

TEST(OutputFormat, TextJsonObjectAndJsonSchemaInBothShapes) {
    EXPECT_EQ(output_format({{"type", "text"}}, "f", FormatApi::Chat), nullptr);
    EXPECT_EQ(output_format({{"type", "json_object"}}, "f", FormatApi::Chat), JsonSchema::any_object());
    const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}, {"required", {"a"}}};
    auto r = output_format(responses_schema(schema), "text.format", FormatApi::Responses);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->nodes[r->root].kind, JsonSchemaNode::Kind::Object);
    EXPECT_EQ(r->nodes[r->root].names, std::vector<std::string>{"a"});
    EXPECT_EQ(r->nodes[r->root].required, 1u);
    auto c = output_format({{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"strict", true}, {"schema", schema}}}},
                           "response_format", FormatApi::Chat);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->nodes[c->root].names, std::vector<std::string>{"a"});
}

TEST(OutputFormat, MissingOrMalformedPartsAreNamed) {
    EXPECT_EQ(error_of({{"type", "yaml"}}).param, "text.format.type");
    EXPECT_EQ(error_of({{"type", "json_schema"}, {"schema", {{"type", "object"}}}}).param, "text.format.name");
    EXPECT_EQ(error_of({{"type", "json_schema"}, {"name", "x"}}).param, "text.format.schema");
    EXPECT_EQ(error_of({{"type", "json_schema"}, {"name", "x"}}, FormatApi::Chat).param, "text.format.json_schema");
    EXPECT_EQ(error_of({{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}, FormatApi::Chat).param, "text.format.json_schema.schema");
    EXPECT_EQ(error_of({{"type", "json_schema"}, {"name", 5}, {"schema", json::object()}}).param, "text.format.name");
    EXPECT_EQ(error_of(json::array()).param, "text.format");
}

TEST(OutputFormat, SchemasFlintCannotEnforceAre400sNamingWhere) {
    struct Case {
        json schema;
        std::string param;
    };
    const std::vector<Case> cases = {
        {{{"type", "object"}, {"properties", {{"zip", {{"type", "string"}, {"pattern", "^[0-9]+$"}}}}}}, "text.format.schema.properties.zip.pattern"},
        {{{"type", "object"}, {"properties", {{"n", {{"type", "integer"}, {"minimum", 0}}}}}}, "text.format.schema.properties.n.minimum"},
        {{{"type", "object"}, {"properties", {{"e", {{"oneOf", json::array({json::object()})}}}}}}, "text.format.schema.properties.e.oneOf"},
        {{{"type", "array"}}, "text.format.schema"},                        // the root must be an object
        {{{"anyOf", {{{"type", "object"}}}}}, "text.format.schema"},        // … not alternatives of objects
        {{{"type", "object"}, {"properties", {{"a", false}}}}, "text.format.schema.properties.a"},
        {{{"type", "object"}, {"properties", {{"a", {{"type", "date"}}}}}}, "text.format.schema.properties.a.type"},
        {{{"type", "object"}, {"properties", {{"a", {{"$ref", "http://x/y.json"}}}}}}, "text.format.schema.properties.a.$ref"},
        {{{"type", "object"}, {"properties", {{"a", {{"$ref", "#/$defs/none"}}}}}}, "text.format.schema.properties.a.$ref"},
        {{{"type", "object"}, {"properties", {{"a", {{"$ref", "#"}, {"type", "string"}}}}}}, "text.format.schema.properties.a.type"},
        {{{"type", "object"}, {"properties", {{"a", {{"type", "array"}, {"minItems", 3}, {"maxItems", 2}}}}}}, "text.format.schema.properties.a"},
        {{{"type", "object"}, {"properties", {{"a", {{"type", "array"}, {"items", json::array()}}}}}}, "text.format.schema.properties.a.items"},
        {{{"type", "object"}, {"properties", {{"a", {{"type", "string"}, {"enum", {1, 2}}}}}}}, "text.format.schema.properties.a"},
        {{{"type", "object"}, {"properties", {{"a", {{"type", "string"}, {"enum", "x"}}}}}}, "text.format.schema.properties.a.enum"},
        {{{"type", "object"}, {"required", "a"}}, "text.format.schema.required"},
        {{{"type", "object"}, {"properties", {{"a", {{"enum", {1}}, {"minItems", 1}}}}}}, "text.format.schema.properties.a.minItems"},
        {json("object"), "text.format.schema"},
    };
    for (const Case& c : cases) {
        const ApiError e = error_of(responses_schema(c.schema));
        EXPECT_EQ(e.status, 400) << c.schema.dump();
        EXPECT_EQ(e.param, c.param) << c.schema.dump() << ": " << e.message;
        EXPECT_FALSE(e.message.empty());
    }
    // Alternatives that loop back to themselves, or nest into too many readings; a key JSON must escape.
    const json loop = json::parse(R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}},
                                     "$defs": {"x": {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "string"}]}}})");
    EXPECT_EQ(error_of(responses_schema(loop)).param, "text.format.schema.properties.a.$ref");
    json wide_alt = {{"type", "string"}};
    for (int i = 0; i < 9; ++i) wide_alt = {{"anyOf", {wide_alt, wide_alt}}};  // 2^9 = 512 readings
    const ApiError blowup = error_of(responses_schema({{"type", "object"}, {"properties", {{"a", wide_alt}}}}));
    EXPECT_EQ(blowup.status, 400);
    EXPECT_NE(blowup.message.find("readings"), std::string::npos) << blowup.message;
    EXPECT_EQ(error_of(responses_schema({{"type", "object"}, {"properties", {{"a\"b", {{"type", "string"}}}}}})).param,
              "text.format.schema.properties");
    EXPECT_EQ(error_of(responses_schema({{"type", "object"}, {"required", {"a\\b"}}})).param, "text.format.schema.required");

    // Too deep, and too many properties in one object.
    json deep = {{"type", "object"}};
    for (int i = 0; i < 80; ++i) deep = {{"type", "object"}, {"properties", {{"a", deep}}}};
    EXPECT_EQ(error_of(responses_schema(deep)).status, 400);
    json wide = {{"type", "object"}, {"properties", json::object()}};
    for (int i = 0; i < 65; ++i) wide["properties"][std::string("p").append(std::to_string(i))] = {{"type", "string"}};
    EXPECT_EQ(error_of(responses_schema(wide)).param, "text.format.schema.properties");
}

TEST(OutputFormat, AnnotationsAreIgnoredAndTypeListsBecomeAlternatives) {
    const json schema = {{"$schema", "https://json-schema.org/draft/2020-12/schema"}, {"title", "T"}, {"description", "d"},
                         {"type", "object"},
                         {"properties", {{"a", {{"type", {"string", "null"}}, {"description", "x"}, {"default", nullptr}}}}}};
    auto s = output_format(responses_schema(schema), "text.format", FormatApi::Responses);
    const JsonSchemaNode& root = s->nodes[s->root];
    const JsonSchemaNode& a = s->nodes[root.props[0]];
    ASSERT_EQ(a.kind, JsonSchemaNode::Kind::AnyOf);
    ASSERT_EQ(a.options.size(), 2u);
    EXPECT_EQ(s->nodes[a.options[0]].kind, JsonSchemaNode::Kind::String);
    EXPECT_EQ(s->nodes[a.options[1]].kind, JsonSchemaNode::Kind::Null);
}

// Whether `text` is a complete tool call under the tools' call schema (a prefix that breaks off is not).
bool whole_call(const std::shared_ptr<const JsonSchema>& s, const std::string& text) {
    JsonSchemaPrefix j(s);
    return j.feed(text) && j.complete();
}

// Tool calls' JSON: {"name", "arguments"} per function tool, arguments held to that tool's own parameters
// (in either API's shape, $refs resolved within each tool), others any object.
TEST(ToolCallSchema, EachNameTakesItsOwnToolsArguments) {
    const json weather = {{"type", "object"},
                          {"properties", {{"city", {{"$ref", "#/$defs/place"}}}, {"days", {{"type", "integer"}}}}},
                          {"required", {"city"}},
                          {"additionalProperties", false},
                          {"$defs", {{"place", {{"type", "string"}}}}}};
    const json tools = json::array({
        {{"type", "function"}, {"name", "get_weather"}, {"parameters", weather}},                              // Responses
        {{"type", "function"}, {"function", {{"name", "run"}, {"parameters", {{"type", "object"},               // Chat
                                                                           {"properties", {{"cmd", {{"type", "string"}}}}},
                                                                           {"required", {"cmd"}}}}}}},
        {{"type", "function"}, {"name", "now"}},                                                               // no parameters
        {{"type", "function"}, {"name", "grep"}, {"parameters", {{"type", "object"}, {"properties", {{"re", {{"type", "string"}, {"pattern", "x"}}}}}}}},
        {{"type", "web_search"}},                                                                              // not a function: skipped
    });
    const auto s = tool_call_schema(tools);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(whole_call(s, R"({"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}})"));
    EXPECT_TRUE(whole_call(s, R"({"arguments": {"city": "Oslo"}, "name": "get_weather"})")) << "keys in any order";
    EXPECT_TRUE(whole_call(s, R"({"name":"run","arguments":{"cmd":"ls"}})"));
    EXPECT_TRUE(whole_call(s, R"({"name": "now", "arguments": {}})"));
    EXPECT_TRUE(whole_call(s, R"({"name": "now", "arguments": {"any": [1, 2]}})"));
    EXPECT_TRUE(whole_call(s, R"({"name": "grep", "arguments": {"re": 5}})")) << "a keyword flint cannot enforce: any object";

    EXPECT_FALSE(whole_call(s, R"({"name": "get_weather", "arguments": {"city": 5}})")) << "the $ref's type";
    EXPECT_FALSE(whole_call(s, R"({"name": "get_weather", "arguments": {"days": 3}})")) << "city is required";
    EXPECT_FALSE(whole_call(s, R"({"name": "get_weather", "arguments": {"city": "Oslo", "x": 1}})")) << "no other keys";
    EXPECT_FALSE(whole_call(s, R"({"name": "get_weather", "arguments": {"cmd": "ls"}})")) << "another tool's arguments";
    EXPECT_FALSE(whole_call(s, R"({"name": "run", "arguments": {"city": "Oslo"}})"));
    EXPECT_FALSE(whole_call(s, R"({"name": "web_search", "arguments": {}})")) << "not a function tool";
    EXPECT_FALSE(whole_call(s, R"({"name": "now"})")) << "arguments are required";
    EXPECT_FALSE(whole_call(s, R"({"name": "now", "arguments": {}, "id": 1})"));
    EXPECT_FALSE(whole_call(s, R"({"name": "now", "arguments": []})"));
    JsonSchemaPrefix p(s);
    EXPECT_FALSE(p.feed(R"({"name": "nope)")) << "an unknown name is refused as soon as it departs";
}

TEST(ToolCallSchema, NoFunctionToolsMeansNoConstraintAndManyOnlyTheName) {
    EXPECT_EQ(tool_call_schema(json()), nullptr);
    EXPECT_EQ(tool_call_schema(json::array()), nullptr);
    EXPECT_EQ(tool_call_schema(json::array({{{"type", "web_search"}}, {{"type", "function"}}})), nullptr);
    json many = json::array();
    for (size_t i = 0; i < kMaxConstrainedTools; ++i) many.push_back({{"type", "function"}, {"name", "f" + std::to_string(i)}});
    const auto s = tool_call_schema(many);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(whole_call(s, R"({"name": "f31", "arguments": {}})"));
    // One more: too many alternatives to follow at once. The name is still one of the tools', the
    // arguments any object.
    const json n_integer = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}};
    many.push_back({{"type", "function"}, {"name", "one_more"}, {"parameters", n_integer}});
    const auto loose = tool_call_schema(many);
    ASSERT_NE(loose, nullptr);
    EXPECT_TRUE(whole_call(loose, R"({"name": "f31", "arguments": {"x": [1, "y"]}})"));
    EXPECT_TRUE(whole_call(loose, R"({"arguments": {"n": "not checked"}, "name": "one_more"})"));
    EXPECT_FALSE(whole_call(loose, R"({"name": "f32", "arguments": {}})")) << "not a tool's name";
    EXPECT_FALSE(whole_call(loose, R"({"name": "f3", "arguments": []})"));
    EXPECT_FALSE(whole_call(loose, R"({"name": "f3"})")) << "arguments are required";
}

}  // namespace
}  // namespace flint::server
