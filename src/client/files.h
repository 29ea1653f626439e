// flint/client/files.h — reading the files a user hands the client, with the errors a person can act on.
#pragma once
#include <string>

#include "util/utf8.h"

namespace flint::client {

struct TextFile {
    std::string text;
};

// Throws flint::Error: missing, unreadable, a directory, larger than max_bytes, or binary (a NUL byte or
// invalid UTF-8).
TextFile read_text_file(const std::string& path, size_t max_bytes);

// The same for standard input, read to its end (an editor's unsaved buffer, piped in); errors name "stdin".
TextFile read_text_stdin(size_t max_bytes);

// A path with a leading "~/" (or "~" alone) on $HOME, as a shell reads it; unchanged without a HOME.
std::string expand_home(const std::string& path);

// Writes atomically (a temporary file beside it, then rename), keeping the file's permission bits.
void write_text_file(const std::string& path, const std::string& text);

using flint::valid_utf8;  // util/utf8.h

}  // namespace flint::client
