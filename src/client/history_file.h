// flint/client/history_file.h — flint chat's line history kept between sessions (a readline-style
// history file): one entry a line, '\' and line breaks escaped ("\\", "\n") so a pasted multi-line
// message is one entry; appended as each line is entered, so sessions side by side all keep theirs.
// The file is the user's own (0600: prompts can hold secrets). It never stops the chat: a file that
// cannot be read or written is reported once, and the session goes on without it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace flint::client {

class HistoryFile {
public:
    explicit HistoryFile(std::string path) : path_(std::move(path)) {}

    // The newest `max` entries, oldest first. A file grown past twice that is rewritten with them alone.
    std::vector<std::string> load(size_t max);
    void append(const std::string& entry);

    const std::string& path() const { return path_; }

private:
    void warn(const std::string& why);  // once; then the file is left alone
    std::string path_;
    bool broken_ = false;
};

std::string escape_history_entry(const std::string& entry);
std::string unescape_history_entry(const std::string& line);

}  // namespace flint::client
