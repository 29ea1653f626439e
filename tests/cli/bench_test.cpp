// `flint bench`: the JSON report, the depth option (decode after a long context) and its limits.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "test_paths.h"

using namespace flint::test;

TEST(Bench, JsonReportAtADepth) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    CommandResult r = run_flint("bench -m " + m + " -t 1 -p 8 -n 4 -d 100 -r 1 --no-bandwidth --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["depth"], 100);
    EXPECT_EQ(j["n_prompt"], 8);
    EXPECT_GE(j["ctx"].get<int>(), 100 + 8 + 4);  // the default context makes room for the depth
    EXPECT_GT(j["pp_tok_s"]["median"].get<double>(), 0);
    EXPECT_GT(j["tg_tok_s"]["median"].get<double>(), 0);
}

TEST(Bench, DepthBeyondTheContextIsRefused) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    const std::string err = ::testing::TempDir() + "/bench_depth.err";
    CommandResult r = run_flint("bench -m " + m + " -t 1 -c 128 -p 8 -n 4 -d 200 -r 1 --no-bandwidth", err);
    EXPECT_NE(r.exit_code, 0);
    const std::string msg = read_text(err);
    EXPECT_NE(msg.find("-d + -p + -n = 212 exceeds the context 128"), std::string::npos) << msg;
}
