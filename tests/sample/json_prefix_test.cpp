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
        // UTF-8 at the edges of each lead byte's range, and surrogate pairs in either case.
        "{\"u\": \"\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf\"}",
        R"({"e": "\ud83d\ude00 \uD83D\uDE00 \udbff\udfff \ud7ff \ue000"})",
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
        // Well-formed UTF-8 only (RFC 3629): the first continuation byte is refused when the lead byte
        // cannot be followed by it.
        {"{\"a\": \"\xe0\x9f\xbf\"}", 8},      // overlong (U+07FF in three bytes)
        {"{\"a\": \"\xf0\x8f\xbf\xbf\"}", 8},  // overlong (U+FFFF in four bytes)
        {"{\"a\": \"\xed\xa0\x80\"}", 8},      // an encoded surrogate (U+D800)
        {"{\"a\": \"\xf4\x90\x80\x80\"}", 8},  // past U+10FFFF
        {"{\"a\": \"\xc3\xa9\xa9\"}", 9},      // a continuation byte with no lead
        // \u surrogates in pairs: a low one alone, or a high one followed by anything but a low one.
        {"{\"a\": \"\\udc00\"}", 10},
        {"{\"a\": \"\\ud800\"}", 13},
        {"{\"a\": \"\\ud800x\"}", 13},
        {"{\"a\": \"\\ud800\\n\"}", 14},
        {"{\"a\": \"\\ud800\\u0041\"}", 15},
        {"{\"a\": \"\\uD800\\uD800\"}", 16},
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
