// `flint bench latency` end to end against a real `flint serve`: every mode runs, the table and the CSV
// are written, and the warm-up row really does leave only the question to prefill (the file it sent
// ahead is in the prompt and cached), where plain (c) prefills the file with the question.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "client/client_test_util.h"

namespace flint::test {
namespace {

TEST(BenchLatency, RunsEveryModeAndTheWarmUpLeavesOnlyTheQuestionToPrefill) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    ServeProcess s("");
    ASSERT_GT(s.port(), 0);
    const std::string dir = temp_dir("bench-latency");
    const std::string csv = dir + "/latency.csv";
    // stories260K's 512-token context: two turns of ~120 tokens each, short answers.
    auto r = run_flint("bench latency --url " + s.http_url() + " --turns 2 --chunk-bytes 160 --answer-tokens 4 --round-trips 1 "
                       "--no-reuse-turns 1 --csv " + csv,
                       dir + "/err.txt");
    ASSERT_EQ(r.exit_code, 0) << read_text(dir + "/err.txt") << r.out;
    for (const char* row : {"(a) new connection", "(b) keep-alive", "(c) persistent WebSocket", "(c) + warm-up", "(a, no KV reuse)"})
        EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
    EXPECT_NE(r.out.find("(c) vs (a), medians: round-trip overhead"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(c) + warm-up vs (a)"), std::string::npos) << r.out;

    std::istringstream in(read_text(csv));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line.rfind("mode,turn,prompt_tokens,cached_tokens,ttft_ms", 0), 0u) << line;
    std::map<char, int> rows;
    while (std::getline(in, line)) {
        char mode;
        int turn, prompt, cached;
        ASSERT_EQ(std::sscanf(line.c_str(), "%c,%d,%d,%d", &mode, &turn, &prompt, &cached), 4) << line;
        ++rows[mode];
        if (mode == 'w') {
            EXPECT_GT(cached, prompt - 40) << "the file should have been prefilled by the warm-up: " << line;
        }
        if (mode == 'c' && turn == 1) {
            EXPECT_LT(cached, prompt / 2) << "(c) prefills the file with the question: " << line;
        }
    }
    EXPECT_EQ(rows['a'], 2);
    EXPECT_EQ(rows['b'], 2);
    EXPECT_EQ(rows['c'], 2);
    EXPECT_EQ(rows['w'], 2);
    EXPECT_EQ(rows['n'], 1);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flint::test
