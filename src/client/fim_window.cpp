// flint/client/fim_window.cpp — see fim_window.h.
#include "client/fim_window.h"

#include <algorithm>

namespace flint::client {
namespace {

// Byte offset just past the n-th '\n' at or after pos; the text's end if there are fewer.
size_t past_newlines(std::string_view text, size_t pos, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        pos = text.find('\n', pos);
        if (pos == std::string_view::npos) return text.size();
        ++pos;
    }
    return pos;
}

}  // namespace

FimWindow fim_window(std::string_view text, size_t at, size_t prefix_lines, size_t suffix_lines) {
    at = std::min(at, text.size());
    FimWindow w;
    const auto newlines = [&](size_t from, size_t to) {
        return static_cast<size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(from),
                                              text.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
    };
    const size_t line = newlines(0, at);
    w.lines = line + newlines(at, text.size()) + 1;
    if (prefix_lines > 0 && line > prefix_lines) w.first_line = (line - prefix_lines) / kFimSnapLines * kFimSnapLines;
    const size_t begin = past_newlines(text, 0, w.first_line);
    w.prefix = text.substr(begin, at - begin);
    w.end_line = suffix_lines > 0 ? std::min(w.lines, line + suffix_lines + 1) : w.lines;
    const size_t end = suffix_lines > 0 ? past_newlines(text, at, suffix_lines + 1) : text.size();
    w.suffix = text.substr(at, end - at);
    return w;
}

}  // namespace flint::client
