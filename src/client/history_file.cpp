#include "client/history_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flint::client {

std::string escape_history_entry(const std::string& entry) {
    std::string out;
    out.reserve(entry.size());
    for (char c : entry) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

std::string unescape_history_entry(const std::string& line) {
    std::string out;
    out.reserve(line.size());
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == '\\' || line[i + 1] == 'n')) {
            out += line[++i] == 'n' ? '\n' : '\\';
        } else {
            out += line[i];  // a lone '\' (a file written by hand) stands for itself
        }
    }
    return out;
}

void HistoryFile::warn(const std::string& why) {
    if (broken_) return;
    broken_ = true;
    std::fprintf(stderr, "flint chat: history %s: %s; this session's lines are not kept\n", path_.c_str(), why.c_str());
}

std::vector<std::string> HistoryFile::load(size_t max) {
    std::vector<std::string> all;
    if (path_.empty()) return all;
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) return all;  // the first session: append() creates it
    if (std::filesystem::is_directory(path_, ec)) {
        warn("is a directory");
        return all;
    }
    std::ifstream in(path_, std::ios::binary);
    if (!in) {
        warn(std::strerror(errno));
        return all;
    }
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) all.push_back(unescape_history_entry(line));
    }
    const bool compact = all.size() > 2 * max;
    if (all.size() > max) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(max));
    if (compact) {  // written beside it and renamed over it, so a crash leaves one whole file or the other
        const std::string tmp = path_ + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            for (const std::string& e : all) out << escape_history_entry(e) << '\n';
            if (!out) {
                std::filesystem::remove(tmp, ec);
                return all;  // kept as it was: still correct, only longer
            }
        }
        ::chmod(tmp.c_str(), 0600);
        std::filesystem::rename(tmp, path_, ec);
        if (ec) std::filesystem::remove(tmp, ec);
    }
    return all;
}

void HistoryFile::append(const std::string& entry) {
    if (path_.empty() || broken_ || entry.empty()) return;
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
        std::filesystem::create_directories(parent, ec);
        if (ec) return warn("cannot create " + parent.string() + ": " + ec.message());
    }
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return warn(std::strerror(errno));
    const std::string line = escape_history_entry(entry) + "\n";
    // One write with O_APPEND: sessions side by side never interleave inside an entry.
    const ssize_t n = ::write(fd, line.data(), line.size());
    if (n != static_cast<ssize_t>(line.size())) warn(n < 0 ? std::strerror(errno) : "short write");
    ::close(fd);
}

}  // namespace flint::client
