#include "client/files.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace flint::client {
namespace {

TextFile checked_text(const std::string& name, std::string text) {
    if (text.find('\0') != std::string::npos || !valid_utf8(text))
        fail(name, ": looks like a binary file (NUL bytes or invalid UTF-8); only text files can be sent");
    return TextFile{std::move(text)};
}

}  // namespace

TextFile read_text_file(const std::string& path, size_t max_bytes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (path.empty()) fail("no file given");
    if (!fs::exists(path, ec)) fail(path, ": no such file");
    if (fs::is_directory(path, ec)) fail(path, ": is a directory, not a file");
    const auto size = fs::file_size(path, ec);
    if (ec) fail(path, ": cannot read its size: ", ec.message());
    if (size > max_bytes) fail(path, ": ", size, " bytes is larger than this command takes (", max_bytes, " bytes)");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, ": cannot open for reading");
    std::stringstream ss;
    ss << in.rdbuf();
    return checked_text(path, ss.str());
}

TextFile read_text_stdin(size_t max_bytes) {
    std::string text;
    char buf[1 << 16];
    for (;;) {
        const size_t n = std::fread(buf, 1, sizeof buf, stdin);
        text.append(buf, n);
        if (text.size() > max_bytes) fail("stdin: more than ", max_bytes, " bytes, larger than this command takes");
        if (n < sizeof buf) break;
    }
    if (std::ferror(stdin)) fail("stdin: read failed");
    return checked_text("stdin", std::move(text));
}

void write_text_file(const std::string& path, const std::string& text) {
    namespace fs = std::filesystem;
    const std::string tmp = path + ".flint-tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) fail(tmp, ": cannot open for writing");
        out << text;
        out.close();
        if (!out) fail(tmp, ": write failed");
    }
    std::error_code ec;
    const auto perms = fs::status(path, ec).permissions();
    if (!ec) fs::permissions(tmp, perms, ec);
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        fail(path, ": cannot replace the file: ", ec.message());
    }
}

std::string expand_home(const std::string& path) {
    const char* home = std::getenv("HOME");
    if (!home || !*home || !(path == "~" || path.rfind("~/", 0) == 0)) return path;
    return home + path.substr(1);
}

}  // namespace flint::client
