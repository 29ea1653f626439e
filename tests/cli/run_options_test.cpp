// `flint run`'s prompt options and its activation dump, through the binary: a prompt from a file, the
// chat wrapping, --dump-activations' names, shapes and values, the prompts it cannot run, and the RoPE
// scaling overrides.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "gguf/gguf.h"
#include "test_paths.h"

namespace flint::test {
namespace {


std::string stories() { return shell_quote(shared_path("models/stories260K.gguf")); }

TEST(RunOptions, APromptFromAFileRunsAsTheSameTextGiven) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir s("flint-runopt");
    const std::string prompt = s.file("prompt.txt");
    std::ofstream(prompt) << "Once upon a time, there was";
    CommandResult from_text = run_flint("run -m " + stories() + " -p 'Once upon a time, there was' -n 12 --temp 0");
    CommandResult from_file = run_flint("run -m " + stories() + " -f " + shell_quote(prompt) + " -n 12 --temp 0");
    ASSERT_EQ(from_text.exit_code, 0);
    ASSERT_EQ(from_file.exit_code, 0);
    EXPECT_FALSE(from_text.out.empty());
    EXPECT_EQ(from_file.out, from_text.out);
    const std::string err = s.file("err.txt");
    CommandResult missing = run_flint("run -m " + stories() + " -f " + shell_quote(s.file("nope.txt")) + " -n 2", err);
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(read_text(err).find("nope.txt: cannot read the prompt file"), std::string::npos) << read_text(err);
}

TEST(RunOptions, ChatWrapsThePromptInTheModelsTemplateWithTheSystemMessage) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    const std::string qwen = shell_quote(shared_path("models/tiny-qwen2-f32.gguf"));
    CommandResult r = run_flint("run -m " + qwen + " --chat --system 'Be brief.' -p 'hi' -n 2 --temp 0 --echo");
    ASSERT_EQ(r.exit_code, 0);
    const std::string want = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    EXPECT_EQ(r.out.substr(0, want.size()), want) << r.out;
    // Without --chat the prompt is the text itself.
    CommandResult plain = run_flint("run -m " + qwen + " -p 'hi' -n 2 --temp 0 --echo");
    ASSERT_EQ(plain.exit_code, 0);
    EXPECT_EQ(plain.out.rfind("hi", 0), 0u) << plain.out;
}

// The dump: every named stage of every layer with its [rows, cols], and the values are the model's own:
// the first row of inp_embd is BOS's row of token_embd.weight (F32 in stories260K).
TEST(RunOptions, DumpActivationsWritesEveryStageOfEveryLayerWithItsValues) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir s("flint-runopt");
    const std::string dump = s.file("acts.txt");
    CommandResult r = run_flint("run -m " + stories() + " -p 'Once upon' -n 2 --temp 0 --dump-activations " + shell_quote(dump));
    ASSERT_EQ(r.exit_code, 0);
    const std::string text = read_text(dump);
    ASSERT_FALSE(text.empty());
    for (int layer = 0; layer < 5; ++layer)
        for (const char* stage : {"attn_norm", "q", "kqv_out", "attn_out", "ffn_inp", "ffn_norm", "ffn_out", "l_out"}) {
            std::string head = "\n";
            head.append(stage).append("-").append(std::to_string(layer)).append(" [3, 64]\n");
            EXPECT_NE(text.find(head), std::string::npos) << head;
        }
    EXPECT_NE(text.find("\nk-4 [3, 32]\n"), std::string::npos);  // 4 KV heads of 8
    ASSERT_EQ(text.rfind("inp_embd [3, 64]\n", 0), 0u) << text.substr(0, 80);

    std::istringstream first(text.substr(text.find('\n') + 1, text.find('\n', text.find('\n') + 1) - text.find('\n') - 1));
    std::vector<float> row;
    for (float v; first >> v;) row.push_back(v);
    ASSERT_EQ(row.size(), 64u);
    auto f = gguf::File::open(shared_path("models/stories260K.gguf"));
    const gguf::TensorInfo* embd = nullptr;
    for (const auto& t : f->tensors())
        if (t.name == "token_embd.weight") embd = &t;
    ASSERT_NE(embd, nullptr);
    ASSERT_EQ(embd->type, DType::F32);
    float want[64];
    std::memcpy(want, embd->data + 1 * 64 * sizeof(float), sizeof want);  // BOS = 1
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(row[static_cast<size_t>(i)], want[i], 1e-5f * (1 + std::abs(want[i]))) << i;

    const std::string err = s.file("err.txt");
    CommandResult bad = run_flint("run -m " + stories() + " -p 'Once' -n 1 --dump-activations " + shell_quote(s.file("no/such/dir/a.txt")), err);
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(read_text(err).find("cannot write the activation dump"), std::string::npos) << read_text(err);
}

TEST(RunOptions, AnEmptyPromptOrOneLongerThanTheContextIsRefused) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir s("flint-runopt");
    const std::string err = s.file("err.txt");
    CommandResult empty = run_flint("run -m " + stories() + " --no-bos -p '' -n 2", err);
    EXPECT_NE(empty.exit_code, 0);
    EXPECT_NE(read_text(err).find("the prompt is empty"), std::string::npos) << read_text(err);
    CommandResult longer = run_flint("run -m " + stories() + " -c 16 -p 'Once upon a time there was a little girl who liked to play in the park' -n 2", err);
    EXPECT_NE(longer.exit_code, 0);
    EXPECT_NE(read_text(err).find("but the context is 16 (raise --ctx)"), std::string::npos) << read_text(err);
}

TEST(RunOptions, RopeScalingOverridesChangeThePositionsAndAreReported) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir s("flint-rope");
    const std::string err = s.file("err.txt");
    auto run = [&](const std::string& flags) { return run_flint("run -m " + stories() + " -p 'Once upon a time' -n 16 --temp 0 " + flags, err); };
    CommandResult plain = run("");
    ASSERT_EQ(plain.exit_code, 0);
    EXPECT_NE(read_text(err).find("rope normal base 10000\n"), std::string::npos) << read_text(err);
    CommandResult linear = run("--rope-scaling linear --rope-scale 4");
    ASSERT_EQ(linear.exit_code, 0) << read_text(err);
    EXPECT_NE(read_text(err).find("rope normal base 10000 linear x4\n"), std::string::npos) << read_text(err);
    EXPECT_NE(linear.out, plain.out) << "every position divided by 4 should change the greedy text";
    // YaRN leaves the fast-turning dimensions alone, so 20 positions of this 8-wide head keep their text;
    // its numbers are checked in the model tests. Here: it is applied, and reported as given.
    for (const auto& [flags, reported] : {std::pair<std::string, std::string>{"--rope-scaling yarn --rope-scale 4", "rope normal base 10000 yarn x4 from 2048\n"},
                                          {"--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 512", "yarn x4 from 512\n"}}) {
        SCOPED_TRACE(flags);
        ASSERT_EQ(run(flags).exit_code, 0) << read_text(err);
        EXPECT_NE(read_text(err).find(reported), std::string::npos) << read_text(err);
    }
    CommandResult none = run("--rope-scaling none");  // the model has no scaling: the same text
    EXPECT_EQ(none.out, plain.out);
    for (const char* bad : {"--rope-scaling yarn", "--rope-scaling linear", "--rope-scaling cubic --rope-scale 2", "--rope-scaling linear --rope-scale 0.5"}) {
        SCOPED_TRACE(bad);
        CommandResult r = run(bad);
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(read_text(err).find("--rope-scal"), std::string::npos) << read_text(err);
    }
    run("--rope-scaling yarn");
    EXPECT_NE(read_text(err).find("--rope-scaling yarn needs --rope-scale"), std::string::npos) << read_text(err);
}

}  // namespace
}  // namespace flint::test
