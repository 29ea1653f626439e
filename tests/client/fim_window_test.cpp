// The window of a file `flint complete` sends around the cursor (src/client/fim_window.cpp).
#include "client/fim_window.h"

#include <string>

#include <gtest/gtest.h>

namespace flint::client {
namespace {

// "line 0\nline 1\n...line n-1\n"
std::string numbered(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "line " + std::to_string(i) + "\n";
    return s;
}

size_t start_of(const std::string& text, int line) {
    size_t pos = 0;
    for (int i = 0; i < line; ++i) pos = text.find('\n', pos) + 1;
    return pos;
}

TEST(FimWindow, ZeroMeansTheWholeFile) {
    const std::string t = numbered(300);
    const size_t at = start_of(t, 150) + 3;  // inside "line 150"
    const FimWindow w = fim_window(t, at, 0, 0);
    EXPECT_EQ(w.prefix, t.substr(0, at));
    EXPECT_EQ(w.suffix, t.substr(at));
    EXPECT_EQ(w.first_line, 0u);
    EXPECT_EQ(w.end_line, 301u);  // 300 lines and the empty one after the last '\n'
    EXPECT_EQ(w.lines, 301u);
}

TEST(FimWindow, ThePrefixStartsOnAMultipleOf32AtLeastNLinesUp) {
    const std::string t = numbered(300);
    struct Case {
        int line;
        size_t prefix_lines, first;
    };
    // line - prefix_lines, then down to a multiple of 32.
    for (const Case c : {Case{150, 40, 96}, Case{151, 40, 96}, Case{168, 40, 128}, Case{40, 40, 0}, Case{41, 40, 0},
                         Case{73, 40, 32}, Case{299, 256, 32}, Case{10, 256, 0}, Case{0, 1, 0}}) {
        const size_t at = start_of(t, c.line) + 2;
        const FimWindow w = fim_window(t, at, c.prefix_lines, 0);
        EXPECT_EQ(w.first_line, c.first) << c.line << " " << c.prefix_lines;
        EXPECT_EQ(w.prefix, t.substr(start_of(t, int(c.first)), at - start_of(t, int(c.first)))) << c.line;
        EXPECT_GE(size_t(c.line) - w.first_line, std::min(size_t(c.line), c.prefix_lines)) << c.line;
        EXPECT_LT(size_t(c.line) - w.first_line, c.prefix_lines + kFimSnapLines) << c.line;
    }
}

TEST(FimWindow, TheSuffixIsTheRestOfTheLineAndNMoreLines) {
    const std::string t = numbered(100);
    const size_t at = start_of(t, 50) + 4;  // "line| 50"
    FimWindow w = fim_window(t, at, 0, 2);
    EXPECT_EQ(w.suffix, " 50\nline 51\nline 52\n");
    EXPECT_EQ(w.end_line, 53u);
    w = fim_window(t, at, 0, 1000);  // past the end: to the end
    EXPECT_EQ(w.suffix, t.substr(at));
    EXPECT_EQ(w.end_line, 101u);
    // The cursor at a line's end: its '\n' and the next line.
    w = fim_window(t, start_of(t, 51) - 1, 0, 1);
    EXPECT_EQ(w.suffix, "\nline 51\n");
}

TEST(FimWindow, EdgesOfTheText) {
    EXPECT_EQ(fim_window("", 0, 256, 64).prefix, "");
    EXPECT_EQ(fim_window("", 0, 256, 64).suffix, "");
    EXPECT_EQ(fim_window("", 0, 256, 64).lines, 1u);
    const std::string t = "a\nb\nc";  // no final '\n'
    FimWindow w = fim_window(t, t.size(), 1, 1);
    EXPECT_EQ(w.prefix, "a\nb\nc");  // line 2 - 1 = 1, down to 0
    EXPECT_EQ(w.suffix, "");
    EXPECT_EQ(w.lines, 3u);
    EXPECT_EQ(w.end_line, 3u);
    w = fim_window(t, 0, 5, 1);
    EXPECT_EQ(w.prefix, "");
    EXPECT_EQ(w.suffix, "a\nb\n");
    EXPECT_EQ(fim_window(t, 99, 0, 0).prefix, t);  // an offset past the end is the end
    // CRLF text: the '\r' stays with its line.
    const std::string crlf = "x\r\ny\r\nz\r\n";
    w = fim_window(crlf, 3, 0, 0);
    EXPECT_EQ(w.prefix, "x\r\n");
    EXPECT_EQ(fim_window(crlf, 3, 0, 1).suffix, "y\r\nz\r\n");
}

}  // namespace
}  // namespace flint::client
