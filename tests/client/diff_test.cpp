// unified_diff() on seeded random edits: the diff, applied to the old text by a strict reader of the
// format (every hunk where its header says, its counts exact, context and removed lines matching), gives
// the new text byte for byte — missing final newlines, empty sides and changes close together included.
// Where GNU patch is installed, `patch` (no fuzz) must agree, as `flint edit`'s diff may be piped to it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "client/diff.h"

namespace flint::client {
namespace {

// Lines with their '\n' (the last may lack it).
std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const size_t j = s.find('\n', i);
        const size_t end = j == std::string::npos ? s.size() : j + 1;
        out.push_back(s.substr(i, end - i));
        i = end;
    }
    return out;
}

// "@@ -A,N +B,M @@" (",N" absent: 1): the range after `sign`.
bool parse_range(const std::string& h, char sign, long& first, long& count) {
    const size_t at = h.find(std::string(" ") + sign);
    if (at == std::string::npos) return false;
    char* end = nullptr;
    first = std::strtol(h.c_str() + at + 2, &end, 10);
    count = *end == ',' ? std::strtol(end + 1, &end, 10) : 1;
    return *end == ' ';
}

// Applies `diff` to `a` strictly; "" and the result in `out`, or what was wrong with the diff.
std::string apply(const std::string& a, const std::string& diff, std::string& out) {
    const std::vector<std::string> old = lines_of(a), d = lines_of(diff);
    if (d.size() < 2 || d[0].rfind("--- ", 0) != 0 || d[1].rfind("+++ ", 0) != 0) return "no ---/+++ header";
    size_t next_old = 0;  // lines of `a` copied or consumed so far
    out.clear();
    size_t k = 2;
    while (k < d.size()) {
        const std::string& h = d[k];
        long a0 = 0, an = 1, b0 = 0, bn = 1;
        if (!parse_range(h, '-', a0, an) || !parse_range(h, '+', b0, bn) || h.rfind("@@ -", 0) != 0)
            return "bad hunk header: " + h;
        // An empty range names the line before it; a non-empty one its first line (1-based).
        const size_t start = static_cast<size_t>(an == 0 ? a0 : a0 - 1);
        if (start < next_old || start > old.size()) return "hunk out of order or past the end: " + h;
        for (; next_old < start; ++next_old) out += old[next_old];
        if (lines_of(out).size() != static_cast<size_t>(bn == 0 ? b0 : b0 - 1))
            return "the new side's line number does not match: " + h;
        long seen_a = 0, seen_b = 0;
        for (++k; k < d.size() && d[k].rfind("@@", 0) != 0; ++k) {
            std::string body = d[k].substr(1);
            const char op = d[k][0];
            if (k + 1 < d.size() && d[k + 1] == "\\ No newline at end of file\n") {
                if (body.empty() || body.back() != '\n') return "a marker after a line without a newline";
                body.pop_back();
                ++k;
            }
            if (op == ' ' || op == '-') {
                if (next_old >= old.size() || old[next_old] != body) return "context or removed line does not match: " + d[k];
                ++next_old;
                ++seen_a;
            }
            if (op == ' ' || op == '+') {
                out += body;
                ++seen_b;
            }
            if (op != ' ' && op != '-' && op != '+') return "bad line in a hunk: " + d[k];
        }
        if (seen_a != an || seen_b != bn) return "hunk counts do not match its header: " + h;
    }
    for (; next_old < old.size(); ++next_old) out += old[next_old];
    return "";
}

std::string random_edit(std::mt19937& rng, const std::string& a) {
    std::vector<std::string> ls = lines_of(a);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    static const char* kLines[] = {"x\n", "y\n", "int main() {\n", "}\n", "\n", "  return 0;\n", "// note\n", "x"};
    for (int n = 1 + pick(4); n > 0; --n) {
        const size_t at = pick(ls.size() + 1);
        switch (pick(3)) {
        case 0: ls.insert(ls.begin() + at, kLines[pick(7)]); break;
        case 1: if (at < ls.size()) ls.erase(ls.begin() + at); break;
        default: if (at < ls.size()) ls[at] = kLines[pick(7)]; break;
        }
    }
    std::string b;
    for (const std::string& l : ls) b += l;
    if (pick(6) == 0 && !b.empty() && b.back() == '\n') b.pop_back();  // no newline at the end
    if (pick(6) == 0) b += "tail";
    return b;
}

std::string random_text(std::mt19937& rng) {
    static const char* kLines[] = {"x\n", "y\n", "int main() {\n", "}\n", "\n", "  return 0;\n", "a\n", "b\n"};
    std::string s;
    for (int n = rng() % 30; n > 0; --n) s += kLines[rng() % 8];
    if (rng() % 5 == 0 && !s.empty()) s.pop_back();
    return s;
}

TEST(Diff, RandomEditsApplyBackExactly) {
    std::mt19937 rng(20261205);
    for (int i = 0; i < 2000; ++i) {
        const std::string a = random_text(rng), b = random_edit(rng, a);
        const int context = static_cast<int>(rng() % 4);
        const std::string diff = unified_diff("a/f", "b/f", a, b, context);
        if (a == b) {
            EXPECT_EQ(diff, "");
            continue;
        }
        std::string got;
        const std::string err = apply(a, diff, got);
        ASSERT_EQ(err, "") << "context " << context << "\nold:\n" << a << "\nnew:\n" << b << "\ndiff:\n" << diff;
        ASSERT_EQ(got, b) << "context " << context << "\ndiff:\n" << diff;
    }
}

TEST(Diff, GnuPatchAppliesItToo) {
    if (std::system("patch --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "GNU patch is not installed";
    const auto dir = std::filesystem::temp_directory_path() / ("flint-diff-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto write = [](const std::filesystem::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; };
    std::mt19937 rng(11);
    for (int i = 0; i < 60; ++i) {
        const std::string a = random_text(rng), b = random_edit(rng, a);
        if (a == b) continue;
        write(dir / "f", a);
        write(dir / "f.diff", unified_diff("a/f", "b/f", a, b));
        const std::string cmd = "cd '" + dir.string() + "' && patch -s -F0 -p1 --no-backup-if-mismatch -i f.diff > /dev/null 2>&1";
        ASSERT_EQ(std::system(cmd.c_str()), 0) << "patch refused the diff of\n" << a << "\n→\n" << b;
        std::ifstream in(dir / "f", std::ios::binary);
        std::stringstream got;
        got << in.rdbuf();
        ASSERT_EQ(got.str(), b);
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flint::client
