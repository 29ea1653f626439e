// The reference engine's tokenizer test vectors (../shared/tokenizers/vocab-tests/): every .inp string
// must tokenize to exactly the ids on the matching .out line — no BOS, no special-token parsing.
//
// .inp format: each test string is followed by "\n__ggml_vocab_test__\n" (so a string may itself be
// empty or consist of newlines). .out: one line per string, ids separated by spaces (an empty line for
// an empty result).
#include <gtest/gtest.h>

#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

using namespace flint;

namespace {

std::vector<std::string> parse_inp(const std::string& all) {
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    size_t pos = 0;
    for (size_t at; (at = all.find(sep, pos)) != std::string::npos; pos = at + sep.size()) out.push_back(all.substr(pos, at - pos));
    return out;
}

std::vector<std::string> split_lines(const std::string& all) {
    std::vector<std::string> lines;
    size_t pos = 0;
    for (size_t at; (at = all.find('\n', pos)) != std::string::npos; pos = at + 1) lines.push_back(all.substr(pos, at - pos));
    if (pos < all.size()) lines.push_back(all.substr(pos));
    return lines;
}

struct VocabCase {
    const char* name;   // vocab-tests/ggml-vocab-<name>.gguf.{inp,out}
    const char* model;  // GGUF with the tokenizer, relative to ../shared
};

class VocabVectors : public ::testing::TestWithParam<VocabCase> {};

TEST_P(VocabVectors, EveryInputTokenizesToTheReferenceIds) {
    const VocabCase c = GetParam();
    const std::string base = std::string("tokenizers/vocab-tests/ggml-vocab-") + c.name + ".gguf";
    FLINT_REQUIRE_SHARED(base + ".inp");
    FLINT_REQUIRE_SHARED(c.model);
    const auto inputs = parse_inp(test::read_file(test::shared_path(base + ".inp")));
    const auto lines = split_lines(test::read_file(test::shared_path(base + ".out")));
    ASSERT_EQ(inputs.size(), 46u) << "the vector files changed shape";
    ASSERT_EQ(inputs.size(), lines.size());
    auto tok = test::load_tokenizer(c.model);
    int failures = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto expected = test::parse_ids(lines[i]);
        const auto got = tok->encode(inputs[i], /*add_bos=*/false, /*parse_special=*/false);
        EXPECT_EQ(got, expected) << c.name << " string #" << i << ": \"" << inputs[i] << "\"";
        failures += got != expected;
        // Round trip: the ids decode to the original bytes (SPM adds, and strips, one leading space).
        EXPECT_EQ(tok->decode(got, /*strip_space_prefix=*/true), inputs[i]) << c.name << " string #" << i;
    }
    EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllVocabs, VocabVectors,
    ::testing::Values(VocabCase{"llama-spm", "tokenizers/vocab-tests/ggml-vocab-llama-spm.gguf"},
                      VocabCase{"phi-3", "tokenizers/vocab-tests/ggml-vocab-phi-3.gguf"},
                      VocabCase{"deepseek-coder", "tokenizers/vocab-tests/ggml-vocab-deepseek-coder.gguf"},
                      VocabCase{"starcoder", "tokenizers/vocab-tests/ggml-vocab-starcoder.gguf"},
                      VocabCase{"gpt-2", "tokenizers/vocab-tests/ggml-vocab-gpt-2.gguf"},
                      VocabCase{"refact", "tokenizers/vocab-tests/ggml-vocab-refact.gguf"},
                      VocabCase{"falcon", "tokenizers/vocab-tests/ggml-vocab-falcon.gguf"},
                      VocabCase{"mpt", "tokenizers/vocab-tests/ggml-vocab-mpt.gguf"},
                      VocabCase{"qwen2", "models/tiny-qwen2-f32.gguf"}),
    [](const ::testing::TestParamInfo<VocabCase>& info) {
        std::string n = info.param.name;
        for (char& ch : n)
            if (ch == '-') ch = '_';
        return n;
    });

}  // namespace
