#include "client/diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace flint::client {
namespace {

struct Line {
    std::string text;  // without its '\n'
    bool newline;      // false only for a last line without one
    bool operator==(const Line& o) const { return text == o.text && newline == o.newline; }
};

std::vector<Line> split(const std::string& s) {
    std::vector<Line> out;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find('\n', i);
        if (j == std::string::npos) {
            out.push_back({s.substr(i), false});
            break;
        }
        out.push_back({s.substr(i, j - i), true});
        i = j + 1;
    }
    return out;
}

enum class Op : char { Keep = ' ', Del = '-', Add = '+' };
struct Step {
    Op op;
    size_t a, b;  // line indices (a for Keep/Del, b for Keep/Add)
};

// Edit script by longest common subsequence on the part between the common prefix and suffix. Past a
// size where the table would be too big the middle is shown as replaced wholesale (still a correct diff).
std::vector<Step> script(const std::vector<Line>& a, const std::vector<Line>& b) {
    size_t pre = 0;
    while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
    size_t suf = 0;
    while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
    const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
    std::vector<Step> out;
    for (size_t i = 0; i < pre; ++i) out.push_back({Op::Keep, i, i});
    if (n * m <= 20'000'000) {
        std::vector<uint32_t> L((n + 1) * (m + 1), 0);  // L[i][j]: LCS of a[pre+i..] and b[pre+j..]
        auto at = [&](size_t i, size_t j) -> uint32_t& { return L[i * (m + 1) + j]; };
        for (size_t i = n; i-- > 0;)
            for (size_t j = m; j-- > 0;)
                at(i, j) = a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
        size_t i = 0, j = 0;
        while (i < n || j < m) {
            if (i < n && j < m && a[pre + i] == b[pre + j]) out.push_back({Op::Keep, pre + i++, pre + j++});
            else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) out.push_back({Op::Del, pre + i++, 0});  // '-' before '+'
            else out.push_back({Op::Add, 0, pre + j++});
        }
    } else {
        for (size_t i = 0; i < n; ++i) out.push_back({Op::Del, pre + i, 0});
        for (size_t j = 0; j < m; ++j) out.push_back({Op::Add, 0, pre + j});
    }
    for (size_t k = 0; k < suf; ++k) out.push_back({Op::Keep, a.size() - suf + k, b.size() - suf + k});
    return out;
}

std::string range(size_t start, size_t count) {  // 1-based start; diff(1) writes "l,0" before an empty range
    if (count == 0) return std::to_string(start) + ",0";
    if (count == 1) return std::to_string(start + 1);
    return std::to_string(start + 1) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& a_name, const std::string& b_name, const std::string& a_text,
                         const std::string& b_text, int context) {
    if (a_text == b_text) return "";
    const std::vector<Line> a = split(a_text), b = split(b_text);
    const std::vector<Step> s = script(a, b);
    const size_t ctx = static_cast<size_t>(std::max(0, context));
    std::string out = "--- " + a_name + "\n+++ " + b_name + "\n";
    size_t k = 0;
    while (k < s.size()) {
        while (k < s.size() && s[k].op == Op::Keep) ++k;
        if (k == s.size()) break;
        // A hunk: from ctx lines before this change to ctx lines after the last change that is within
        // 2*ctx unchanged lines of the previous one.
        const size_t start = k >= ctx ? k - ctx : 0;
        size_t end = k;
        for (;;) {
            while (end < s.size() && s[end].op != Op::Keep) ++end;
            size_t keep = end;
            while (keep < s.size() && s[keep].op == Op::Keep) ++keep;
            if (keep < s.size() && keep - end <= 2 * ctx) {
                end = keep;
                continue;
            }
            end = std::min(s.size(), end + ctx);
            break;
        }
        size_t a0 = SIZE_MAX, b0 = SIZE_MAX, na = 0, nb = 0;
        // Where each side's range starts, also for a side with no lines in the hunk.
        size_t a_before = 0, b_before = 0;
        for (size_t i = 0; i < start; ++i) {
            if (s[i].op != Op::Add) ++a_before;
            if (s[i].op != Op::Del) ++b_before;
        }
        std::string body;
        for (size_t i = start; i < end; ++i) {
            const Line& l = s[i].op == Op::Add ? b[s[i].b] : a[s[i].a];
            if (s[i].op != Op::Add) {
                if (a0 == SIZE_MAX) a0 = s[i].a;
                ++na;
            }
            if (s[i].op != Op::Del) {
                if (b0 == SIZE_MAX) b0 = s[i].b;
                ++nb;
            }
            body += static_cast<char>(s[i].op);
            body += l.text;
            body += '\n';
            if (!l.newline) body += "\\ No newline at end of file\n";
        }
        if (a0 == SIZE_MAX) a0 = a_before;
        if (b0 == SIZE_MAX) b0 = b_before;
        out += "@@ -" + range(na ? a0 : a_before, na) + " +" + range(nb ? b0 : b_before, nb) + " @@\n" + body;
        k = end;
    }
    return out;
}

}  // namespace flint::client
