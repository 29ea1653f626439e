// JsonSchemaPrefix: texts that fit a schema are accepted byte by byte and complete only at their end; the
// first byte that makes a text unable to fit is refused (and the state kept). Schemas are compiled by the
// server's compiler (server/output_format.h), as requests' schemas are.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sample/json_schema.h"
#include "server/output_format.h"

namespace flint {
namespace {

using nlohmann::json;

std::shared_ptr<const JsonSchema> compile(const json& s) { return server::compile_json_schema(s, "schema"); }

// How many bytes of `text` are accepted one at a time before the first refusal (text.size(): all).
size_t accepted(const std::shared_ptr<const JsonSchema>& schema, const std::string& text, bool* complete = nullptr) {
    JsonSchemaPrefix p(schema);
    for (size_t i = 0; i < text.size(); ++i)
        if (!p.feed(text.substr(i, 1))) return i;
    if (complete) *complete = p.complete();
    return text.size();
}

void expect_fits(const std::shared_ptr<const JsonSchema>& schema, const std::string& text) {
    bool complete = false;
    EXPECT_EQ(accepted(schema, text, &complete), text.size()) << text;
    EXPECT_TRUE(complete) << text;
    JsonSchemaPrefix p(schema);
    for (size_t i = 0; i + 1 < text.size(); ++i) {
        ASSERT_TRUE(p.feed(text.substr(i, 1)));
        EXPECT_FALSE(p.complete()) << "complete too early: " << text.substr(0, i + 1);
    }
}

// `text` is refused at byte `at` (its first `at` bytes are a prefix of something that fits).
void expect_refused_at(const std::shared_ptr<const JsonSchema>& schema, const std::string& text, size_t at) {
    EXPECT_EQ(accepted(schema, text), at) << text << " (refused at " << text.substr(0, at) << "|" << text.substr(at) << ")";
}

const json kPerson = {
    {"type", "object"},
    {"properties", {{"name", {{"type", "string"}}},
                    {"age", {{"type", "integer"}}},
                    {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                    {"kind", {{"enum", {"a", "bc"}}}}}},
    {"required", {"name", "age", "tags", "kind"}},
    {"additionalProperties", false}};

TEST(JsonSchemaPrefix, AStrictObjectSchema) {
    auto s = compile(kPerson);
    expect_fits(s, R"({"name":"Ada","age":36,"tags":["x","y"],"kind":"bc"})");
    expect_fits(s, R"({"kind":"a","tags":[],"age":-1,"name":"\u00e9\n"})");  // any order, escapes
    expect_fits(s, "{\n  \"name\": \"Ada\",\n  \"age\": 36,\n  \"tags\": [ \"x\" ],\n  \"kind\": \"a\"\n}");
    expect_refused_at(s, R"({"nam":)", 5);             // no such key
    expect_refused_at(s, R"({"nickname":)", 3);       // no key starts "ni"
    expect_refused_at(s, R"({"name":1})", 8);          // a string, not a number
    expect_refused_at(s, R"({"age":3.5})", 8);         // an integer: no fraction
    expect_refused_at(s, R"({"age":3e2})", 8);         // nor exponent
    expect_refused_at(s, R"({"kind":"b"})", 10);       // "b" is only a prefix of "bc"
    expect_refused_at(s, R"({"name":"x"})", 11);       // '}' with required keys missing
    expect_refused_at(s, R"({"name":"x","name":)", 13); // given twice
    expect_refused_at(s, R"({"name":"x","age":1,"tags":[],"kind":"a",)", 40);  // nothing left to give
    expect_refused_at(s, R"( {"name")", 0);            // no whitespace before the value
    expect_refused_at(s, R"(["name"])", 0);            // the root is an object
}

TEST(JsonSchemaPrefix, ARefusedChunkLeavesTheStateAsItWas) {
    JsonSchemaPrefix p(compile(kPerson));
    ASSERT_TRUE(p.feed(R"({"na)"));
    EXPECT_FALSE(p.feed(R"(me":1)"));  // refused at '1'
    EXPECT_TRUE(p.feed(R"(me":"x","age":2,"tags":["t"],"kind":"a"})"));
    EXPECT_TRUE(p.complete());
    EXPECT_TRUE(p.feed(" \n"));  // trailing whitespace
    EXPECT_FALSE(p.feed("x"));
    EXPECT_TRUE(p.complete());
}

TEST(JsonSchemaPrefix, AlternativesTypeListsAndAdditionalProperties) {
    auto s = compile(json::parse(R"({"type": "object",
        "properties": {"v": {"type": ["string", "null"]},
                       "n": {"anyOf": [{"type": "integer"}, {"type": "boolean"}, {"const": "x"}]}},
        "additionalProperties": {"type": "number"}})"));
    expect_fits(s, R"({"v":null,"n":true})");
    expect_fits(s, R"({"v":"s","n":12,"extra":2.5})");
    expect_fits(s, R"({"n":"x"})");
    expect_fits(s, R"({})");  // nothing required
    expect_refused_at(s, R"({"v":1})", 5);
    expect_refused_at(s, R"({"n":"y"})", 6);
    expect_refused_at(s, R"({"n":1.5})", 6);
    expect_refused_at(s, R"({"other":"x"})", 9);  // additional values are numbers
}

TEST(JsonSchemaPrefix, ArrayCountsEnumsOfNumbersAndNesting) {
    auto s = compile(json::parse(R"({"type": "object",
        "properties": {"xs": {"type": "array", "items": {"enum": [1, 12, true]}, "minItems": 1, "maxItems": 2}},
        "required": ["xs"]})"));
    expect_fits(s, R"({"xs":[1]})");
    expect_fits(s, R"({"xs":[12,true]})");
    expect_refused_at(s, R"({"xs":[]})", 7);       // at least one item
    expect_refused_at(s, R"({"xs":[1,12,1]})", 11); // at most two
    expect_refused_at(s, R"({"xs":[13]})", 8);
    expect_refused_at(s, R"({"xs":[tru]})", 10);
}

TEST(JsonSchemaPrefix, ARecursiveSchemaThroughRef) {
    auto s = compile(json::parse(R"({"type": "object",
        "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["name", "children"], "additionalProperties": false,
        "$defs": {"node": {"$ref": "#"}}})"));
    expect_fits(s, R"({"name":"a","children":[{"name":"b","children":[{"name":"c","children":[]}]}]})");
    expect_refused_at(s, R"({"name":"a","children":[{"name":"b"}]})", 35);
}

TEST(JsonSchemaPrefix, AnyObjectIsJsonObjectMode) {
    auto s = JsonSchema::any_object();
    expect_fits(s, R"({"a":[1,{"b":null}],"c\"d":"e"})");
    expect_fits(s, "{}");
    expect_refused_at(s, "[1]", 0);
    expect_refused_at(s, R"({"a":})", 5);
    expect_refused_at(s, R"({"a":1}})", 7);
}

// A key written with escapes is the name it spells: "\u0061" is property a, held to a's schema and
// counted as given (so not a second time, and not as an additional key).
TEST(JsonSchemaPrefix, AnEscapedKeyIsTheNameItSpells) {
    auto s = compile(json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}, "\u00e9\ud83d\ude00": {"type": "null"}},
                                     "required": ["a"]})"));
    expect_fits(s, R"({"\u0061":1})");
    expect_refused_at(s, R"({"\u0061":"x"})", 10);        // a's value is an integer
    expect_refused_at(s, R"({"a":1,"\u0061":2})", 14);    // a, given twice
    expect_fits(s, R"({"a":1,"\u00E9\uD83D\uDE00":null})");
    expect_refused_at(s, R"({"a":1,"\u00e9\ud83d\ude00":0})", 28);
    expect_fits(s, R"({"a":1,"\n\"\/\\":[0]})");          // another key: anything
}

// The server's compiler wants an object at the root, but the recogniser takes any node there: a top-level
// string, number, literal or enum value is complete at its last byte, before anything follows it.
TEST(JsonSchemaPrefix, ATopLevelLeafIsCompleteAtItsLastByte) {
    auto root = [](JsonSchemaNode n) {
        auto s = std::make_shared<JsonSchema>();
        s->root = s->add(std::move(n));
        return std::shared_ptr<const JsonSchema>(s);
    };
    JsonSchemaNode str, num, lit, en;
    str.kind = JsonSchemaNode::Kind::String;
    num.kind = JsonSchemaNode::Kind::Integer;
    lit.kind = JsonSchemaNode::Kind::Boolean;
    en.kind = JsonSchemaNode::Kind::Enum;
    en.values = {"1", "12", "\"x\""};
    expect_fits(root(str), R"("a\"b")");
    expect_fits(root(lit), "false");
    expect_fits(root(en), "\"x\"");
    bool complete = false;
    EXPECT_EQ(accepted(root(num), "-120", &complete), 4u);
    EXPECT_TRUE(complete) << "a number is complete at each digit";
    expect_fits(std::make_shared<const JsonSchema>(), R"({"a":[1]})");  // root 0: anything
    JsonSchemaPrefix p(root(en));
    ASSERT_TRUE(p.feed("1"));
    EXPECT_TRUE(p.complete()) << "1 is one of the values, and 12 could still follow";
    ASSERT_TRUE(p.feed("2 "));
    EXPECT_TRUE(p.complete());
}

TEST(JsonSchemaPrefix, WhitespaceIsBounded) {
    auto s = JsonSchema::any_object();
    const std::string many(JsonSchemaPrefix::kMaxWhitespace, ' ');
    expect_fits(s, "{" + many + "\"a\":1}");
    expect_refused_at(s, "{" + many + " \"a\":1}", 1 + many.size());
    // After a value too: one run, counted once (not by the value and again by its object).
    for (const std::string& v : {std::string("\"x\""), std::string("12"), std::string("true")}) {
        expect_fits(s, "{\"a\":" + v + many + "}");
        expect_refused_at(s, "{\"a\":" + v + many + " }", 5 + v.size() + many.size());
    }
}

}  // namespace
}  // namespace flint

namespace flint {
namespace {

// The signature is a cache key for the set of tokens that fit: states with equal signatures must accept
// exactly the same continuations, and text inside a free string must not split them.
TEST(JsonSchemaPrefix, EqualSignaturesAcceptTheSameContinuations) {
    auto s = compile(kPerson);
    const std::vector<std::string> pieces = {"\"", "a", "\",", "\"}", "\\n", "\\u00e9", "1", ",", "}", " ", "\n", ":", "\"age\"",
                                             "\"tags\":[", "é", "\xc3", "\xa9", "\"kind\":\"a\"", "\"name", "]", "x\"", "{"};
    auto state = [&](const std::string& text) {
        JsonSchemaPrefix p(s);
        EXPECT_TRUE(p.feed(text)) << text;
        return p;
    };
    const std::vector<std::pair<std::string, std::string>> same = {
        {R"({"name":"x)", R"({"name":"hello wor)"},
        {R"({"age":1,"name":"é)", R"({"age":1,"name":"ab)"},
        {R"({"tags":["a","b")", R"({"tags":["zz")"},
    };
    for (const auto& [a, b] : same) {
        const JsonSchemaPrefix pa = state(a), pb = state(b);
        EXPECT_EQ(pa.signature(), pb.signature()) << a << " / " << b;
        for (const std::string& piece : pieces) EXPECT_EQ(pa.accepts(piece), pb.accepts(piece)) << a << " / " << b << " + " << piece;
    }
    const std::vector<std::pair<std::string, std::string>> differ = {
        {R"({"name":"x)", R"({"name":"x\)"},                // inside an escape
        {R"({"name":"x)", R"({"age":1,"name":"x)"},         // which keys are left
        {R"({"na)", R"({"ag)"},                             // the key so far
        {R"({"kind":"b)", R"({"kind":")"},                  // the enum value so far
        {"{ ", "{  "},                                      // whitespace in a row
    };
    for (const auto& [a, b] : differ) EXPECT_NE(state(a).signature(), state(b).signature()) << a << " / " << b;
}

}  // namespace
}  // namespace flint
