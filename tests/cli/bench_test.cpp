// `flint bench`: the JSON report, the depth option (decode after a long context) and its limits, the
// bandwidth probe beside every repetition, decode paired token by token with reads, and `bench edit`'s rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
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

// --stages: the decode repetitions timed stage by stage, in the JSON and as a table; the stages (and the rest
// of the decode loop) account for exactly the decode time.
TEST(Bench, StagesBreakTheDecodeStepDown) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    CommandResult r = run_flint("bench -m " + m + " -t 1 -p 0 -n 32 -r 2 --no-bandwidth --stages --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("decode_stage_us_per_token")) << r.out;
    const auto& st = j["decode_stage_us_per_token"];
    for (const char* name : {"embed", "norms", "q/k/v", "bias, rope, kv write", "attention", "attention output",
                             "residual adds", "ffn gate/up", "ffn down", "output head", "other"}) {
        ASSERT_TRUE(st.contains(name)) << name;
        EXPECT_GE(st[name].get<double>(), 0) << name;
    }
    // The stages and "other" add up to the decode time per token of the same repetitions: the time of each
    // repetition is its tokens over its rate. An identity, whatever the machine's speed at that moment.
    double total = 0;
    for (const auto& [name, us] : st.items()) total += us.get<double>();
    const auto& rates = j["tg_tok_s_per_rep"];
    ASSERT_EQ(rates.size(), 2u) << r.out;
    double seconds = 0;
    for (const auto& rate : rates) seconds += 32 / rate.get<double>();
    const double step_us = 1e6 * seconds / (2 * 32);
    EXPECT_NEAR(total, step_us, 1e-9 * step_us);
    EXPECT_GT(st["q/k/v"].get<double>(), 0);

    CommandResult t = run_flint("bench -m " + m + " -t 1 -p 0 -n 8 -r 1 --no-bandwidth --stages");
    ASSERT_EQ(t.exit_code, 0) << t.out;
    EXPECT_NE(t.out.find("| ffn gate/up |"), std::string::npos) << t.out;
    CommandResult plain = run_flint("bench -m " + m + " -t 1 -p 0 -n 8 -r 1 --no-bandwidth --json");
    ASSERT_EQ(plain.exit_code, 0) << plain.out;
    EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("decode_stage_us_per_token"));
}

// --decode-prefetch forces the AVX-512 one-token prefetch either way and the report says which ran; a value
// it does not know is refused before anything loads.
TEST(Bench, DecodePrefetchIsForcedAndReported) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    for (const char* v : {"on", "off"}) {
        CommandResult r = run_flint("bench -m " + m + " -t 1 -p 0 -n 4 -r 1 --no-bandwidth --json --decode-prefetch " + v);
        ASSERT_EQ(r.exit_code, 0) << r.out;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["decode_prefetch"].get<bool>(), std::string(v) == "on" && j["isa"] == "avx512") << v;
    }
    CommandResult avx2 = run_flint("bench -m " + m + " -t 1 -p 0 -n 4 -r 1 --no-bandwidth --json --isa avx2 --decode-prefetch on");
    if (avx2.exit_code == 0) {  // a CPU with AVX2: the choice has no effect there, and the report says so
        EXPECT_FALSE(nlohmann::json::parse(avx2.out)["decode_prefetch"].get<bool>()) << avx2.out;
    }
    const std::string err = ::testing::TempDir() + "/bench_prefetch.err";
    CommandResult bad = run_flint("bench -m " + m + " -n 4 --decode-prefetch sometimes", err);
    EXPECT_NE(bad.exit_code, 0);
    const std::string msg = read_text(err);
    EXPECT_NE(msg.find("--decode-prefetch"), std::string::npos) << msg;
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

// --paired: tokens timed one by one, each against a read of the weights' bytes after it; the report's
// figures are consistent (the halves split the pairs by read speed, the percentiles bracket the median), the
// default context makes room for the pairs, weights that fit in the last-level cache are warned about, and too
// few pairs or too small a context are refused.
TEST(Bench, PairedDecodeAgainstAReadOfTheSameBytes) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    CommandResult r = run_flint("bench -m " + m + " -t 2 -p 0 -n 4 -r 1 --no-bandwidth --paired 40 --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("paired")) << r.out;
    const auto& p = j["paired"];
    EXPECT_EQ(p["tokens"], 40);
    EXPECT_GE(j["ctx"].get<int>(), 40);
    const double med = p["decode_over_read_median"].get<double>();
    EXPECT_GT(med, 0);
    EXPECT_LE(p["decode_over_read_p10"].get<double>(), med);
    EXPECT_GE(p["decode_over_read_p90"].get<double>(), med);
    EXPECT_GT(p["slower_half"]["read_gb_s_median"].get<double>(), 0);
    const double fast = p["faster_half"]["read_gb_s_median"].get<double>(), all = p["read_gb_s_median"].get<double>();
    EXPECT_GT(fast, p["slower_half"]["read_gb_s_median"].get<double>());  // distinct timings: a strict split
    EXPECT_GE(fast, all);
    EXPECT_LE(p["slower_half"]["read_gb_s_median"].get<double>(), all);
    EXPECT_GT(p["faster_half"]["decode_over_read_median"].get<double>(), 0);

    const std::string err = ::testing::TempDir() + "/bench_paired.err";
    CommandResult text = run_flint("bench -m " + m + " -t 1 -p 0 -n 4 -r 1 --no-bandwidth --paired 8", err);
    ASSERT_EQ(text.exit_code, 0) << text.out;
    EXPECT_NE(text.out.find("paired: 8 decode tokens"), std::string::npos) << text.out;
    // stories260K's 1 MiB of weights fit in any last-level cache: said so, where the cache size is known.
    if (p["last_level_cache_bytes"].get<size_t>() > 0) {
        EXPECT_NE(read_text(err).find("smaller than the"), std::string::npos) << read_text(err);
    }

    CommandResult one = run_flint("bench -m " + m + " -t 1 -p 0 -n 4 -r 1 --no-bandwidth --paired 1", err);
    EXPECT_NE(one.exit_code, 0);
    EXPECT_NE(read_text(err).find("--paired needs at least 2 tokens"), std::string::npos) << read_text(err);
    CommandResult big = run_flint("bench -m " + m + " -t 1 -c 64 -p 8 -n 4 -r 1 --no-bandwidth --paired 100", err);
    EXPECT_NE(big.exit_code, 0);
    EXPECT_NE(read_text(err).find("-d + -p + --paired = 108 exceeds the context 64"), std::string::npos) << read_text(err);
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

// `flint bench edit`: every row reproduces the target (lossless), a perfect prediction takes fewer decode
// steps than a wholly wrong one (which takes one per token after the first), and each row carries the
// plain run it was paired with and a positive ratio.
TEST(Bench, EditRowsArePairedWithPlainRunsAndLossless) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string m = shared_path("models/stories260K.gguf");
    CommandResult r = run_flint("bench edit -m " + m + " -t 1 --target-tokens 64 -r 2 --accuracies 100 0");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::map<std::string, std::vector<std::string>> rows;  // label -> cells
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("| ", 0) != 0 || line.find("---") != std::string::npos) continue;
        std::vector<std::string> cells;
        std::istringstream ls(line.substr(2));
        for (std::string cell; std::getline(ls, cell, '|');) {
            cell.erase(0, cell.find_first_not_of(' '));
            cell.erase(cell.find_last_not_of(' ') + 1);
            cells.push_back(cell);
        }
        rows[cells[0]] = cells;
    }
    for (const char* label : {"100%", "0%", "none (prompt lookup)"}) {
        ASSERT_TRUE(rows.count(label)) << label << "\n" << r.out;
        const auto& c = rows[label];
        ASSERT_EQ(c.size(), 8u) << r.out;
        EXPECT_EQ(c[7], "yes") << label;
        EXPECT_GT(std::stod(c[5]), 0.0) << label << ": plain ms per step";
        EXPECT_GT(std::stod(c[6]), 0.0) << label << ": ratio";
    }
    EXPECT_EQ(std::stoi(rows["0%"][2]), 63);
    EXPECT_LT(std::stoi(rows["100%"][2]), 20);
}
