#include "client/files.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace flint::client {

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
    TextFile f{ss.str()};
    if (f.text.find('\0') != std::string::npos || !valid_utf8(f.text))
        fail(path, ": looks like a binary file (NUL bytes or invalid UTF-8); only text files can be sent");
    return f;
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
