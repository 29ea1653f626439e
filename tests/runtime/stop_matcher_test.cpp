#include <gtest/gtest.h>

#include "runtime/stop_matcher.h"

using flint::StopMatcher;

TEST(StopMatcher, PassesTextThroughWithoutStops) {
    StopMatcher m;
    EXPECT_EQ(m.push("hello"), "hello");
    EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopsAcrossPiecesAndWithholdsTheStopText) {
    StopMatcher m({"</end>"});
    std::string out = m.push("abc</");
    out += m.push("en");
    EXPECT_EQ(out, "abc");  // "</en" is held back: it may begin the stop string
    out += m.push("d>tail");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(out, "abc");
    EXPECT_EQ(m.matched(), "</end>");
    EXPECT_EQ(m.push("more"), "");
}

TEST(StopMatcher, ReleasesHeldTextThatStopsMatching) {
    StopMatcher m({"STOP"});
    EXPECT_EQ(m.push("xST"), "x");
    EXPECT_EQ(m.push("Ay"), "STAy");
    EXPECT_EQ(m.push("ST"), "");
    EXPECT_EQ(m.flush(), "ST");
    EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
    StopMatcher m({"bb", "a"});
    EXPECT_EQ(m.push("xxbba"), "xx");
    EXPECT_EQ(m.matched(), "bb");
}
