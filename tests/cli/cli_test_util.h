// Running the flint binary from tests and capturing what it prints.
#pragma once
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace flint::test {

struct CommandResult {
    int exit_code = -1;
    std::string out;  // stdout
};

// Runs `flint <args>` through the shell; stderr goes to `stderr_file` when given, else is discarded.
inline CommandResult run_flint(const std::string& args, const std::string& stderr_file = "") {
    std::string cmd = std::string(FLINT_BINARY) + " " + args + " 2>" + (stderr_file.empty() ? "/dev/null" : stderr_file);
    CommandResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

inline std::string read_text(const std::string& path) {
    std::string s;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
        std::array<char, 4096> buf;
        size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) s.append(buf.data(), n);
        std::fclose(f);
    }
    return s;
}

// A directory of its own under the temp directory, removed with everything in it at the end of the test.
struct TempDir {
    explicit TempDir(const std::string& name)
        : path(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
    std::filesystem::path path;
};

}  // namespace flint::test
