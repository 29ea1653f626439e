#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace flint {
namespace {

// The patterns per pre-tokenizer family, as in each model's tokenizer.json (HF) — the same lists the
// reference engine uses. `(?i:'s|…)` is spelled out as `'[sS]|…` so it does not depend on case folding.
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const std::string kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Family {
    std::vector<std::string_view> names;
    std::vector<std::string> patterns;
};

const std::vector<Family>& families() {
    static const std::vector<Family> f = {
        {{"qwen2", "stablelm2", "deepseek-r1-qwen"}, {kQwen2}},
        {{"llama3", "llama-bpe", "llama-v3", "dbrx", "smaug-bpe"}, {kLlama3}},
        {{"deepseek-coder"}, {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[一-龥ࠀ-一가-퟿]+", R"(\p{N})"}},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {R"(\p{N})", kGpt2}},
        {{"gpt-2", "mpt", "olmo", "jais"}, {kGpt2}},
        {{"default", ""}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
    };
    return f;
}

// Per-thread match data and JIT stack: pcre2_match_data is not shareable between concurrent matches.
struct MatchScratch {
    pcre2_match_data* md = nullptr;
    pcre2_jit_stack* stack = nullptr;
    pcre2_match_context* ctx = nullptr;
    MatchScratch() {
        md = pcre2_match_data_create(4, nullptr);
        // Long whitespace runs under `\s+(?!\S)` backtrack; 32 KiB (the default) is too small for them.
        stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
        ctx = pcre2_match_context_create(nullptr);
        pcre2_jit_stack_assign(ctx, nullptr, stack);
    }
    ~MatchScratch() {
        pcre2_match_context_free(ctx);
        pcre2_jit_stack_free(stack);
        pcre2_match_data_free(md);
    }
};

MatchScratch& scratch() {
    thread_local MatchScratch s;
    return s;
}

}  // namespace

class Regex {
public:
    explicit Regex(const std::string& pattern) {
        int err = 0;
        PCRE2_SIZE off = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &err,
                              &off, nullptr);
        if (!code_) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof msg);
            fail("pre-tokenizer regex /", pattern, "/ at offset ", off, ": ", reinterpret_cast<const char*>(msg));
        }
        jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
    }
    ~Regex() { pcre2_code_free(code_); }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Appends the matches of `s` and the gaps between them.
    void split(std::string_view s, std::vector<std::string_view>& out) const {
        auto& sc = scratch();
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
        size_t pos = 0, gap_start = 0;
        while (pos < s.size()) {
            const int rc = jit_ ? pcre2_jit_match(code_, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, sc.md, sc.ctx)
                                : pcre2_match(code_, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, sc.md, sc.ctx);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(rc, msg, sizeof msg);
                fail("pre-tokenizer: regex match failed: ", reinterpret_cast<const char*>(msg));
            }
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(sc.md);
            const size_t b = ov[0], e = ov[1];
            if (e == b) {  // an empty match makes no piece; the character joins the gap
                if (b >= s.size()) break;
                pos = b + utf8::lead_length(static_cast<uint8_t>(s[b]));
                continue;
            }
            if (b > gap_start) out.push_back(s.substr(gap_start, b - gap_start));
            out.push_back(s.substr(b, e - b));
            pos = gap_start = e;
        }
        if (gap_start < s.size()) out.push_back(s.substr(gap_start));
    }

private:
    pcre2_code* code_ = nullptr;
    bool jit_ = false;
};

std::unique_ptr<PreTokenizer> PreTokenizer::for_pre(std::string_view pre) {
    for (const auto& f : families())
        for (auto n : f.names)
            if (n == pre) return std::make_unique<PreTokenizer>(f.patterns, std::string(pre));
    std::string known;
    for (const auto& n : known_names()) known += (known.empty() ? "" : ", ") + n;
    fail("tokenizer.ggml.pre \"", pre, "\" is not a supported pre-tokenizer (known: ", known, ")");
}

const std::vector<std::string>& PreTokenizer::known_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& f : families())
            for (auto n : f.names)
                if (!n.empty()) v.emplace_back(n);
        return v;
    }();
    return names;
}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns, std::string name)
    : name_(std::move(name)), patterns_(patterns) {
    for (const auto& p : patterns_) stages_.push_back(std::make_unique<Regex>(p));
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
    if (utf8::is_valid(text)) return split_valid(text, out);
    size_t run = 0, i = 0;
    while (i < text.size()) {
        const int n = utf8::sequence_length(text.substr(i));
        if (n > 0) {
            i += static_cast<size_t>(n);
            continue;
        }
        if (i > run) split_valid(text.substr(run, i - run), out);
        out.push_back(text.substr(i, 1));
        run = ++i;
    }
    if (run < text.size()) split_valid(text.substr(run), out);
}

void PreTokenizer::split_valid(std::string_view text, std::vector<std::string_view>& out) const {
    if (text.empty()) return;
    if (stages_.empty()) {
        out.push_back(text);
        return;
    }
    const size_t first = out.size();
    stages_[0]->split(text, out);
    std::vector<std::string_view> next;
    for (size_t k = 1; k < stages_.size(); ++k) {
        next.clear();
        for (size_t i = first; i < out.size(); ++i) stages_[k]->split(out[i], next);
        out.resize(first);
        out.insert(out.end(), next.begin(), next.end());
    }
}

}  // namespace flint
