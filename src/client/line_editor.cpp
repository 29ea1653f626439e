#include "client/line_editor.h"

#include <algorithm>
#include <cstdlib>
#include <cwchar>

#include <locale.h>

namespace flint::client {
namespace {

bool continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

size_t prev_char(const std::string& s, size_t i) {
    if (i == 0) return 0;
    do --i;
    while (i > 0 && continuation(static_cast<unsigned char>(s[i])));
    return i;
}

size_t next_char(const std::string& s, size_t i) {
    if (i >= s.size()) return s.size();
    do ++i;
    while (i < s.size() && continuation(static_cast<unsigned char>(s[i])));
    return i;
}

// The code point starting at s[i] (its end in `end`); a malformed sequence is one byte, U+FFFD.
char32_t decode(const std::string& s, size_t i, size_t& end) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    end = next_char(s, i);
    const size_t len = end - i;
    const size_t want = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (want == 1) return b;
    if (want != len) {
        end = i + 1;
        return 0xFFFD;
    }
    char32_t cp = b & (0x7F >> want);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    return cp;
}

int columns(const std::string& s) {
    int n = 0;
    for (size_t i = 0, end; i < s.size(); i = end) n += char_columns(decode(s, i, end));
    return n;
}

// Letters, digits and '_' in ASCII; any byte of a multi-byte character (letters of other scripts).
bool word_byte(unsigned char b) { return b >= 0x80 || b == '_' || (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z'); }

size_t word_left(const std::string& s, size_t i) {
    while (i > 0 && !word_byte(static_cast<unsigned char>(s[i - 1]))) --i;
    while (i > 0 && word_byte(static_cast<unsigned char>(s[i - 1]))) --i;
    return i;
}

size_t word_right(const std::string& s, size_t i) {
    while (i < s.size() && !word_byte(static_cast<unsigned char>(s[i]))) ++i;
    while (i < s.size() && word_byte(static_cast<unsigned char>(s[i]))) ++i;
    return i;
}

}  // namespace

int char_columns(char32_t cp) {
    if (cp < 0x7F) return 1;  // printable ASCII (and the tab, drawn as one space)
    // glibc's tables for the C.UTF-8 locale, used on this thread only: the process's own locale stays "C".
    static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (utf8 == static_cast<locale_t>(nullptr)) return 1;
    const locale_t old = uselocale(utf8);
    const int w = wcwidth(static_cast<wchar_t>(cp));
    uselocale(old);
    return w < 0 ? 1 : w;  // a control or unassigned code point: the terminal shows something one column wide
}

void LineEditor::start() {
    buf_.clear();
    cur_ = 0;
    hist_ = history_.size();
    draft_.clear();
    esc_ = Esc::None;
    paste_ = false;
    added_ = false;
    search_ = false;
    undo_.clear();
    typing_run_ = false;
}

void LineEditor::set_history(std::vector<std::string> entries) {
    if (entries.size() > kMaxHistory) entries.erase(entries.begin(), entries.end() - kMaxHistory);
    history_ = std::move(entries);
    hist_ = history_.size();
}

void LineEditor::erase(size_t from, size_t to) {
    buf_.erase(from, to - from);
    if (cur_ > to) cur_ -= to - from;
    else if (cur_ > from) cur_ = from;
}

void LineEditor::kill(size_t from, size_t to) {
    if (to > from) killed_ = buf_.substr(from, to - from);  // cutting nothing keeps what Ctrl-Y gives
    erase(from, to);
}

void LineEditor::history_step(int dir) {
    if (dir < 0 && hist_ > 0) {
        if (hist_ == history_.size()) draft_ = buf_;
        buf_ = history_[--hist_];
    } else if (dir > 0 && hist_ < history_.size()) {
        ++hist_;
        buf_ = hist_ == history_.size() ? draft_ : history_[hist_];
    }
    cur_ = buf_.size();
}

void LineEditor::remember() {
    if (!undo_.empty() && undo_.back().first == buf_) {  // the same line: only the cursor moved since
        undo_.back().second = cur_;
        return;
    }
    undo_.emplace_back(buf_, cur_);
    if (undo_.size() > kMaxUndo) undo_.erase(undo_.begin());
}

void LineEditor::undo() {
    while (!undo_.empty() && undo_.back().first == buf_) undo_.pop_back();  // steps that changed nothing
    if (undo_.empty()) return;
    buf_ = std::move(undo_.back().first);
    cur_ = undo_.back().second;
    undo_.pop_back();
}

LineEditor::Step LineEditor::feed(unsigned char c) {
    // What Ctrl-_ goes back to: the line before each editing key, before each key sequence (Alt-D, a
    // paste…), and before each run of typed characters as a whole. Not inside a paste or a search.
    if (esc_ == Esc::None && !paste_ && !search_) {
        const bool typing = c >= 32 && c != 127;
        if (c == 31) {
            typing_run_ = false;
            undo();
            return Step::Edit;
        }
        if (!typing || !typing_run_) remember();
        typing_run_ = typing;
    }
    switch (esc_) {
    case Esc::None:
        return plain(c);
    case Esc::Started:
        esc_ = Esc::None;
        if (c == '[') {
            esc_ = Esc::Csi;
            params_.clear();
        } else if (paste_) {
            return pasted(c);  // an Esc inside pasted text: dropped
        } else if (c == 'O') {
            esc_ = Esc::Ss3;
        } else if (c == 'b' || c == 'B') {
            cur_ = word_left(buf_, cur_);
        } else if (c == 'f' || c == 'F') {
            cur_ = word_right(buf_, cur_);
        } else if (c == 'd' || c == 'D') {
            kill(cur_, word_right(buf_, cur_));
        } else if (c == 127 || c == 8) {
            kill(word_left(buf_, cur_), cur_);
        } else if (c == '\r') {  // Alt-Enter: a line break in the message, which goes on
            buf_.insert(cur_++, 1, '\n');
        } else {
            return key(c);  // Esc then a key with no Alt meaning: the key, as typed
        }
        return Step::Edit;
    case Esc::Ss3:
        esc_ = Esc::None;
        sequence(static_cast<char>(c), "");
        return Step::Edit;
    case Esc::Csi:
        if (c >= 0x30 && c <= 0x3F) {  // parameter bytes: digits, ';'
            if (params_.size() < 16) params_ += static_cast<char>(c);
            return Step::Edit;
        }
        if (c >= 0x20 && c <= 0x2F) return Step::Edit;  // intermediate bytes: no key of ours has them
        esc_ = Esc::None;
        if (c >= 0x40 && c <= 0x7E) {
            sequence(static_cast<char>(c), params_);
            return Step::Edit;
        }
        return plain(c);  // a control byte cuts a broken sequence short and counts as itself
    }
    return Step::Edit;
}

void LineEditor::sequence(char final, const std::string& params) {
    // "N;M": N selects the key for '~' sequences, M-1 is a bit set of modifiers (1 Shift, 2 Alt, 4 Ctrl).
    const int n = params.empty() ? 1 : std::atoi(params.c_str());
    const size_t semi = params.find(';');
    const int mods = semi == std::string::npos ? 0 : std::max(0, std::atoi(params.c_str() + semi + 1) - 1);
    const bool by_word = (mods & (2 | 4)) != 0;
    if (paste_ && final != '~') return;
    switch (final) {
    case 'A': history_step(-1); break;
    case 'B': history_step(+1); break;
    case 'C': cur_ = by_word ? word_right(buf_, cur_) : next_char(buf_, cur_); break;
    case 'D': cur_ = by_word ? word_left(buf_, cur_) : prev_char(buf_, cur_); break;
    case 'H': cur_ = 0; break;
    case 'F': cur_ = buf_.size(); break;
    case '~':
        if (n == 200 || n == 201) {  // a bracketed paste starts or ends
            paste_ = n == 200;
            paste_cr_ = false;
        } else if (paste_) {
            break;  // no keys inside a paste
        } else if (n == 1 || n == 7) {
            cur_ = 0;
        } else if (n == 4 || n == 8) {
            cur_ = buf_.size();
        } else if (n == 3) {
            erase(cur_, next_char(buf_, cur_));
        }
        break;  // Insert, Page Up/Down, F5–F12…: nothing
    default: break;  // F1–F4 (SS3 P–S) and the rest: nothing
    }
}

void LineEditor::search_from(size_t end) {
    for (size_t i = end; i-- > 0;) {
        const size_t at = history_[i].find(query_);
        if (at != std::string::npos) {
            match_ = i;
            buf_ = history_[i];
            cur_ = at;
            search_failed_ = false;
            return;
        }
    }
    search_failed_ = true;  // the last match stays shown, as readline does
}

void LineEditor::end_search(bool take_match) {
    search_ = false;
    if (!take_match) {
        buf_ = before_search_;
        cur_ = before_search_cur_;
        return;
    }
    // Up and Down go on from the match; Down past the newest entry gives back the line as it was.
    draft_ = before_search_;
    hist_ = std::min(match_, history_.size());
}

bool LineEditor::search_key(unsigned char c) {
    if (c == 18) {  // Ctrl-R again: an older match
        search_from(match_);
    } else if (c == 7) {  // Ctrl-G: the line as it was before the search
        end_search(false);
    } else if (c == 127 || c == 8) {
        query_.erase(prev_char(query_, query_.size()));
        if (query_.empty()) {
            buf_ = before_search_;
            cur_ = before_search_cur_;
            match_ = history_.size();
            search_failed_ = false;
        } else {
            search_from(history_.size());
        }
    } else if (c == '\t' || c >= 32) {
        query_ += static_cast<char>(c);
        search_from(std::min(match_ + 1, history_.size()));  // the entry shown still counts
    } else {
        end_search(c != 3);  // Ctrl-C drops the search with the line it started from
        return false;
    }
    return true;
}

LineEditor::Step LineEditor::complete() {
    Completion c = completer_ ? completer_(buf_, cur_) : Completion{};
    if (c.start == std::string::npos || c.start > cur_) {
        buf_.insert(cur_++, 1, '\t');
        return Step::Edit;
    }
    if (c.candidates.empty()) return Step::Edit;
    // The longest start all candidates share, cut back to a whole UTF-8 character.
    std::string common = c.candidates.front();
    for (const std::string& cand : c.candidates) {
        size_t n = 0;
        while (n < common.size() && n < cand.size() && common[n] == cand[n]) ++n;
        common.resize(n);
    }
    while (!common.empty() && continuation(static_cast<unsigned char>(common.back()))) common.pop_back();
    if (!common.empty() && static_cast<unsigned char>(common.back()) >= 0xC0) common.pop_back();
    const std::string typed = buf_.substr(c.start, cur_ - c.start);
    if (c.candidates.size() > 1 && common.size() <= typed.size()) {
        // Listed without the directory they share, as a shell lists them ("main.cpp", not "src/main.cpp").
        const size_t slash = common.rfind('/');
        const size_t drop = slash == std::string::npos || slash == 0 ? 0 : slash + 1;
        listing_.clear();
        for (const std::string& cand : c.candidates) listing_.push_back(cand.substr(drop));
        return Step::List;
    }
    buf_.replace(c.start, cur_ - c.start, common);
    cur_ = c.start + common.size();
    return Step::Edit;
}

LineEditor::Step LineEditor::key(unsigned char c) {
    if (search_ && search_key(c)) return Step::Edit;
    switch (c) {
    case '\r':
    case '\n':
        added_ = !buf_.empty() && (history_.empty() || history_.back() != buf_);
        if (added_) {
            history_.push_back(buf_);
            if (history_.size() > kMaxHistory) history_.erase(history_.begin());
        }
        return Step::Line;
    case 3: return Step::Interrupt;
    case 4:
        if (buf_.empty()) return Step::Eof;
        erase(cur_, next_char(buf_, cur_));
        return Step::Edit;
    case 1: cur_ = 0; return Step::Edit;
    case 2: cur_ = prev_char(buf_, cur_); return Step::Edit;
    case 5: cur_ = buf_.size(); return Step::Edit;
    case 6: cur_ = next_char(buf_, cur_); return Step::Edit;
    case 8:
    case 127: erase(prev_char(buf_, cur_), cur_); return Step::Edit;
    case 11: kill(cur_, buf_.size()); return Step::Edit;
    case 12: return Step::Clear;
    case 14: history_step(+1); return Step::Edit;
    case 16: history_step(-1); return Step::Edit;
    case 21: kill(0, cur_); return Step::Edit;
    case 25: buf_.insert(cur_, killed_); cur_ += killed_.size(); return Step::Edit;  // Ctrl-Y
    case '\t': return complete();
    case 26: return Step::Suspend;
    case 18:  // Ctrl-R: search the history backwards
        search_ = true;
        search_failed_ = false;
        query_.clear();
        match_ = history_.size();
        before_search_ = buf_;
        before_search_cur_ = cur_;
        return Step::Edit;
    case 23: {  // Ctrl-W: the blank-delimited word before the cursor, as in a shell
        size_t p = cur_;
        while (p > 0 && buf_[p - 1] == ' ') --p;
        while (p > 0 && buf_[p - 1] != ' ') --p;
        kill(p, cur_);
        return Step::Edit;
    }
    case 27: esc_ = Esc::Started; return Step::Edit;
    default: break;
    }
    if (c >= 32) buf_.insert(cur_++, 1, static_cast<char>(c));  // other control bytes: nothing
    return Step::Edit;
}

LineEditor::Step LineEditor::pasted(unsigned char c) {
    if (c == 27) {  // the start of ESC[201~, the paste's end (any other sequence in it is dropped whole)
        esc_ = Esc::Started;
        return Step::Edit;
    }
    const bool cr = paste_cr_;
    paste_cr_ = c == '\r';
    if (c == '\n' && cr) return Step::Edit;  // the "\n" of a "\r\n": its break is in already
    if (c == '\r' || c == '\n') c = '\n';
    else if (c < 32 && c != '\t') return Step::Edit;  // other control bytes in pasted text: dropped
    else if (c == 127) return Step::Edit;
    buf_.insert(cur_++, 1, static_cast<char>(c));
    return Step::Edit;
}

std::string LineEditor::render(const std::string& prompt, int width) const {
    struct Cell {
        size_t begin, end;
        int cols;
    };
    std::vector<Cell> cells;
    size_t cursor_cell = 0;
    for (size_t i = 0, end; i < buf_.size(); i = end) {
        if (i < cur_) cursor_cell = cells.size() + 1;
        const char32_t cp = decode(buf_, i, end);
        cells.push_back({i, end, char_columns(cp)});
    }
    const std::string shown = !search_ ? prompt : (search_failed_ ? "(failed reverse-i-search)`" : "(reverse-i-search)`") + query_ + "': ";
    const int prompt_cols = columns(shown);
    // The last column stays empty: writing there would leave the terminal about to wrap.
    const int room = std::max(1, width - prompt_cols - 1);
    size_t first = 0;
    int before = 0;  // columns between the first cell shown and the cursor
    for (size_t k = 0; k < cursor_cell; ++k) before += cells[k].cols;
    while (before > room && first < cursor_cell) before -= cells[first++].cols;
    size_t last = first;
    for (int shown = 0; last < cells.size() && shown + cells[last].cols <= room; ++last) shown += cells[last].cols;
    std::string out = "\r" + shown;
    for (size_t k = first; k < last; ++k) {
        if (buf_[cells[k].begin] == '\t') out += ' ';
        else if (buf_[cells[k].begin] == '\n') out += "\u21b5";  // ↵, one column
        else out.append(buf_, cells[k].begin, cells[k].end - cells[k].begin);
    }
    out += "\x1b[K\r";
    const int col = prompt_cols + before;
    if (col > 0) out += "\x1b[" + std::to_string(col) + "C";
    return out;
}

}  // namespace flint::client
