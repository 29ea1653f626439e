// flint/client/terminal.h — the keyboard side of `flint chat`: a small raw-mode line editor on a tty (the
// keys are LineEditor's, line_editor.h), plain line reads on a pipe, and a non-blocking "did the user press
// Ctrl-C or Esc?" check while a response streams. Restores the terminal on destruction, and on a
// SIGTERM or SIGHUP that ends the process first.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "client/line_editor.h"

namespace flint::client {

class Terminal {
public:
    Terminal();
    ~Terminal();
    Terminal(const Terminal&) = delete;
    Terminal& operator=(const Terminal&) = delete;

    bool interactive() const { return tty_; }  // stdin and stdout are both terminals

    enum class Read { Line, Eof, Interrupt };
    // Eof: Ctrl-D on an empty line or end of input. Interrupt: Ctrl-C (or SIGINT on a pipe), with the
    // abandoned text, if any, in `line`.
    Read read_line(const std::string& prompt, std::string& line);
    // True once per Ctrl-C / Esc press (tty) or SIGINT (pipe) since the last call; never blocks. Other keys
    // pressed meanwhile are kept for the next read_line().
    bool interrupt_pressed();
    // The line editor's history (oldest first), and whether the last line read went into it.
    void set_history(std::vector<std::string> entries) { editor_.set_history(std::move(entries)); }
    bool line_added() const { return tty_ && editor_.added(); }
    // What Tab completes (line_editor.h); none: Tab types a tab.
    void set_completer(LineEditor::Completer c) { editor_.set_completer(std::move(c)); }
    // While read_line() waits for input, `fd` is watched too: on_ready() runs whenever it is readable and
    // returns false to stop watching it (chat: its WebSocket answers the server's pings at the prompt).
    void watch(int fd, std::function<bool()> on_ready);

private:
    void raw_on();
    void raw_off();
    static constexpr int kEscapeWaitMs = 50;  // how long the rest of a key's escape sequence may take to arrive
    int read_byte();  // blocking; the type-ahead first; -1 at end of input
    bool input_waiting(int timeout_ms) const;  // type-ahead left, or stdin readable within the timeout
    bool wait_input();  // until stdin is readable, serving the watched fd meanwhile; false when a signal cut it short

    bool tty_ = false;
    bool raw_ = false;
    LineEditor editor_;  // the line being typed and the history
    std::string typeahead_;  // keys typed while a response streamed, for the next prompt
    size_t typeahead_pos_ = 0;
    static constexpr size_t kMaxTypeahead = 64 * 1024;
    std::string pipe_buf_;  // bytes read from a pipe past the current line
    int watch_fd_ = -1;
    std::function<bool()> on_ready_;
    struct Saved;
    Saved* saved_ = nullptr;
};

}  // namespace flint::client
