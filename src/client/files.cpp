#include "client/files.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace flint::client {

bool valid_utf8(const std::string& s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
        else return false;
        if (i + len > n) return false;
        for (size_t k = 1; k < len; ++k) {
            const unsigned char d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

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

}  // namespace flint::client
