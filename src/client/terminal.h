// flint/client/terminal.h — the keyboard side of `flint chat`: a small raw-mode line editor (cursor keys,
// history, Ctrl-A/E/K/U/W) on a tty, plain line reads on a pipe, and a non-blocking "did the user press
// Ctrl-C or Esc?" check while a response streams. Restores the terminal on destruction.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace flint::client {

class Terminal {
public:
    Terminal();
    ~Terminal();
    Terminal(const Terminal&) = delete;
    Terminal& operator=(const Terminal&) = delete;

    bool interactive() const { return tty_; }  // stdin and stdout are both terminals

    enum class Read { Line, Eof, Interrupt };
    // Eof: Ctrl-D on an empty line or end of input. Interrupt: Ctrl-C (or SIGINT on a pipe).
    Read read_line(const std::string& prompt, std::string& line);
    // True once per Ctrl-C / Esc press (tty) or SIGINT (pipe) since the last call; never blocks.
    bool interrupt_pressed();
    // While read_line() waits for input, `fd` is watched too: on_ready() runs whenever it is readable and
    // returns false to stop watching it (chat: its WebSocket answers the server's pings at the prompt).
    void watch(int fd, std::function<bool()> on_ready);

private:
    void raw_on();
    void raw_off();
    void refresh(const std::string& prompt, const std::string& buf, size_t cursor) const;
    int read_byte();  // blocking; -1 at end of input
    bool wait_input();  // until stdin is readable, serving the watched fd meanwhile; false when a signal cut it short

    bool tty_ = false;
    bool raw_ = false;
    std::vector<std::string> history_;
    std::string pipe_buf_;  // bytes read from a pipe past the current line
    int watch_fd_ = -1;
    std::function<bool()> on_ready_;
    struct Saved;
    Saved* saved_ = nullptr;
};

}  // namespace flint::client
