// flint/util/error.h — the one error type library code throws.
// Library code never exits the process: it throws flint::Error with a message that carries
// context (file, key, tensor, expected vs found). Frontends (CLI, server) catch and report.
#pragma once
#include <stdexcept>
#include <string>

namespace flint {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Concatenates its arguments into one message: fail("tensor ", name, ": expected ", a, " got ", b).
template <typename... Args>
[[noreturn]] void fail(const Args&... args);

}  // namespace flint

#include <cstdio>
#include <sstream>
#include <string_view>

#include "util/utf8.h"
namespace flint {
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
    std::ostringstream os;
    (os << ... << args);
    throw Error(os.str());
}

// A string for messages: in double quotes, quotes, backslashes and control bytes escaped, and so is every
// byte that is not part of well-formed UTF-8 (a file's bytes reach a terminal or a JSON error this way);
// cut at about max_len bytes (never inside a character) with an ellipsis.
inline std::string quoted(std::string_view s, size_t max_len = 60) {
    std::string out = "\"";
    size_t k = 0;
    for (size_t n; k < s.size() && k < max_len; k += n) {
        const unsigned char ch = static_cast<unsigned char>(s[k]);
        n = utf8_char_len(s, k);
        if (ch == '\n') out += "\\n";
        else if (ch == '"') out += "\\\"";
        else if (ch == '\\') out += "\\\\";
        else if (ch < 0x20 || ch == 0x7f || n == 0) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", ch);
            out += buf;
            n = 1;
        } else out.append(s.substr(k, n));
    }
    if (k < s.size()) out += "…";
    return out + "\"";
}
}  // namespace flint
