// flint/client/line_editor.h — the editing half of `flint chat`'s raw-terminal line editor, with no I/O:
// keyboard bytes in (escape sequences decoded whole, so a function key never leaks into the line), the
// line, its cursor and the history out, and what to write to show them on a terminal of a given width.
// Terminal (terminal.cpp) reads the bytes and writes what render() returns.
//
// Keys: printable text and Tab insert; Enter ends the line; Alt-Enter puts a line break in it; Ctrl-C interrupts; Ctrl-D ends input on an
// empty line and deletes forward otherwise. Left/Right, Ctrl-B/F: a character. Ctrl-Left/Right,
// Alt-Left/Right, Alt-B/F: a word (letters, digits, '_'). Home/End, Ctrl-A/E: the ends. Up/Down,
// Ctrl-P/N: history. Backspace, Delete; Ctrl-K/U: to the end / the start; Ctrl-W: the blank-delimited
// word before the cursor; Alt-Backspace / Alt-D: the word before / after it; Ctrl-Y: puts back what the
// last of those cut (kept from line to line). Ctrl-_: undo (a run of typing is one step). Ctrl-L: clear
// the screen.
// Ctrl-Z: suspend. Ctrl-R: search the history backwards as you type (Ctrl-R again: an older match;
// Ctrl-G: back to the line as it was; Enter: the match is the line; any other key takes the match and
// acts on it). Tab: completion, where a completer is set and offers it (else a tab). A bracketed paste (ESC[200~ … ESC[201~, which Terminal turns on) is text: its line
// breaks stay in the line, drawn as '↵', rather than each ending it, so pasted code goes as one message.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace flint::client {

class LineEditor {
public:
    enum class Step {
        Edit,       // the line or cursor may have changed: draw it when no more input is waiting
        Line,       // Enter: text() is the line, added to the history
        Eof,        // Ctrl-D on an empty line
        Interrupt,  // Ctrl-C
        Clear,      // Ctrl-L: clear the screen, then draw
        Suspend,    // Ctrl-Z: stop as a shell job, then draw again
        List,       // Tab with several completions and no common part left to add: show listing()
    };

    // What Tab may put in place of text[start, cursor): whole replacements ("/file ", "src/", "a.txt ").
    // No candidates and start == npos: Tab is not a completion there and types a tab.
    struct Completion {
        size_t start = std::string::npos;
        std::vector<std::string> candidates;
    };
    using Completer = std::function<Completion(const std::string& text, size_t cursor)>;
    void set_completer(Completer c) { completer_ = std::move(c); }
    const std::vector<std::string>& listing() const { return listing_; }  // after Step::List

    void start();  // a fresh empty line; the history stays
    Step feed(unsigned char byte);

    // Inside an escape sequence: the caller waits briefly for its rest, and calls lone_escape() if none
    // comes (a lone Esc, which is dropped rather than swallowing the next key typed).
    bool in_escape() const { return esc_ != Esc::None; }
    void lone_escape() { esc_ = Esc::None; }

    const std::string& text() const { return buf_; }
    size_t cursor() const { return cur_; }  // a byte offset into text(), always on a character boundary
    void cursor_to_end() { cur_ = buf_.size(); }
    const std::vector<std::string>& history() const { return history_; }
    void set_history(std::vector<std::string> entries);  // oldest first; the newest kMaxHistory are kept
    bool added() const { return added_; }  // the last Step::Line's text went into the history (new and not empty)

    // What to write to show `prompt` and the line with the cursor in place on a terminal `width` columns
    // wide. A line wider than the terminal scrolls sideways to keep the cursor in view, so it never wraps
    // (a wrapped line would be redrawn over its own second row).
    std::string render(const std::string& prompt, int width) const;

    static constexpr size_t kMaxHistory = 1000;
    static constexpr size_t kMaxUndo = 100;

private:
    enum class Esc { None, Started, Csi, Ss3 };
    Step key(unsigned char c);                         // one typed byte outside an escape sequence
    Step pasted(unsigned char c);                      // one byte of a bracketed paste
    Step plain(unsigned char c) { return paste_ ? pasted(c) : key(c); }
    void sequence(char final, const std::string& params);  // a whole CSI or SS3 sequence
    void history_step(int dir);                        // -1: older, +1: newer
    bool search_key(unsigned char c);                  // a key during a Ctrl-R search; false: it ended it
    void search_from(size_t end);                      // the newest entry before history_[end] holding query_
    void end_search(bool take_match);
    Step complete();                                   // Tab
    void erase(size_t from, size_t to);                // keeps the cursor where it was relative to the text
    void kill(size_t from, size_t to);                 // erase, keeping the text for Ctrl-Y
    void remember();                                   // the line as it is, for Ctrl-_
    void undo();

    std::string buf_;
    size_t cur_ = 0;
    std::vector<std::string> history_;
    size_t hist_ = 0;     // the history entry shown; history_.size() is the line being typed
    std::string draft_;   // the line being typed, kept while history entries are shown
    std::string killed_;  // the text the last Ctrl-K/U/W, Alt-D or Alt-Backspace cut, for Ctrl-Y
    std::vector<std::pair<std::string, size_t>> undo_;  // lines (and cursors) Ctrl-_ goes back to, oldest first
    bool typing_run_ = false;  // the last key typed a character: the next one joins its undo step
    bool added_ = false;
    Completer completer_;
    std::vector<std::string> listing_;
    bool search_ = false;    // in a Ctrl-R search
    bool search_failed_ = false;
    std::string query_;      // what the search looks for
    size_t match_ = 0;       // the history entry shown; history_.size(): none yet
    std::string before_search_;
    size_t before_search_cur_ = 0;
    Esc esc_ = Esc::None;
    std::string params_;  // a CSI sequence's parameter bytes so far
    bool paste_ = false;  // between ESC[200~ and ESC[201~
    bool paste_cr_ = false;  // the last pasted byte was '\r' (a "\r\n" is one line break)
};

// Display columns of one code point: 0 for combining marks, 2 for wide (East Asian, emoji), else 1.
int char_columns(char32_t cp);

}  // namespace flint::client
