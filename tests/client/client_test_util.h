// Client tests drive the real binaries: a `flint serve` child process on a free port, `flint chat` in a
// pseudo-terminal (forkpty) or through pipes, `flint edit` / `flint complete` through the shell.
#pragma once
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cli/cli_test_util.h"
#include "test_paths.h"

namespace flint::test {

using Clock = std::chrono::steady_clock;

// Reads what is available on fd into out until `done(out)` or the timeout; false on timeout or EOF.
template <typename Done>
bool read_until(int fd, std::string& out, double timeout_s, Done done) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    while (!done(out)) {
        const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, left) <= 0) continue;
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return done(out);
        out.append(buf, static_cast<size_t>(n));
    }
    return true;
}

// `flint serve --port 0 ARGS` as a child process; port() is what it printed it listens on.
class ServeProcess {
public:
    explicit ServeProcess(const std::string& args) {
        int fds[2];
        if (pipe(fds) != 0) return;
        pid_ = fork();
        if (pid_ == 0) {
            dup2(fds[1], STDOUT_FILENO);
            int null = open("/dev/null", O_WRONLY);
            dup2(null, STDERR_FILENO);
            close(fds[0]);
            const std::string cmd = "exec " + std::string(FLINT_BINARY) + " serve --port 0 --no-store " + args;
            execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        close(fds[1]);
        fd_ = fds[0];
        std::string out;
        const std::string tag = "listening on http://127.0.0.1:";
        if (read_until(fd_, out, 60, [&](const std::string& s) { return s.find('\n', s.find(tag)) != std::string::npos && s.find(tag) != std::string::npos; }))
            port_ = std::stoi(out.substr(out.find(tag) + tag.size()));
    }
    ~ServeProcess() { stop(); }
    void stop() {
        if (pid_ <= 0) return;
        kill(pid_, SIGTERM);
        int status;
        for (int i = 0; i < 100; ++i) {
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = 0;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            pid_ = 0;
        }
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }
    int port() const { return port_; }
    std::string http_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string ws_url() const { return "ws://127.0.0.1:" + std::to_string(port_) + "/v1/responses"; }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    int port_ = 0;
};

// A test suite sharing one `flint serve` process, started once for the suite: derive as
// `class S : public SharedServeSuite<S>` and give S `static std::vector<std::string> required()` (the
// ../shared files it needs) and `static std::string serve_args()`. A derived SetUp calls this one first
// and returns when it skipped or failed.
template <typename Suite>
class SharedServeSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        for (const std::string& rel : Suite::required())
            if (!shared_exists(rel)) return;
        server_ = new ServeProcess(Suite::serve_args());
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        for (const std::string& rel : Suite::required()) FLINT_REQUIRE_SHARED(rel);
        ASSERT_GT(server_->port(), 0) << "flint serve did not start";
    }
    bool stopped() const { return IsSkipped() || HasFatalFailure(); }
    static inline ServeProcess* server_ = nullptr;
};

// A command in a pseudo-terminal (what a person at a terminal sees and types).
class Pty {
public:
    explicit Pty(const std::string& cmd) {
        winsize ws{};
        ws.ws_row = 40;
        ws.ws_col = 160;
        pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
        if (pid_ == 0) {
            setenv("TERM", "xterm", 1);
            const std::string c = "exec " + cmd;
            execl("/bin/sh", "sh", "-c", c.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
    }
    ~Pty() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            int st;
            waitpid(pid_, &st, 0);
        }
        if (fd_ >= 0) close(fd_);
    }
    void type(const std::string& s) {
        if (::write(fd_, s.data(), s.size()) < 0) perror("pty write");
    }
    // Waits until `needle` appears in the output after position `from`; returns its position or npos.
    size_t wait_for(const std::string& needle, size_t from = 0, double timeout_s = 30) {
        read_until(fd_, out_, timeout_s, [&](const std::string& s) { return s.find(needle, from) != std::string::npos; });
        return out_.find(needle, from);
    }
    // Waits until the output is longer than n bytes.
    void wait_size(size_t n, double timeout_s = 30) {
        read_until(fd_, out_, timeout_s, [&](const std::string& s) { return s.size() > n; });
    }
    // Waits for the process to end; its exit code, or -1 on timeout.
    int wait_exit(double timeout_s = 10) {
        const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
        while (Clock::now() < deadline) {
            read_until(fd_, out_, 0.05, [](const std::string&) { return false; });
            int st;
            if (waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = 0;
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
        }
        return -1;
    }
    const std::string& out() const { return out_; }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::string out_;
};

inline std::string temp_dir(const std::string& name) {
    auto d = std::filesystem::temp_directory_path() / ("flint-client-" + name + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d.string();
}

inline void write_file(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
}

// Every "[ttft … cached N/M …]" status line's N, in order.
inline std::vector<int> cached_counts(const std::string& out) {
    std::vector<int> v;
    for (size_t p = out.find("cached "); p != std::string::npos; p = out.find("cached ", p + 1))
        if (p > 0 && out.rfind("[ttft", p) != std::string::npos) v.push_back(std::atoi(out.c_str() + p + 7));
    return v;
}

}  // namespace flint::test
