// `flint bench`: the JSON report, the depth option (decode after a long context) and its limits, the
// bandwidth probe beside every repetition.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

// The bandwidth probe runs after every repetition; the decode fraction is the median of the per-repetition
// ratios, each its decode's bytes per second over the probe after it. The probe's own buffer is not in the
// reported memory.
TEST(Bench, BandwidthIsProbedAfterEveryRepetition) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    CommandResult r = run_flint("bench -m " + m + " -t 2 -p 0 -n 16 -r 3 --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    const auto bws = j["read_bandwidth_gb_s_per_rep"].get<std::vector<double>>();
    auto fr = j["decode_fraction_per_rep"].get<std::vector<double>>();
    ASSERT_EQ(bws.size(), 3u);
    ASSERT_EQ(fr.size(), 3u);
    for (double b : bws) EXPECT_GT(b, 0.1);
    for (double f : fr) EXPECT_GT(f, 0);
    std::sort(fr.begin(), fr.end());
    EXPECT_DOUBLE_EQ(j["decode_fraction_of_bandwidth"].get<double>(), fr[1]);
    auto sorted = bws;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_DOUBLE_EQ(j["read_bandwidth_gb_s"].get<double>(), sorted[1]);
    EXPECT_LT(j["peak_rss_bytes"].get<double>(), 512.0 * 1024 * 1024);  // the 1 GiB probe buffer is not counted
}
