// flint/client/fim_window.h — the part of a file `flint complete` sends around the cursor.
//
// An editor calls complete on every keystroke. In the FIM prompt the suffix follows the prefix, so the
// server's prefix cache never covers it: all of it is prefilled again on every call, and a whole file's
// worth after the cursor would cost seconds a keystroke on a CPU. The prefix is cached as long as its first
// line stays put, so its window starts on a line that is a multiple of kFimSnapLines: the start moves once
// every 32 lines the cursor goes down, not on every new line.
#pragma once
#include <cstddef>
#include <string_view>

namespace flint::client {

constexpr size_t kFimSnapLines = 32;

struct FimWindow {
    std::string_view prefix, suffix;  // views into the text
    size_t first_line = 0;            // 0-based, the first line the prefix starts on
    size_t end_line = 0;              // 0-based, one past the last line the suffix reaches into
    size_t lines = 0;                 // lines in the whole text: its '\n's + 1 (where a cursor can be)
};

// The text before byte `at` from at least prefix_lines lines above the cursor's line (0: from the start),
// the start moved up to a multiple of kFimSnapLines; and the text from `at` to the end of the line
// suffix_lines below the cursor's, its '\n' included (0: to the end). at <= text.size().
FimWindow fim_window(std::string_view text, size_t at, size_t prefix_lines, size_t suffix_lines);

}  // namespace flint::client
