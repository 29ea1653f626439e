// flint/client/completion.h — what Tab completes at flint chat's prompt: a command name at the start of
// the line ("/fi" → "/file "), and the path after "/file" (directories end in '/', files in a space;
// "~/" is the home directory, as /file reads it). Anywhere else Tab is not a completion.
#pragma once
#include <string>

#include "client/line_editor.h"

namespace flint::client {

LineEditor::Completion complete_chat_line(const std::string& text, size_t cursor);

// The entries of a directory that start with `prefix`, sorted; directories with a trailing '/'. Names
// starting with '.' only when `prefix` does. At most `limit` (the rest are not read into memory).
std::vector<std::string> directory_matches(const std::string& dir, const std::string& prefix, size_t limit);

}  // namespace flint::client
