// JsonPrefix: every prefix of valid JSON is accepted, the first byte that makes text invalid is refused
// (leaving the state as it was), and complete() holds exactly at the end of a value.
#include <gtest/gtest.h>

#include <string>

#include "sample/json_prefix.h"

using namespace flint;

namespace {

// Feeds `text` byte by byte; returns how many bytes were accepted.
size_t accepted(JsonPrefix& j, const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i)
        if (!j.feed(std::string_view(&text[i], 1))) return i;
    return text.size();
}

}  // namespace

TEST(JsonPrefix, AcceptsValidJsonAndIsCompleteOnlyAtItsEnd) {
    const std::string valid[] = {
        R"({})",
        R"({"a": 1, "b": [true, false, null], "c": {"d": "e"}})",
        "{\n  \"k\": -0.5e+10,\n  \"s\": \"\\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9\",\n  \"u\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n}",
        R"({"n": [0, 12, 3.25, -7, 1E3, 2e-2, []], "x": [[{}]]})",
    };
    for (const std::string& t : valid) {
        JsonPrefix j;
        EXPECT_EQ(accepted(j, t), t.size()) << t;
        EXPECT_TRUE(j.complete()) << t;
        JsonPrefix k;
        EXPECT_TRUE(k.feed(t.substr(0, t.size() - 1)));
        EXPECT_FALSE(k.complete()) << "one byte short: " << t;
        EXPECT_TRUE(k.feed(t.substr(t.size() - 1)));
        EXPECT_TRUE(k.feed("  \n")) << "trailing whitespace";
        EXPECT_TRUE(k.complete());
        EXPECT_FALSE(k.feed("x")) << "nothing after the value";
    }
}

TEST(JsonPrefix, RefusesTheFirstInvalidByteAndKeepsItsState) {
    struct Case {
        std::string text;
        size_t ok;  // bytes accepted before the refusal
    } cases[] = {
        {"[1]", 0},                 // object_only: the value must be an object
        {"{'a': 1}", 1},            // single quotes
        {"{\"a\" 1}", 5},           // missing colon
        {"{\"a\": 01}", 7},         // leading zero
        {"{\"a\": 1.}", 8},         // no digit after the dot
        {"{\"a\": tru}", 9},        // literal cut short by '}'
        {"{\"a\": 1,}", 8},         // trailing comma: a key must follow
        {"{\"a\": [1 2]}", 9},      // missing comma
        {"{\"a\": \"x\ny\"}", 8},   // raw newline inside a string
        {"{\"a\": \"\\q\"}", 8},    // bad escape
        {"{\"a\": \"\\u12g4\"}", 11},
        {"{\"a\": \"\xff\"}", 7},   // not UTF-8
        {"{\"a\": 1]", 7},          // mismatched closer
        {"{} {}", 3},
    };
    for (const Case& c : cases) {
        JsonPrefix j;
        EXPECT_EQ(accepted(j, c.text), c.ok) << c.text;
        // The refusal left the state as it was: a valid continuation still works.
        JsonPrefix k;
        ASSERT_TRUE(k.feed(c.text.substr(0, c.ok))) << c.text;
        EXPECT_FALSE(k.feed(c.text.substr(c.ok))) << c.text;
        EXPECT_EQ(accepted(k, ""), 0u);
    }
    JsonPrefix j;
    ASSERT_TRUE(j.feed("{\"a\": 1"));
    EXPECT_FALSE(j.feed(", 2}")) << "a multi-byte refusal";
    EXPECT_TRUE(j.feed("}")) << "and the state is the one before it";
    EXPECT_TRUE(j.complete());
}

TEST(JsonPrefix, BoundsWhitespaceAndAllowsAnyValueWhenNotObjectOnly) {
    JsonPrefix j;
    EXPECT_FALSE(j.feed(" ")) << "no whitespace before the value";
    ASSERT_TRUE(j.feed("{"));
    EXPECT_TRUE(j.feed(std::string(JsonPrefix::kMaxWhitespace, '\n')));
    EXPECT_FALSE(j.feed(" ")) << "padding cannot go on forever";
    EXPECT_TRUE(j.feed("}"));
    JsonPrefix any(false);
    EXPECT_TRUE(any.feed("-12.5e3"));
    EXPECT_TRUE(any.complete());
    EXPECT_FALSE(any.feed(",")) << "nothing after a top-level value";
    JsonPrefix s(false);
    EXPECT_TRUE(s.feed("\"a\""));
    EXPECT_TRUE(s.complete());
}
