#include "client/terminal.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace flint::client {
namespace {

std::atomic<bool> g_sigint{false};
void on_sigint(int) { g_sigint = true; }

// The terminal as it was before raw mode, for a SIGTERM or SIGHUP that ends the process in raw mode:
// without it the shell is left with no echo and bracketed paste on. Set while raw mode is on.
termios g_cooked;
std::atomic<bool> g_raw{false};

void on_fatal_signal(int sig) {
    if (g_raw) {  // tcsetattr and write are async-signal-safe
        tcsetattr(STDIN_FILENO, TCSADRAIN, &g_cooked);
        const char off[] = "\x1b[?2004l";
        if (::write(STDOUT_FILENO, off, sizeof off - 1) < 0) {}
    }
    signal(sig, SIG_DFL);
    raise(sig);  // ends as the signal would have
}

void write_out(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(STDOUT_FILENO, s.data() + off, s.size() - off);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
    }
}

// The terminal's width in columns (asked at each redraw, so a resized window is followed); 80 if unknown.
int terminal_width() {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

bool stdin_readable(int timeout_ms) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
}

// Tab's candidates under the line, in columns as ls prints them (down, then across); past 200 a count.
std::string listing(const std::vector<std::string>& items, int width) {
    constexpr size_t kMaxShown = 200;
    const size_t shown = std::min(items.size(), kMaxShown);
    size_t widest = 1;
    for (size_t i = 0; i < shown; ++i) widest = std::max(widest, items[i].size());
    const size_t col_width = widest + 2;
    const size_t cols = std::max<size_t>(1, static_cast<size_t>(width) / col_width);
    const size_t rows = (shown + cols - 1) / cols;
    std::string out;
    for (size_t r = 0; r < rows; ++r) {
        for (size_t k = 0; k < cols; ++k) {
            const size_t i = k * rows + r;
            if (i >= shown) break;
            out += items[i];
            if ((k + 1) * rows + r < shown) out += std::string(col_width - items[i].size(), ' ');
        }
        out += "\r\n";
    }
    if (items.size() > shown) out.append("(").append(std::to_string(items.size() - shown)).append(" more)\r\n");
    return out;
}

}  // namespace

struct Terminal::Saved {
    termios tio;
    struct sigaction old_int, old_term, old_hup;
};

Terminal::Terminal() {
    tty_ = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    saved_ = new Saved{};
    // On a pipe Ctrl-C arrives as SIGINT; on a tty in raw mode it arrives as byte 3. Either way no exit.
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved_->old_int);
    if (!tty_) return;
    tcgetattr(STDIN_FILENO, &saved_->tio);
    g_cooked = saved_->tio;
    struct sigaction fatal {};
    fatal.sa_handler = on_fatal_signal;
    sigemptyset(&fatal.sa_mask);
    sigaction(SIGTERM, &fatal, &saved_->old_term);
    sigaction(SIGHUP, &fatal, &saved_->old_hup);
}

Terminal::~Terminal() {
    raw_off();
    sigaction(SIGINT, &saved_->old_int, nullptr);
    if (tty_) {
        sigaction(SIGTERM, &saved_->old_term, nullptr);
        sigaction(SIGHUP, &saved_->old_hup, nullptr);
    }
    delete saved_;
}

void Terminal::raw_on() {
    if (!tty_ || raw_) return;
    termios t = saved_->tio;
    t.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    t.c_cflag |= CS8;
    t.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSADRAIN, &t);  // keeps type-ahead; output post-processing stays on: "\n" still returns the carriage
    write_out("\x1b[?2004h");  // bracketed paste: a pasted text arrives marked, so its line breaks do not each send
    raw_ = true;
    g_raw = true;
}

void Terminal::raw_off() {
    if (!raw_) return;
    g_raw = false;
    write_out("\x1b[?2004l");
    tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_->tio);
    raw_ = false;
}

void Terminal::watch(int fd, std::function<bool()> on_ready) {
    watch_fd_ = fd;
    on_ready_ = std::move(on_ready);
}

bool Terminal::wait_input() {
    for (;;) {
        pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {watch_fd_, POLLIN, 0}};
        if (::poll(p, watch_fd_ >= 0 ? 2 : 1, -1) < 0) return errno != EINTR;  // another error: read() reports it
        if (watch_fd_ >= 0 && p[1].revents != 0 && !on_ready_()) watch_fd_ = -1;
        if (p[0].revents != 0) return true;
    }
}

bool Terminal::input_waiting(int timeout_ms) const { return typeahead_pos_ < typeahead_.size() || stdin_readable(timeout_ms); }

int Terminal::read_byte() {
    if (typeahead_pos_ < typeahead_.size()) return static_cast<unsigned char>(typeahead_[typeahead_pos_++]);
    typeahead_.clear();
    typeahead_pos_ = 0;
    unsigned char c;
    for (;;) {
        if (!wait_input()) {
            if (!tty_) return -2;  // SIGINT while waiting on a pipe
            continue;
        }
        ssize_t n = ::read(STDIN_FILENO, &c, 1);
        if (n == 1) return c;
        if (n < 0 && errno == EINTR) {
            if (!tty_) return -2;  // SIGINT while waiting on a pipe
            continue;
        }
        return -1;
    }
}

Terminal::Read Terminal::read_line(const std::string& prompt, std::string& line) {
    line.clear();
    g_sigint = false;
    if (!tty_) {
        for (;;) {
            const size_t nl = pipe_buf_.find('\n');
            if (nl != std::string::npos) {
                line = pipe_buf_.substr(0, nl);
                pipe_buf_.erase(0, nl + 1);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                return Read::Line;
            }
            char buf[4096];
            if (!wait_input()) return Read::Interrupt;
            ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
            if (n < 0 && errno == EINTR) return Read::Interrupt;
            if (n <= 0) {
                if (pipe_buf_.empty()) return Read::Eof;
                line.swap(pipe_buf_);
                return Read::Line;
            }
            pipe_buf_.append(buf, static_cast<size_t>(n));
        }
    }
    raw_on();
    editor_.start();
    write_out(editor_.render(prompt, terminal_width()));
    for (;;) {
        const int c = read_byte();
        if (c < 0) {
            raw_off();
            return Read::Eof;
        }
        const LineEditor::Step step = editor_.feed(static_cast<unsigned char>(c));
        // An Esc starts a key's sequence, whose bytes arrive together; a lone Esc is dropped after a pause
        // rather than taken as the start of whatever is typed next.
        if (editor_.in_escape() && !input_waiting(kEscapeWaitMs)) editor_.lone_escape();
        switch (step) {
        // Raw mode stays on after a line: keys typed while it is handled are neither echoed by the tty nor
        // cooked by it (a Ctrl-D there would be taken as the end of a cooked line and lost).
        case LineEditor::Step::Line:
            write_out(editor_.render(prompt, terminal_width()) + "\r\n");
            line = editor_.text();
            return Read::Line;
        case LineEditor::Step::Interrupt:  // the abandoned line stays on screen, "^C" after it
            editor_.cursor_to_end();
            write_out(editor_.render(prompt, terminal_width()) + "^C\r\n");
            line = editor_.text();
            return Read::Interrupt;
        case LineEditor::Step::Eof:
            write_out("\r\n");
            raw_off();
            return Read::Eof;
        case LineEditor::Step::Clear:
            write_out("\x1b[H\x1b[2J");
            break;
        case LineEditor::Step::Suspend:  // raw mode turns off the tty's own Ctrl-Z, so do what it would
            write_out("\r\n");
            raw_off();
            ::kill(0, SIGTSTP);  // the whole job stops; this returns once the shell continues it
            raw_on();
            break;
        case LineEditor::Step::Edit:
            if (input_waiting(0)) continue;  // a paste or a key's sequence: draw once it has all arrived
            break;
        case LineEditor::Step::List:
            write_out("\r\n" + listing(editor_.listing(), terminal_width()));
            break;
        }
        write_out(editor_.render(prompt, terminal_width()));
    }
}

bool Terminal::interrupt_pressed() {
    if (g_sigint.exchange(false)) return true;
    if (!tty_) return false;
    raw_on();  // keystrokes during a response are read raw, so Ctrl-C and Esc arrive as bytes
    bool hit = false;
    while (stdin_readable(0)) {
        unsigned char buf[256];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; ++i) {
            // A lone Esc interrupts; Esc followed by '[' or 'O' in the same read is a cursor key.
            const bool esc_key = buf[i] == 27 && i + 1 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O');
            if (buf[i] == 3 || (buf[i] == 27 && !esc_key)) {
                hit = true;
                continue;
            }
            // The rest is type-ahead: the next prompt starts with it, as a shell's does.
            if (typeahead_.size() < kMaxTypeahead) typeahead_ += static_cast<char>(buf[i]);
        }
    }
    return hit;
}

}  // namespace flint::client
