// flint/tokenizer/pre_tokenizer.h — where text becomes pieces for byte-level BPE.
//
// Each `tokenizer.ggml.pre` names a list of regexes (the Split pre-tokenizers of the model's HF
// tokenizer.json). They are applied in sequence: stage k splits every piece of stage k-1 into its matches
// AND the unmatched text between them (both kept, in order). Each piece is its own regex subject, so a
// lookahead never sees past a piece boundary — as in HF tokenizers and llama.cpp.
//
// Regexes run on PCRE2 (UTF + Unicode properties, JIT-compiled). Text that is not valid UTF-8 is split
// into valid runs (regex-split as usual) and single invalid bytes (one piece each, which byte-level BPE
// encodes as byte tokens), so no input is rejected or lost.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace flint {

class Regex;  // PCRE2 pattern, defined in pre_tokenizer.cpp

class PreTokenizer {
public:
    // The regex list for a `tokenizer.ggml.pre` value. Throws flint::Error for an unknown name.
    static std::unique_ptr<PreTokenizer> for_pre(std::string_view pre);
    // A pre-tokenizer from explicit patterns (tests, reference comparisons).
    explicit PreTokenizer(const std::vector<std::string>& patterns, std::string name = "custom");
    ~PreTokenizer();

    // Appends the pieces of `text` to `out` (views into `text`).
    void split(std::string_view text, std::vector<std::string_view>& out) const;
    const std::string& name() const { return name_; }
    const std::vector<std::string>& patterns() const { return patterns_; }

    static const std::vector<std::string>& known_names();

private:
    void split_valid(std::string_view text, std::vector<std::string_view>& out) const;

    std::string name_;
    std::vector<std::string> patterns_;
    std::vector<std::unique_ptr<Regex>> stages_;
};

}  // namespace flint
