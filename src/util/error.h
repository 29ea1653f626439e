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
namespace flint {
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
    std::ostringstream os;
    (os << ... << args);
    throw Error(os.str());
}

// A string for messages: in double quotes, quotes, backslashes and control bytes escaped, cut at max_len
// bytes with an ellipsis.
inline std::string quoted(std::string_view s, size_t max_len = 60) {
    std::string out = "\"";
    for (size_t k = 0; k < s.size() && k < max_len; ++k) {
        unsigned char ch = static_cast<unsigned char>(s[k]);
        if (ch == '\n') out += "\\n";
        else if (ch == '"') out += "\\\"";
        else if (ch == '\\') out += "\\\\";
        else if (ch < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\x%02x", ch); out += buf; }
        else out += static_cast<char>(ch);
    }
    if (s.size() > max_len) out += "…";
    return out + "\"";
}
}  // namespace flint
