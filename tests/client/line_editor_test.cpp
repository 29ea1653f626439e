// LineEditor (src/client/line_editor.cpp): the keys of `flint chat`'s line editor as the bytes a terminal
// sends for them (xterm's sequences; VT100's SS3 forms too), and what it draws for a narrow terminal.
#include "client/line_editor.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include <string>

#include <gtest/gtest.h>

#include "util/utf8.h"

namespace flint::client {
namespace {

using Step = LineEditor::Step;

bool valid_utf8_for_test(const std::string& s) { return flint::valid_utf8(s); }

// Feeds every byte; the last step.
Step type(LineEditor& e, const std::string& keys) {
    Step last = Step::Edit;
    for (unsigned char c : keys) last = e.feed(c);
    return last;
}

std::string typed(const std::string& keys) {
    LineEditor e;
    e.start();
    type(e, keys);
    return e.text();
}

const std::string kLeft = "\x1b[D", kRight = "\x1b[C", kUp = "\x1b[A", kDown = "\x1b[B";

TEST(LineEditor, TypingThenEnterGivesTheLineAndKeepsItInTheHistory) {
    LineEditor e;
    e.start();
    EXPECT_EQ(type(e, "fix the bug"), Step::Edit);
    EXPECT_EQ(e.feed('\r'), Step::Line);
    EXPECT_EQ(e.text(), "fix the bug");
    e.start();
    EXPECT_EQ(type(e, "fix the bug\n"), Step::Line);  // the same line again is not a second entry
    e.start();
    EXPECT_EQ(e.feed('\r'), Step::Line);  // nor is an empty line
    EXPECT_EQ(e.text(), "");
    EXPECT_EQ(e.history(), std::vector<std::string>{"fix the bug"});
}

TEST(LineEditor, ControlKeysMoveAndCut) {
    EXPECT_EQ(typed("world\x01hello \x05!"), "hello world!");  // Ctrl-A, Ctrl-E
    EXPECT_EQ(typed("ac\x02" "b\x06" "d"), "abcd");            // Ctrl-B, Ctrl-F
    EXPECT_EQ(typed("keep cut\x02\x02\x02\x0b"), "keep ");     // Ctrl-K: to the end
    EXPECT_EQ(typed("cut keep\x02\x02\x02\x02\x15"), "keep");  // Ctrl-U: to the start
    EXPECT_EQ(typed("one two.three  \x17"), "one ");           // Ctrl-W: the blank-delimited word and its blanks
    EXPECT_EQ(typed("abc\x7f\x08x"), "ax");                    // Backspace as DEL and as ^H
    EXPECT_EQ(typed("\x7f\x02\x17" "a"), "a");                 // nothing to delete or move over at the start
}

TEST(LineEditor, CtrlYPutsBackWhatTheLastCutTook) {
    EXPECT_EQ(typed("hello world\x17\x01\x19"), "worldhello ");         // Ctrl-W, then Ctrl-Y at the start
    EXPECT_EQ(typed("abc\x01\x0b" "x\x19\x19"), "xabcabc");             // Ctrl-K; Ctrl-Y twice
    EXPECT_EQ(typed("one two\x15\x19\x19"), "one twoone two");           // Ctrl-U
    EXPECT_EQ(typed("foo.bar\x1b\x7f\x01\x19"), "barfoo.");             // Alt-Backspace
    EXPECT_EQ(typed("keep\x0b\x19"), "keep");                          // Ctrl-K at the end cuts nothing: nothing to put
    LineEditor e;  // what was cut stays for the next line, as in readline
    e.start();
    type(e, "cut me\x15\r");
    e.start();
    type(e, "\x19");
    EXPECT_EQ(e.text(), "cut me");
}

TEST(LineEditor, CtrlUnderscoreUndoesEditsARunOfTypingAsOneStep) {
    LineEditor e;
    e.start();
    type(e, "hello world\x17");  // one run of typing, then Ctrl-W
    EXPECT_EQ(e.text(), "hello ");
    type(e, "\x1f");
    EXPECT_EQ(e.text(), "hello world");
    EXPECT_EQ(e.cursor(), 11u);
    type(e, "\x1f");
    EXPECT_EQ(e.text(), "");
    type(e, "\x1f");  // nothing left to undo
    EXPECT_EQ(e.text(), "");
    e.start();
    type(e, "ab" + kLeft + kLeft + "x\x1f");  // moving is not a step: the undo takes back the "x"
    EXPECT_EQ(e.text(), "ab");
    EXPECT_EQ(e.cursor(), 0u);
    type(e, "\x1f");
    EXPECT_EQ(e.text(), "");
    e.start();
    type(e, "say \x1b[200~line one\rline two\x1b[201~!\x1f");  // the "!" alone, then the whole paste
    EXPECT_EQ(e.text(), "say line one\nline two");
    type(e, "\x1f");
    EXPECT_EQ(e.text(), "say ");
    e.start();
    type(e, "foo bar\x01\x1b" "d\x0b\x1f");  // Alt-D, Ctrl-K: undone one at a time
    EXPECT_EQ(e.text(), " bar");
    type(e, "\x1f");
    EXPECT_EQ(e.text(), "foo bar");
    e.start();  // a new line starts with nothing to undo
    type(e, "\x1f");
    EXPECT_EQ(e.text(), "");
}

TEST(LineEditor, CtrlDDeletesForwardOnALineAndEndsInputOnAnEmptyOne) {
    LineEditor e;
    e.start();
    EXPECT_EQ(type(e, "abc\x01\x04"), Step::Edit);
    EXPECT_EQ(e.text(), "bc");
    EXPECT_EQ(type(e, "\x05\x04"), Step::Edit);  // at the end: nothing to delete
    EXPECT_EQ(e.text(), "bc");
    e.start();
    EXPECT_EQ(e.feed(4), Step::Eof);
}

TEST(LineEditor, CtrlCInterruptsCtrlLAsksForAClearScreenAndCtrlZForASuspend) {
    LineEditor e;
    e.start();
    EXPECT_EQ(type(e, "half a line\x03"), Step::Interrupt);
    EXPECT_TRUE(e.history().empty());
    e.start();
    EXPECT_EQ(type(e, "x\x0c"), Step::Clear);
    EXPECT_EQ(type(e, "\x1a"), Step::Suspend);
    EXPECT_EQ(e.text(), "x");
}

TEST(LineEditor, BackspaceAndArrowsStepOverWholeUtf8Characters) {
    EXPECT_EQ(typed("caf\xc3\xa9\x7f" "e"), "cafe");
    EXPECT_EQ(typed("\xe4\xbd\xa0\xe5\xa5\xbd" + kLeft + "!"), "\xe4\xbd\xa0!\xe5\xa5\xbd");
    EXPECT_EQ(typed("a\xf0\x9f\x99\x82" + kLeft + kLeft + kRight + kRight + "b"), "a\xf0\x9f\x99\x82" "b");
    LineEditor e;
    e.start();
    type(e, "\xc3\xa9t\xc3\xa9\x01\x04");  // Ctrl-D at the start deletes the whole first character
    EXPECT_EQ(e.text(), "t\xc3\xa9");
}

TEST(LineEditor, CursorKeysInTheirCsiAndSs3Forms) {
    EXPECT_EQ(typed("bc" + kLeft + kLeft + "a" + kRight + kRight + "d"), "abcd");
    EXPECT_EQ(typed("bc\x1bOD\x1bOD" "a\x1bOC\x1bOC" "d"), "abcd");  // application cursor mode
    // Home and End: CSI H/F, SS3 H/F, and the "1~ 7~ / 4~ 8~" forms of other terminals.
    for (const std::string home : {"\x1b[H", "\x1bOH", "\x1b[1~", "\x1b[7~"}) EXPECT_EQ(typed("b" + home + "a"), "ab") << home.substr(1);
    for (const std::string end : {"\x1b[F", "\x1bOF", "\x1b[4~", "\x1b[8~"}) EXPECT_EQ(typed("a\x01" + end + "b"), "ab") << end.substr(1);
    EXPECT_EQ(typed("abc\x01\x1b[3~"), "bc");  // Delete
}

TEST(LineEditor, FunctionAndModifiedKeysNeverLeakIntoTheLine) {
    // Each of these once typed its tail ("~", "5D", "2~"…) into the line.
    for (const std::string key : {"\x1b[15~", "\x1b[24~", "\x1b[2~", "\x1b[5~", "\x1b[6~", "\x1bOP", "\x1bOS",
                                  "\x1b[1;2P", "\x1b[3;5~", "\x1b[1;2A", "\x1b[200~", "\x1b[Z", "\x1b[?1;2c"}) {
        EXPECT_EQ(typed("ab" + key + "c"), "abc") << key.substr(1);
    }
    EXPECT_EQ(typed("ab\x1b[1;2D" "c"), "acb");  // Shift-Left moves one character
}

TEST(LineEditor, WordMotionWithCtrlOrAltArrowsAndAltBF) {
    const std::string text = "int main(void) {";
    for (const std::string left : {"\x1b[1;5D", "\x1b[1;3D", "\x1b" "b"}) {
        EXPECT_EQ(typed(text + left + "|"), "int main(|void) {") << left.substr(1);
        EXPECT_EQ(typed(text + left + left + "|"), "int |main(void) {") << left.substr(1);
    }
    for (const std::string right : {"\x1b[1;5C", "\x1b[1;3C", "\x1b" "f"}) {
        EXPECT_EQ(typed(text + "\x01" + right + "|"), "int| main(void) {") << right.substr(1);
        EXPECT_EQ(typed(text + "\x01" + right + right + "|"), "int main|(void) {") << right.substr(1);
    }
    EXPECT_EQ(typed("snake_case x" + kLeft + kLeft + "\x1b" "b" "|"), "|snake_case x");  // '_' is part of a word
}

TEST(LineEditor, AltBackspaceAndAltDCutAWord) {
    EXPECT_EQ(typed("foo.bar_baz\x1b\x7f"), "foo.");
    EXPECT_EQ(typed("foo.bar_baz\x01\x1b" "d"), ".bar_baz");
    EXPECT_EQ(typed("foo.bar_baz\x01\x1b" "d\x1b" "d"), "");
}

TEST(LineEditor, EscThenAKeyWithNoAltMeaningIsThatKey) {
    LineEditor e;
    e.start();
    type(e, "a\x1b");
    EXPECT_TRUE(e.in_escape());
    e.feed('x');  // Esc, x: the x is typed, not swallowed
    EXPECT_FALSE(e.in_escape());
    EXPECT_EQ(e.text(), "ax");
    type(e, "\x1b");
    e.lone_escape();  // the caller waited and nothing followed
    type(e, "b");
    EXPECT_EQ(e.text(), "axb");
    type(e, "\x1b");
    e.lone_escape();
    EXPECT_EQ(e.feed('\r'), Step::Line);  // Esc, a pause, Enter: the line
    EXPECT_EQ(e.history().back(), "axb");
}

TEST(LineEditor, AltEnterPutsALineBreakInTheMessage) {
    LineEditor e;
    e.start();
    EXPECT_EQ(type(e, "first\x1b\rsecond"), Step::Edit);  // Esc and Enter together: Alt-Enter
    EXPECT_EQ(e.text(), "first\nsecond");
    EXPECT_EQ(e.render("> ", 80), "\r> first\u21b5second\x1b[K\r\x1b[14C");
    EXPECT_EQ(e.feed('\r'), Step::Line);
    EXPECT_EQ(e.text(), "first\nsecond");
}

TEST(LineEditor, AControlByteInsideABrokenSequenceCountsAsItself) {
    LineEditor e;
    e.start();
    EXPECT_EQ(type(e, "ab\x1b[1\x03"), Step::Interrupt);
    e.start();
    EXPECT_EQ(type(e, "ab\x1b[1;\r"), Step::Line);
    EXPECT_EQ(e.text(), "ab");
}

TEST(LineEditor, HistoryUpAndDownKeepTheLineBeingTyped) {
    LineEditor e;
    for (const char* line : {"first", "second"}) {
        e.start();
        type(e, std::string(line) + "\r");
    }
    e.start();
    type(e, "draft");
    type(e, kUp);
    EXPECT_EQ(e.text(), "second");
    EXPECT_EQ(e.cursor(), 6u);
    type(e, kUp + kUp);  // past the oldest: stays there
    EXPECT_EQ(e.text(), "first");
    type(e, "\x0e");  // Ctrl-N
    EXPECT_EQ(e.text(), "second");
    type(e, kDown + kDown);
    EXPECT_EQ(e.text(), "draft");
    type(e, "\x10!\r");  // Ctrl-P, then an edit of the recalled line becomes a new entry
    EXPECT_EQ(e.history(), (std::vector<std::string>{"first", "second", "second!"}));
}

TEST(LineEditor, HistoryKeepsTheNewestEntriesUpToItsCap) {
    LineEditor e;
    for (size_t i = 0; i < LineEditor::kMaxHistory + 5; ++i) {
        e.start();
        type(e, "line " + std::to_string(i) + "\r");
    }
    ASSERT_EQ(e.history().size(), LineEditor::kMaxHistory);
    EXPECT_EQ(e.history().front(), "line 5");
    EXPECT_EQ(e.history().back(), "line " + std::to_string(LineEditor::kMaxHistory + 4));
}

TEST(LineEditor, ABracketedPasteKeepsItsLineBreaksInTheLine) {
    LineEditor e;
    e.start();
    EXPECT_EQ(type(e, "see: \x1b[200~def f():\r    return 1\r\n\x1b[201~"), Step::Edit);
    EXPECT_EQ(e.text(), "see: def f():\n    return 1\n");
    EXPECT_EQ(e.render("> ", 80), "\r> see: def f():\u21b5    return 1\u21b5\x1b[K\r\x1b[29C");
    type(e, "\x7f");  // after the paste, keys are keys again
    EXPECT_EQ(e.feed('\r'), Step::Line);
    EXPECT_EQ(e.text(), "see: def f():\n    return 1");
    // Inside a paste: "\r\n" and "\n" are one break each; control bytes, an Esc and keys' whole sequences
    // are dropped (the "b" after an Esc is text), so a Ctrl-C or Ctrl-D byte in pasted text neither
    // interrupts nor ends the input.
    e.start();
    EXPECT_EQ(type(e, "\x1b[200~a\r\nb\nc\x03\x04\x1b\x1b[A\x1b[D\x1b" "b\x7f\td\x1b[201~"), Step::Edit);
    EXPECT_EQ(e.text(), "a\nb\ncb\td");
    EXPECT_EQ(type(e, "\x1b[D!"), Step::Edit);  // a key after the paste moves the cursor
    EXPECT_EQ(e.text(), "a\nb\ncb\t!d");
}

TEST(LineEditor, AHistoryGivenAtTheStartIsRecalledAndNewLinesAreMarkedAdded) {
    LineEditor e;
    std::vector<std::string> old;
    for (size_t i = 0; i < LineEditor::kMaxHistory + 3; ++i) old.push_back("old " + std::to_string(i));
    e.set_history(old);
    ASSERT_EQ(e.history().size(), LineEditor::kMaxHistory);
    EXPECT_EQ(e.history().front(), "old 3");
    e.start();
    type(e, kUp + "\r");
    EXPECT_EQ(e.text(), "old " + std::to_string(LineEditor::kMaxHistory + 2));
    EXPECT_FALSE(e.added());  // the newest entry again: not a new one
    e.start();
    type(e, "new\r");
    EXPECT_TRUE(e.added());
    e.start();
    type(e, "\r");
    EXPECT_FALSE(e.added());
}

LineEditor with_history(const std::vector<std::string>& lines) {
    LineEditor e;
    e.set_history(lines);
    e.start();
    return e;
}

TEST(LineEditor, CtrlRSearchesTheHistoryBackwardsAsYouType) {
    LineEditor e = with_history({"fix the parser", "add a test", "fix the lexer", "run it"});
    type(e, "draft\x12");
    EXPECT_EQ(e.render("> ", 80), "\r(reverse-i-search)`': draft\x1b[K\r\x1b[27C");
    type(e, "fix");
    EXPECT_EQ(e.text(), "fix the lexer");  // the newest entry holding it
    EXPECT_EQ(e.cursor(), 0u);
    type(e, " the p");
    EXPECT_EQ(e.text(), "fix the parser");  // typing narrows it, going further back when it must
    type(e, "\x7f\x7f\x7f\x7f\x7f\x7f");  // back to "fix": the newest again
    EXPECT_EQ(e.text(), "fix the lexer");
    type(e, "\x12");  // Ctrl-R again: the next older match
    EXPECT_EQ(e.text(), "fix the parser");
    type(e, "\x12");  // none older: the last match stays, the prompt says it failed
    EXPECT_EQ(e.text(), "fix the parser");
    EXPECT_EQ(e.render("> ", 80).rfind("\r(failed reverse-i-search)`fix': fix the parser\x1b[K", 0), 0u);
    EXPECT_EQ(e.feed('\r'), Step::Line);  // Enter: the match is the line
    EXPECT_EQ(e.text(), "fix the parser");
}

TEST(LineEditor, CtrlRThenAKeyEditsTheMatchAndCtrlGOrCtrlCGoBack) {
    const std::vector<std::string> h = {"make test", "make bench"};
    LineEditor e = with_history(h);
    type(e, "\x12test\x05 -j2");  // Ctrl-E takes the match and moves to its end
    EXPECT_EQ(e.text(), "make test -j2");
    e = with_history(h);
    type(e, "\x12" "bench" + kLeft + "X");  // an arrow key takes the match too
    EXPECT_EQ(e.text(), "makeX bench");  // the cursor was at the match, then one left
    e = with_history(h);
    type(e, "mine\x01\x12" "bench\x07");  // Ctrl-G: the line and cursor as they were
    EXPECT_EQ(e.text(), "mine");
    EXPECT_EQ(e.cursor(), 0u);
    EXPECT_EQ(e.render("> ", 80), "\r> mine\x1b[K\r\x1b[2C");
    e = with_history(h);
    EXPECT_EQ(type(e, "mine\x12test\x03"), Step::Interrupt);  // Ctrl-C: drops the search with the line
    EXPECT_EQ(e.text(), "mine");
    e = with_history(h);
    type(e, "\x12test" + kDown);  // after taking a match, Down goes to newer entries, then the line as it was
    EXPECT_EQ(e.text(), "make bench");
    type(e, kDown);
    EXPECT_EQ(e.text(), "");
}

// What render() shows between the prompt and the erase-to-end, and the cursor's column after it.
struct Shown {
    std::string text;
    int column = 0;
};
Shown shown(const LineEditor& e, const std::string& prompt, int width) {
    const std::string out = e.render(prompt, width);
    Shown s;
    const std::string head = "\r" + prompt;
    EXPECT_EQ(out.compare(0, head.size(), head), 0) << out;
    const size_t erase = out.find("\x1b[K\r");
    EXPECT_NE(erase, std::string::npos) << out;
    s.text = out.substr(head.size(), erase - head.size());
    const size_t move = out.find("\x1b[", erase + 4);
    if (move != std::string::npos) {
        EXPECT_EQ(out.back(), 'C') << out;
        s.column = std::atoi(out.c_str() + move + 2);
    }
    return s;
}

TEST(LineEditor, RenderDrawsTheLineAndPutsTheCursorInPlace) {
    LineEditor e;
    e.start();
    EXPECT_EQ(e.render("> ", 80), "\r> \x1b[K\r\x1b[2C");
    type(e, "hello\tworld" + kLeft);
    EXPECT_EQ(e.render("> ", 80), "\r> hello world\x1b[K\r\x1b[12C");  // a tab is drawn as one space
    EXPECT_EQ(e.render("", 80), "\rhello world\x1b[K\r\x1b[10C");
    e.start();
    EXPECT_EQ(e.render("", 80), "\r\x1b[K\r");
}

TEST(LineEditor, RenderCountsWideAndCombiningCharactersByTheirColumns) {
    LineEditor e;
    e.start();
    type(e, "\xe4\xbd\xa0\xe5\xa5\xbd" "e\xcc\x81" "x" + kLeft);  // two CJK characters (2 columns each), e + combining acute
    EXPECT_EQ(shown(e, "> ", 80).column, 2 + 4 + 1);
}

TEST(LineEditor, ALineWiderThanTheTerminalScrollsSidewaysAndNeverWraps) {
    std::string line;  // 60 different characters, so each stretch of it is found in one place
    for (int i = 0; i < 60; ++i) line += static_cast<char>(i < 26 ? 'a' + i : i < 52 ? 'A' + i - 26 : '0' + i - 52);
    LineEditor e;
    e.start();
    type(e, line);
    const int width = 30, room = width - 2 - 1;  // the prompt and the last column, left empty
    Shown s = shown(e, "> ", width);
    EXPECT_EQ(s.text, line.substr(line.size() - room));  // the end of the line, the cursor after it
    EXPECT_EQ(s.column, 2 + room);
    type(e, "\x01");
    s = shown(e, "> ", width);
    EXPECT_EQ(s.text, line.substr(0, room));
    EXPECT_EQ(s.column, 2);
    // Wherever the cursor is, what is drawn fits and the cursor is on the character it is at.
    for (size_t pos = 0; pos <= line.size(); ++pos) {
        s = shown(e, "> ", width);
        ASSERT_LE(static_cast<int>(s.text.size()), room) << pos;
        const int first = static_cast<int>(line.find(s.text));
        ASSERT_GE(first, 0) << pos;
        EXPECT_EQ(s.column - 2, static_cast<int>(pos) - first) << pos;
        type(e, kRight);
    }
    // Wide characters scroll whole: 40 of them (80 columns) in a 30-column terminal.
    e.start();
    for (int i = 0; i < 40; ++i) type(e, "\xe5\xa5\xbd");
    s = shown(e, "> ", width);
    EXPECT_EQ(s.text.size() / 3, static_cast<size_t>(room / 2));
    EXPECT_LE(s.column, width - 1);
}

TEST(LineEditor, CharColumns) {
    EXPECT_EQ(char_columns(U'a'), 1);
    EXPECT_EQ(char_columns(U'\u00e9'), 1);
    EXPECT_EQ(char_columns(U'\u0301'), 0);   // combining acute
    EXPECT_EQ(char_columns(U'\u4f60'), 2);   // CJK
    EXPECT_EQ(char_columns(U'\U0001F642'), 2);  // emoji
    EXPECT_EQ(char_columns(U'\ufffd'), 1);
}

// Columns of a drawing made of ASCII, '↵', 'é' and '好' (the only characters the random keys below type).
int drawn_columns(const std::string& s) {
    int n = 0;
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 3, "\xe5\xa5\xbd") == 0) n += 2, i += 3;
        else if (s.compare(i, 3, "\u21b5") == 0) n += 1, i += 3;
        else if (s.compare(i, 2, "\xc3\xa9") == 0) n += 1, i += 2;
        else n += 1, i += 1;
    }
    return n;
}

TEST(LineEditor, RandomKeysKeepTheLineWholeAndTheDrawingWithinTheWidth) {
    // Every key of the editor, as a terminal sends it, in a seeded random order; after each: the text is
    // valid UTF-8, the cursor on a character boundary, and each drawing (in 8, 30 and 80 columns) fits
    // its width with the cursor inside it. (The exact cursor columns are checked by the tests above.)
    const std::vector<std::string> keys = {
        "a", "b", "z", "_", " ", " ", ".", "\xc3\xa9", "\xe5\xa5\xbd", "\t", "\x7f", "\x08", "\x01", "\x02", "\x05",
        "\x06", "\x0b", "\x15", "\x17", "\x0e", "\x10", "\x0c", "\x1a", "\x12", "\x07", "\x04", "\r", "\x03",
        "\x1b[D", "\x1b[C", "\x1b[A", "\x1b[B", "\x1b[H", "\x1b[F", "\x1bOD", "\x1b[3~", "\x1b[1;5D", "\x1b[1;5C",
        "\x1b[15~", "\x1b" "b", "\x1b" "f", "\x1b" "d", "\x1b\x7f", "\x1b\r", "\x1b[200~", "\x1b[201~", "\x1b[1;", "\x19", "\x1f",
    };
    LineEditor e;
    e.set_completer([](const std::string& text, size_t cursor) {
        LineEditor::Completion c;
        if (cursor > 0 && text[0] == 'a') c = {0, {"ab\xc3\xa9 ", "ab\xe5\xa5\xbd/"}};
        return c;
    });
    e.start();
    uint32_t rng = 12345;
    int lines = 0;
    for (int step = 0; step < 20000; ++step) {
        rng = rng * 1664525u + 1013904223u;
        const std::string& k = keys[(rng >> 8) % keys.size()];
        Step last = Step::Edit;
        for (unsigned char c : k) last = e.feed(c);
        if (e.in_escape() && (rng & 1)) e.lone_escape();  // sometimes the pause after an Esc comes
        if (last == Step::Line || last == Step::Eof || last == Step::Interrupt) {
            ++lines;
            e.start();
            continue;
        }
        const std::string& t = e.text();
        ASSERT_TRUE(valid_utf8_for_test(t)) << "step " << step;
        ASSERT_LE(e.cursor(), t.size()) << "step " << step;
        ASSERT_TRUE(e.cursor() == t.size() || (static_cast<unsigned char>(t[e.cursor()]) & 0xC0) != 0x80) << "step " << step;
        for (int width : {8, 30, 80}) {
            const std::string out = e.render("> ", width);
            const size_t erase = out.find("\x1b[K\r");
            ASSERT_NE(erase, std::string::npos);
            // The prompt: "> ", or a search's "(reverse-i-search)`QUERY': " (no key types a quote or a colon).
            const size_t prompt_end = out.compare(0, 3, "\r> ") == 0 ? 3 : out.find("': ") + 3;
            ASSERT_LE(prompt_end, erase) << out;
            const int prompt_cols = drawn_columns(out.substr(1, prompt_end - 1));
            const int room = std::max(1, width - prompt_cols - 1);
            EXPECT_LE(drawn_columns(out.substr(prompt_end, erase - prompt_end)), room) << "step " << step << " width " << width;
            const int column = erase + 4 < out.size() ? std::atoi(out.c_str() + erase + 6) : 0;
            EXPECT_GE(column, prompt_cols) << "step " << step;
            EXPECT_LE(column, prompt_cols + room) << "step " << step;
        }
    }
    EXPECT_GT(lines, 100);  // the walk went through many lines, not one long one
}

}  // namespace
}  // namespace flint::client
