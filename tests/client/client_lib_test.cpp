// The client library's pure parts: SSE framing, URL parsing, the unified diff, UTF-8 checks, and folding
// Responses events into a turn.
#include <gtest/gtest.h>

#include "client/diff.h"
#include "client/files.h"
#include "client/responses.h"
#include "client/sse.h"
#include "client/url.h"
#include "util/error.h"

namespace flint::client {
namespace {

std::vector<SseEvent> parse_in_pieces(const std::string& stream, size_t piece) {
    SseParser p;
    std::vector<SseEvent> out;
    for (size_t i = 0; i < stream.size(); i += piece)
        p.feed(std::string_view(stream).substr(i, piece), [&](SseEvent&& e) { out.push_back(std::move(e)); });
    return out;
}

TEST(Sse, EventsAreTheSameWhateverTheStreamIsSplitInto) {
    const std::string s = "event: response.created\ndata: {\"a\":1}\n\n: a comment\r\n\r\ndata:x\r\ndata: y\r\n\r\nevent:e\rdata: z\r\r";
    for (size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
        auto ev = parse_in_pieces(s, piece);
        ASSERT_EQ(ev.size(), 3u) << piece;
        EXPECT_EQ(ev[0].event, "response.created");
        EXPECT_EQ(ev[0].data, "{\"a\":1}");
        EXPECT_EQ(ev[1].event, "");
        EXPECT_EQ(ev[1].data, "x\ny");
        EXPECT_EQ(ev[2].event, "e");
        EXPECT_EQ(ev[2].data, "z");
    }
}

TEST(Sse, AnEventWithoutDataIsNotDispatchedAndAnUnfinishedOneWaits) {
    auto ev = parse_in_pieces("event: x\n\ndata: [DONE]\n\ndata: partial\n", 5);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "[DONE]");
}

TEST(Url, ParsesHostPortAndPathAndRejectsWhatTheClientCannotSpeak) {
    Url u = parse_url("ws://127.0.0.1:8080/v1/responses");
    EXPECT_EQ(u.scheme, "ws");
    EXPECT_EQ(u.host, "127.0.0.1");
    EXPECT_EQ(u.port, "8080");
    EXPECT_EQ(u.target, "/v1/responses");
    u = parse_url("http://localhost");
    EXPECT_EQ(u.port, "80");
    EXPECT_EQ(u.target, "/");
    u = parse_url("http://[::1]:9/x");
    EXPECT_EQ(u.host, "::1");
    EXPECT_EQ(u.port, "9");
    EXPECT_EQ(to_string(u), "http://[::1]:9/x");
    EXPECT_THROW(parse_url("127.0.0.1:8080"), Error);
    EXPECT_THROW(parse_url("wss://x/"), Error);
    EXPECT_THROW(parse_url("http://h:port/"), Error);
}

TEST(Diff, EqualTextsHaveNoDiff) { EXPECT_EQ(unified_diff("a", "b", "x\ny\n", "x\ny\n"), ""); }

TEST(Diff, OneChangedLineWithContext) {
    std::string a, b;
    for (int i = 1; i <= 10; ++i) {
        a += "line" + std::to_string(i) + "\n";
        b += (i == 5 ? std::string("five") : "line" + std::to_string(i)) + "\n";
    }
    EXPECT_EQ(unified_diff("a/f", "b/f", a, b),
              "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n line2\n line3\n line4\n-line5\n+five\n line6\n line7\n line8\n");
}

TEST(Diff, InsertionsDeletionsAndFarApartChangesMakeSeparateHunks) {
    std::string a, b;
    for (int i = 1; i <= 20; ++i) a += std::to_string(i) + "\n";
    for (int i = 1; i <= 20; ++i) {
        if (i == 2) continue;          // deleted
        b += std::to_string(i) + "\n";
        if (i == 18) b += "new\n";     // inserted
    }
    EXPECT_EQ(unified_diff("a", "b", a, b),
              "--- a\n+++ b\n@@ -1,5 +1,4 @@\n 1\n-2\n 3\n 4\n 5\n@@ -16,5 +15,6 @@\n 16\n 17\n 18\n+new\n 19\n 20\n");
}

TEST(Diff, EmptySidesAndAMissingFinalNewline) {
    EXPECT_EQ(unified_diff("a", "b", "", "x\n"), "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n");
    EXPECT_EQ(unified_diff("a", "b", "x\n", ""), "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n");
    EXPECT_EQ(unified_diff("a", "b", "x\ny", "x\ny\n"),
              "--- a\n+++ b\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n");
}

TEST(Files, Utf8Validation) {
    EXPECT_TRUE(valid_utf8("plain ascii\n"));
    EXPECT_TRUE(valid_utf8("héllo ✓ 😀"));
    EXPECT_FALSE(valid_utf8("\xff"));
    EXPECT_FALSE(valid_utf8("\xc3"));            // truncated
    EXPECT_FALSE(valid_utf8("\xc0\xaf"));        // overlong
    EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));    // surrogate
    EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(Turn, FoldsDeltasUsageAndTheTerminalEvent) {
    Turn t;
    const auto t0 = Clock::now();
    t.sent = t0;
    t.apply({{"type", "response.created"}, {"response", {{"id", "resp_1"}, {"status", "in_progress"}}}}, t0);
    EXPECT_EQ(t.apply({{"type", "response.output_text.delta"}, {"delta", "Hel"}}, t0 + std::chrono::milliseconds(5)), "Hel");
    EXPECT_EQ(t.apply({{"type", "response.output_text.delta"}, {"delta", "lo"}}, t0 + std::chrono::milliseconds(7)), "lo");
    EXPECT_FALSE(t.finished);
    json usage = {{"input_tokens", 10}, {"input_tokens_details", {{"cached_tokens", 6}}}, {"output_tokens", 2},
                  {"output_tokens_details", {{"reasoning_tokens", 0}, {"accepted_prediction_tokens", 1}, {"rejected_prediction_tokens", 3}}}};
    t.apply({{"type", "response.incomplete"}, {"response", {{"id", "resp_1"}, {"status", "cancelled"}, {"usage", usage}}}},
            t0 + std::chrono::milliseconds(9));
    EXPECT_TRUE(t.finished);
    EXPECT_EQ(t.response_id, "resp_1");
    EXPECT_EQ(t.status, "cancelled");
    EXPECT_EQ(t.text, "Hello");
    EXPECT_EQ(t.cached_tokens, 6);
    EXPECT_EQ(t.accepted_prediction_tokens, 1);
    EXPECT_EQ(t.rejected_prediction_tokens, 3);
    EXPECT_DOUBLE_EQ(t.ttft_ms(), 5.0);
    EXPECT_DOUBLE_EQ(t.total_ms(), 9.0);
}

TEST(Turn, TokensPerSecondOverTheStreamOrTheWholeRequestForABurst) {
    auto turn = [](int tokens, std::vector<double> delta_ms, double done_ms) {
        Turn t;
        const auto t0 = Clock::now();
        auto at = [&](double ms) { return t0 + std::chrono::microseconds(static_cast<int64_t>(ms * 1000)); };
        t.sent = t0;
        for (double d : delta_ms) t.apply({{"type", "response.output_text.delta"}, {"delta", "x"}}, at(d));
        t.apply({{"type", "response.completed"}, {"response", {{"id", "r"}, {"status", "completed"}, {"usage", {{"output_tokens", tokens}}}}}},
                at(done_ms));
        return t;
    };
    // Streamed: 10 tokens after the first over 100 ms.
    EXPECT_NEAR(turn(11, {5, 55, 105}, 105).tokens_per_s(), 100.0, 1e-6);
    // A burst (8 tokens within 20 µs after a 20 ms wait): the whole request's 8 tokens over 20.02 ms,
    // not 7 tokens over 20 µs.
    EXPECT_NEAR(turn(8, {20, 20.01}, 20.02).tokens_per_s(), 8 * 1000.0 / 20.02, 1e-3);
    EXPECT_EQ(turn(0, {}, 3).tokens_per_s(), 0.0);
}

TEST(Turn, WebSocketErrorFrames) {
    Turn t;
    t.apply({{"type", "error"}, {"status", 400}, {"error", {{"code", "previous_response_not_found"}, {"message", "gone"}}}}, Clock::now());
    EXPECT_TRUE(t.finished);
    EXPECT_EQ(t.status, "error");
    EXPECT_EQ(t.error_code, "previous_response_not_found");
    EXPECT_EQ(t.error_message, "gone");
}

// A server's events are not ours to trust: members missing or of the wrong type, or events that are not
// objects, are ignored, never read through. A delta event without "delta" once read past the object's map
// (a const operator[] on a missing key; found by fuzz/client_fuzz.cpp under ASan).
TEST(Turn, MalformedEventsAreIgnored) {
    Turn t;
    const auto now = Clock::now();
    for (const json& ev : {json{{"type", "response.output_text.delta"}}, json{{"type", "response.output_text.delta"}, {"delta", 5}},
                           json{{"type", "response.completed"}, {"response", "x"}}, json{{"type", 7}}, json::array({1, 2}),
                           json("response.output_text.delta"), json{{"type", "response.completed"}, {"response", {{"usage", 3}}}}}) {
        EXPECT_EQ(t.apply(ev, now), "") << ev.dump();
    }
    EXPECT_EQ(t.text, "");
    EXPECT_TRUE(t.delta_times.empty());
    EXPECT_EQ(t.output_tokens, 0);
}

}  // namespace
}  // namespace flint::client
