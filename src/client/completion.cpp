#include "client/completion.h"

#include <algorithm>
#include <filesystem>

#include "client/files.h"

namespace flint::client {
namespace {

const char* const kCommands[] = {"/model ", "/system ", "/file ", "/reset", "/help", "/quit"};

constexpr size_t kMaxCandidates = 1000;

}  // namespace

std::vector<std::string> directory_matches(const std::string& dir, const std::string& prefix, size_t limit) {
    std::vector<std::string> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir.empty() ? "." : dir, ec), end;
    for (; !ec && it != end && out.size() < limit; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        if (name[0] == '.' && (prefix.empty() || prefix[0] != '.')) continue;
        std::error_code dec;
        out.push_back(it->is_directory(dec) ? name + "/" : name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

LineEditor::Completion complete_chat_line(const std::string& text, size_t cursor) {
    LineEditor::Completion c;
    const std::string before = text.substr(0, cursor);
    if (before.empty() || before[0] != '/' || before.find('\n') != std::string::npos) return c;
    const size_t space = before.find(' ');
    if (space == std::string::npos) {  // the command itself
        c.start = 0;
        for (const char* cmd : kCommands)
            if (std::string(cmd).compare(0, before.size(), before) == 0) c.candidates.push_back(cmd);
        return c;
    }
    if (before.compare(0, space, "/file") != 0) return c;
    const size_t word = before.find_first_not_of(' ', space);
    c.start = word == std::string::npos ? before.size() : word;
    const std::string typed = before.substr(c.start);
    if (!typed.empty() && (typed[0] == '"' || typed[0] == '\'')) return c;  // a quoted path: as typed
    // The directory part as typed ("~/src/"), and as the file system knows it ("/home/me/src/").
    const size_t slash = typed.rfind('/');
    const std::string dir_typed = slash == std::string::npos ? "" : typed.substr(0, slash + 1);
    if (typed == "~" && expand_home(typed) != typed) {  // "~" alone: the home directory itself
        c.candidates.push_back("~/");
        return c;
    }
    for (const std::string& name : directory_matches(expand_home(dir_typed), typed.substr(dir_typed.size()), kMaxCandidates))
        c.candidates.push_back(dir_typed + name + (name.back() == '/' ? "" : " "));
    return c;
}

}  // namespace flint::client
