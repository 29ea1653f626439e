#include "client/terminal.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <poll.h>
#include <termios.h>
#include <unistd.h>

namespace flint::client {
namespace {

std::atomic<bool> g_sigint{false};
void on_sigint(int) { g_sigint = true; }

void write_out(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(STDOUT_FILENO, s.data() + off, s.size() - off);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
    }
}

size_t columns(const std::string& s, size_t end) {  // UTF-8 characters in s[0, end)
    size_t n = 0;
    for (size_t i = 0; i < end && i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++n;
    return n;
}

size_t prev_char(const std::string& s, size_t i) {
    if (i == 0) return 0;
    do --i;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
    return i;
}

size_t next_char(const std::string& s, size_t i) {
    if (i >= s.size()) return s.size();
    do ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
    return i;
}

}  // namespace

struct Terminal::Saved {
    termios tio;
    struct sigaction old_int;
};

Terminal::Terminal() {
    tty_ = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    saved_ = new Saved{};
    // On a pipe Ctrl-C arrives as SIGINT; on a tty in raw mode it arrives as byte 3. Either way no exit.
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved_->old_int);
    if (tty_) tcgetattr(STDIN_FILENO, &saved_->tio);
}

Terminal::~Terminal() {
    raw_off();
    sigaction(SIGINT, &saved_->old_int, nullptr);
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
    raw_ = true;
}

void Terminal::raw_off() {
    if (!raw_) return;
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

int Terminal::read_byte() {
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

void Terminal::refresh(const std::string& prompt, const std::string& buf, size_t cursor) const {
    std::string s = "\r" + prompt + buf + "\x1b[K\r";
    const size_t col = columns(prompt, prompt.size()) + columns(buf, cursor);
    if (col > 0) s += "\x1b[" + std::to_string(col) + "C";
    write_out(s);
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
    std::string buf;
    size_t cur = 0;
    size_t hist = history_.size();
    std::string draft;
    refresh(prompt, buf, cur);
    for (;;) {
        int c = read_byte();
        if (c < 0) {
            raw_off();
            return Read::Eof;
        }
        if (c == '\r' || c == '\n') {
            write_out("\r\n");
            raw_off();
            line = buf;
            if (!buf.empty() && (history_.empty() || history_.back() != buf)) history_.push_back(buf);
            return Read::Line;
        }
        if (c == 3) {  // Ctrl-C
            write_out("^C\r\n");
            raw_off();
            return Read::Interrupt;
        }
        if (c == 4) {  // Ctrl-D: end on an empty line, delete forward otherwise
            if (buf.empty()) {
                write_out("\r\n");
                raw_off();
                return Read::Eof;
            }
            if (cur < buf.size()) buf.erase(cur, next_char(buf, cur) - cur);
        } else if (c == 127 || c == 8) {
            if (cur > 0) {
                size_t p = prev_char(buf, cur);
                buf.erase(p, cur - p);
                cur = p;
            }
        } else if (c == 1) {
            cur = 0;
        } else if (c == 5) {
            cur = buf.size();
        } else if (c == 11) {
            buf.erase(cur);
        } else if (c == 21) {
            buf.erase(0, cur);
            cur = 0;
        } else if (c == 23) {  // Ctrl-W: delete the word before the cursor
            size_t p = cur;
            while (p > 0 && buf[p - 1] == ' ') --p;
            while (p > 0 && buf[p - 1] != ' ') --p;
            buf.erase(p, cur - p);
            cur = p;
        } else if (c == 27) {  // escape sequences: arrows, home/end, delete
            int a = read_byte();
            if (a != '[' && a != 'O') continue;
            int b = read_byte();
            if (b >= '0' && b <= '9') {
                int t = read_byte();
                if (t == '~' && b == '3' && cur < buf.size()) buf.erase(cur, next_char(buf, cur) - cur);
                if (t == '~' && (b == '1' || b == '7')) cur = 0;
                if (t == '~' && (b == '4' || b == '8')) cur = buf.size();
            } else if (b == 'A' || b == 'B') {  // history
                if (b == 'A' && hist > 0) {
                    if (hist == history_.size()) draft = buf;
                    buf = history_[--hist];
                } else if (b == 'B' && hist < history_.size()) {
                    ++hist;
                    buf = hist == history_.size() ? draft : history_[hist];
                }
                cur = buf.size();
            } else if (b == 'C') {
                cur = next_char(buf, cur);
            } else if (b == 'D') {
                cur = prev_char(buf, cur);
            } else if (b == 'H') {
                cur = 0;
            } else if (b == 'F') {
                cur = buf.size();
            }
        } else if (c == '\t' || c >= 32) {
            buf.insert(cur, 1, static_cast<char>(c));
            ++cur;
            if (cur == buf.size() && c < 128) {  // typing at the end: echo the character, no redraw
                write_out(std::string(1, static_cast<char>(c)));
                continue;
            }
            // Let a multi-byte character arrive whole before redrawing.
            if ((c & 0xC0) == 0xC0 || (c & 0xC0) == 0x80) {
                pollfd p{STDIN_FILENO, POLLIN, 0};
                if (poll(&p, 1, 0) > 0) continue;
            }
        }
        refresh(prompt, buf, cur);
    }
}

bool Terminal::interrupt_pressed() {
    if (g_sigint.exchange(false)) return true;
    if (!tty_) return false;
    raw_on();  // keystrokes during a response are read raw, so Ctrl-C and Esc arrive as bytes
    bool hit = false;
    for (;;) {
        pollfd p{STDIN_FILENO, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) break;
        unsigned char buf[64];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] == 3) hit = true;
            // A lone Esc interrupts; Esc followed by '[' or 'O' in the same read is a cursor key.
            if (buf[i] == 27 && !(i + 1 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O'))) hit = true;
        }
    }
    return hit;
}

}  // namespace flint::client
