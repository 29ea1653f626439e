// `flint run --temp 0` reproduces llama.cpp's greedy continuations exactly, text for text.
#include <gtest/gtest.h>

#include "cli_test_util.h"
#include "test_paths.h"

using namespace flint;
using namespace flint::test;

namespace {

// The golden .txt is "<s> " (BOS), the prompt, then the greedy continuation (128 or 200 positions in all).
// flint generates `positions` tokens after the prompt — more than the golden text holds — and the golden
// text must be an exact prefix of prompt + output.
void expect_greedy(const std::string& model, const std::string& stem, int positions) {
    const std::string prompt = read_text(shared_path("golden/" + stem + ".prompt.txt"));
    const std::string golden = read_text(shared_path("golden/" + stem + ".txt"));
    ASSERT_EQ(golden.rfind("<s> ", 0), 0u);
    const int n_gen = positions;
    CommandResult r = run_flint("run -m " + shared_path("models/" + model) + " --temp 0 --ignore-eos -t 1 -n " +
                                std::to_string(n_gen) + " --no-special -p " + shell_quote(prompt));
    ASSERT_EQ(r.exit_code, 0);
    // The SPM space prefix puts a space before the prompt's first word; the golden text keeps it after "<s>".
    const std::string ours = " " + prompt + r.out;
    const std::string want = golden.substr(3);
    ASSERT_GE(ours.size(), want.size()) << stem << ": flint generated less text than the reference";
    EXPECT_EQ(ours.substr(0, want.size()), want) << stem;
}

}  // namespace

TEST(RunGolden, Stories260KGreedy1) {
    FLINT_REQUIRE_SHARED("golden/stories260K.greedy1.txt");
    expect_greedy("stories260K.gguf", "stories260K.greedy1", 128);
}
TEST(RunGolden, Stories260KGreedy2) {
    FLINT_REQUIRE_SHARED("golden/stories260K.greedy2.txt");
    expect_greedy("stories260K.gguf", "stories260K.greedy2", 128);
}
TEST(RunGolden, Stories260KGreedy3) {
    FLINT_REQUIRE_SHARED("golden/stories260K.greedy3.txt");
    expect_greedy("stories260K.gguf", "stories260K.greedy3", 128);
}
TEST(RunGolden, FlintTinyCodeGreedy) {
    FLINT_REQUIRE_SHARED("golden/flint-tiny-code.greedy1.txt");
    for (const char* stem : {"flint-tiny-code.greedy1", "flint-tiny-code.greedy2", "flint-tiny-code.greedy3"})
        expect_greedy("flint-tiny-code.gguf", stem, 200);
}

TEST(RunErrors, MissingModelAndBadFlagsAreClear) {
    const std::string err = ::testing::TempDir() + "/flint_run_err.txt";
    CommandResult r = run_flint("run -m /nonexistent/model.gguf -p hi", err);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(read_text(err).find("/nonexistent/model.gguf: cannot open"), std::string::npos) << read_text(err);
    r = run_flint("run --temp -3 -p hi", err);
    EXPECT_EQ(r.exit_code, 2);
    r = run_flint("run --chat -p hi -m " + shared_path("models/stories260K.gguf"), err);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(read_text(err).find("chat"), std::string::npos) << read_text(err);
}

// The stats line counts decode steps, not tokens: n tokens take n - 1 forward passes after the prompt.
TEST(RunStats, DecodeRatesArePerForwardStep) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    const std::string err = ::testing::TempDir() + "/flint_run_stats.txt";
    CommandResult r = run_flint("run -m " + m + " -p Once --temp 0 --ignore-eos -t 1 -n 5", err);
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("decode 5 tokens, 4 steps in"), std::string::npos) << read_text(err);
    r = run_flint("run -m " + m + " -p Once --temp 0 --ignore-eos -t 1 -n 1", err);
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("decode 1 token from the prompt's logits (no decode step)"), std::string::npos) << read_text(err);
    EXPECT_EQ(read_text(err).find("GB/s"), std::string::npos) << "no rate without a decode step";
}
