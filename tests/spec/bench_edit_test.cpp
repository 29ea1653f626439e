// `flint bench edit` end to end on stories260K: every row's output is checked against the target (greedy
// and sampled), edit kinds work, bad options are refused.
#include <filesystem>

#include <gtest/gtest.h>

#include "cli/cli_test_util.h"
#include "test_paths.h"

using namespace flint::test;

namespace {

std::string bench(const std::string& args) {
    return "bench edit -m " + shared_path("models/stories260K.gguf") + " -t 1 --target-tokens 60 " + args;
}

int count(const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

#define REQUIRE_FLINT()                                                                  \
    if (!std::filesystem::exists(FLINT_BINARY)) GTEST_SKIP() << "build the flint binary first"

}  // namespace

TEST(BenchEdit, EveryRowReproducesTheTargetForEachEditKind) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    REQUIRE_FLINT();
    for (const char* kind : {"substitute", "insert", "delete"}) {
        CommandResult r = run_flint(bench(std::string("--accuracies 100 95 0 --edit ") + kind));
        ASSERT_EQ(r.exit_code, 0) << kind;
        EXPECT_NE(r.out.find("| 100% | 60 / 60 |"), std::string::npos) << r.out;
        EXPECT_EQ(count(r.out, "| yes |"), 4) << r.out;  // three accuracies and prompt lookup
        EXPECT_EQ(count(r.out, "| NO |"), 0) << r.out;
    }
}

TEST(BenchEdit, SampledTargetIsReproducedWithTheSameSeed) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    REQUIRE_FLINT();
    CommandResult r = run_flint(bench("--accuracies 100 80 --temperature 0.8 --seed 3"));
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("sampled"), std::string::npos) << r.out;
    EXPECT_EQ(count(r.out, "| yes |"), 3) << r.out;
}

TEST(BenchEdit, RefusesBadOptions) {
    REQUIRE_FLINT();
    EXPECT_NE(run_flint(bench("--edit bogus")).exit_code, 0);
    EXPECT_NE(run_flint(bench("--temperature -1")).exit_code, 0);
    EXPECT_NE(run_flint(bench("--max-draft 0")).exit_code, 0);
}
