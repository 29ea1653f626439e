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

#include <sstream>
namespace flint {
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
    std::ostringstream os;
    (os << ... << args);
    throw Error(os.str());
}
}  // namespace flint
