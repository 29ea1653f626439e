// `flint tokenize`, `flint inspect` and `flint quantize` as a user runs them: the binary's output checked
// against the library it is built on, and each command's bad input (missing or foreign files, a mistyped
// type) ending in a message and a non-zero exit with nothing written.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "gguf/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace flint::test {
namespace {

namespace fs = std::filesystem;

std::string ids_text(const std::vector<TokenId>& ids) {
    std::ostringstream s;
    for (size_t k = 0; k < ids.size(); ++k) s << (k ? " " : "") << ids[k];
    return s.str() + "\n";
}

TEST(TokenizeCommand, PrintsWhatTheLibraryEncodesFromATextOrAFile) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    const std::string model = shared_path("models/tiny-qwen2-f32.gguf");
    auto tok = Tokenizer::from_gguf(*gguf::File::open(model));
    const std::string text = "def add(a, b):\n\treturn a + b  # ünïcode\n";
    TempDir dir("flint-filecmd");
    const std::string file = dir.file("in.py");
    {
        std::FILE* f = std::fopen(file.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
    }
    const std::string want = ids_text(tok->encode(text, tok->add_bos(), false));
    CommandResult p = run_flint("tokenize -m " + shell_quote(model) + " --ids-only -p " + shell_quote(text));
    ASSERT_EQ(p.exit_code, 0);
    EXPECT_EQ(p.out, want);
    CommandResult f = run_flint("tokenize -m " + shell_quote(model) + " --ids-only -f " + shell_quote(file));
    ASSERT_EQ(f.exit_code, 0);
    EXPECT_EQ(f.out, want);

    // The piece listing: one line a token, control bytes escaped, then the count and the tokenizer.
    CommandResult listed = run_flint("tokenize -m " + shell_quote(model) + " -f " + shell_quote(file));
    ASSERT_EQ(listed.exit_code, 0);
    EXPECT_NE(listed.out.find("'\\n'"), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("'\\t"), std::string::npos) << listed.out;
    std::ostringstream tail;
    tail << tok->encode(text, tok->add_bos(), false).size() << " tokens (gpt2, pre \"qwen2\", " << tok->n_vocab() << " in vocabulary)\n";
    EXPECT_NE(listed.out.find(tail.str()), std::string::npos) << listed.out;
}

TEST(TokenizeCommand, SpecialTokensAreMatchedOnlyWhenAskedAndBosCanBeLeftOut) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string qwen = shell_quote(shared_path("models/tiny-qwen2-f32.gguf"));
    CommandResult special = run_flint("tokenize -m " + qwen + " --special -p '<|im_start|>user'");
    ASSERT_EQ(special.exit_code, 0);
    EXPECT_NE(special.out.find("151644 -> '<|im_start|>'  (special)"), std::string::npos) << special.out;
    CommandResult plain = run_flint("tokenize -m " + qwen + " -p '<|im_start|>user'");
    ASSERT_EQ(plain.exit_code, 0);
    EXPECT_EQ(plain.out.find("(special)"), std::string::npos) << plain.out;

    // stories260K adds BOS (id 1); --no-bos leaves it out.
    const std::string stories = shell_quote(shared_path("models/stories260K.gguf"));
    CommandResult with = run_flint("tokenize -m " + stories + " --ids-only -p 'Once upon'");
    CommandResult without = run_flint("tokenize -m " + stories + " --ids-only --no-bos -p 'Once upon'");
    ASSERT_EQ(with.exit_code, 0);
    ASSERT_EQ(without.exit_code, 0);
    EXPECT_EQ(with.out, "1 " + without.out);
}

TEST(TokenizeCommand, AMissingFileOrModelIsAnErrorThatNamesIt) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir dir("flint-filecmd");
    const std::string err = dir.file("err.txt");
    CommandResult r = run_flint("tokenize -f " + shell_quote(dir.file("nope.txt")), err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.out.empty());
    EXPECT_NE(read_text(err).find("nope.txt: cannot read"), std::string::npos) << read_text(err);
    r = run_flint("tokenize -m " + shell_quote(dir.file("none.gguf")) + " -p hi", err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("none.gguf"), std::string::npos) << read_text(err);
}

TEST(InspectCommand, ListsMetadataAndTensorsAsTextOrJson) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string model = shared_path("models/stories260K.gguf");
    auto f = gguf::File::open(model);
    CommandResult text = run_flint("inspect " + shell_quote(model));
    ASSERT_EQ(text.exit_code, 0);
    EXPECT_NE(text.out.find("llama.attention.head_count"), std::string::npos);
    EXPECT_NE(text.out.find("blk.4.ffn_norm.weight"), std::string::npos);
    EXPECT_NE(text.out.find("48 tensors"), std::string::npos) << text.out.substr(0, 200);
    CommandResult meta = run_flint("inspect --no-tensors " + shell_quote(model));
    ASSERT_EQ(meta.exit_code, 0);
    EXPECT_NE(meta.out.find("llama.attention.head_count"), std::string::npos);
    EXPECT_EQ(meta.out.find("blk.4.ffn_norm.weight"), std::string::npos);

    CommandResult js = run_flint("inspect --json --max-items 3 " + shell_quote(model));
    ASSERT_EQ(js.exit_code, 0);
    const nlohmann::json j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["version"], 3);
    EXPECT_EQ(j["metadata"]["llama.attention.head_count"]["value"], 8);
    EXPECT_EQ(j["metadata"]["general.architecture"]["value"], "llama");
    ASSERT_TRUE(j["tensors"].is_array());
    EXPECT_EQ(j["tensors"].size(), f->tensors().size());
}

TEST(InspectCommand, AFileThatIsNotGgufIsRefusedWithItsName) {
    TempDir dir("flint-filecmd");
    const std::string junk = dir.file("notes.gguf"), err = dir.file("err.txt");
    {
        std::FILE* f = std::fopen(junk.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fputs("this is not a model", f);
        std::fclose(f);
    }
    CommandResult r = run_flint("inspect " + shell_quote(junk), err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("notes.gguf: not a GGUF file"), std::string::npos) << read_text(err);
    r = run_flint("inspect " + shell_quote(dir.file("absent.gguf")), err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("absent.gguf"), std::string::npos) << read_text(err);
}

// `flint quantize` end to end: the 2-D weights become the type, the 1-D ones stay F32, the summary says
// so, and the result runs.
TEST(QuantizeCommand, WritesAModelThatLoadsAndRuns) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    TempDir dir("flint-filecmd");
    const std::string out = dir.file("q8.gguf"), err = dir.file("err.txt");
    CommandResult r = run_flint("quantize " + shell_quote(shared_path("models/tiny-qwen2-f32.gguf")) + " " + shell_quote(out) + " q8_0 -t 2", err);
    ASSERT_EQ(r.exit_code, 0) << read_text(err);
    EXPECT_NE(read_text(err).find("converted to q8_0"), std::string::npos) << read_text(err);
    auto f = gguf::File::open(out);
    int q8 = 0, f32_1d = 0;
    for (const auto& t : f->tensors()) {
        if (t.type == DType::Q8_0) ++q8;
        if (t.type == DType::F32 && t.dims.size() == 1) ++f32_1d;
        if (t.dims.size() == 1) {
            EXPECT_EQ(t.type, DType::F32) << t.name;
        }
    }
    EXPECT_GT(q8, 0);
    EXPECT_GT(f32_1d, 0);
    CommandResult run = run_flint("run -m " + shell_quote(out) + " -p 'def' -n 4 --temp 0", err);
    EXPECT_EQ(run.exit_code, 0) << read_text(err);
}

TEST(QuantizeCommand, AMistypedTypeOrAMissingInputWritesNothing) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    TempDir dir("flint-filecmd");
    const std::string out = dir.file("out.gguf"), err = dir.file("err.txt");
    CommandResult r = run_flint("quantize " + shell_quote(shared_path("models/tiny-qwen2-f32.gguf")) + " " + shell_quote(out) + " q9_0", err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("unknown quantization type 'q9_0' (valid: q8_0"), std::string::npos) << read_text(err);
    EXPECT_FALSE(fs::exists(out));
    r = run_flint("quantize " + shell_quote(dir.file("missing.gguf")) + " " + shell_quote(out) + " q8_0", err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("missing.gguf"), std::string::npos) << read_text(err);
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace flint::test
