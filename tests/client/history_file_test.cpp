// HistoryFile (src/client/history_file.cpp): flint chat's history between sessions.
#include "client/history_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "cli/cli_test_util.h"

namespace flint::client {
namespace {

using test::read_text;
using test::TempDir;

TEST(HistoryFile, EntriesWithBackslashesAndLineBreaksRoundTrip) {
    const std::vector<std::string> entries = {"plain", "two\nlines", "printf(\"\\n\");", "ends with \\", "\\\\n", "\n"};
    for (const std::string& e : entries) {
        const std::string line = escape_history_entry(e);
        EXPECT_EQ(line.find('\n'), std::string::npos) << line;
        EXPECT_EQ(unescape_history_entry(line), e) << line;
    }
    EXPECT_EQ(unescape_history_entry("a lone \\ stays"), "a lone \\ stays");  // a file written by hand
    EXPECT_EQ(unescape_history_entry("trailing \\"), "trailing \\");
}

TEST(HistoryFile, AppendCreatesAPrivateFileAndLoadReadsItBack) {
    TempDir t("flint-history");
    const std::string path = t.file("data/flint/chat_history");
    HistoryFile h(path);
    EXPECT_TRUE(h.load(100).empty());  // no file yet: no history, and none is made until a line comes
    EXPECT_FALSE(std::filesystem::exists(path));
    h.append("first");
    h.append("a pasted\nfunction");
    h.append("");  // nothing
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(read_text(path), "first\na pasted\\nfunction\n");
    EXPECT_EQ(HistoryFile(path).load(100), (std::vector<std::string>{"first", "a pasted\nfunction"}));
}

TEST(HistoryFile, LoadKeepsTheNewestAndRewritesAFileGrownPastTwiceTheCap) {
    TempDir t("flint-history-cap");
    const std::string path = t.file("chat_history");
    {
        std::ofstream out(path);
        for (int i = 0; i < 25; ++i) out << "line " << i << "\r\n" << (i == 3 ? "\n" : "");  // CRs and a blank line
    }
    std::vector<std::string> got = HistoryFile(path).load(10);
    ASSERT_EQ(got.size(), 10u);
    EXPECT_EQ(got.front(), "line 15");
    EXPECT_EQ(got.back(), "line 24");
    std::string compacted;  // 25 > 2 × 10: the file now holds the 10 it gave back
    for (int i = 15; i < 25; ++i) compacted += "line " + std::to_string(i) + "\n";
    EXPECT_EQ(read_text(path), compacted);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    // Under twice the cap the file is left as it is.
    HistoryFile h(path);
    for (int i = 25; i < 30; ++i) h.append("line " + std::to_string(i));
    EXPECT_EQ(HistoryFile(path).load(10).front(), "line 20");
    const std::string text = read_text(path);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 15);
}

TEST(HistoryFile, AFileThatCannotBeUsedIsReportedOnceAndTheSessionGoesOn) {
    TempDir t("flint-history-bad");
    HistoryFile dir(t.path.string());  // a directory
    testing::internal::CaptureStderr();
    EXPECT_TRUE(dir.load(10).empty());
    dir.append("x");
    dir.append("y");
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("history " + t.path.string() + ": is a directory; this session's lines are not kept"), std::string::npos) << err;
    EXPECT_EQ(err.find("not kept", err.find("not kept") + 1), std::string::npos) << "reported once:\n" << err;
    std::ofstream(t.file("plain")) << "x\n";
    HistoryFile under_a_file(t.file("plain/chat_history"));  // a file stands where its directory should
    testing::internal::CaptureStderr();
    EXPECT_TRUE(under_a_file.load(10).empty());
    under_a_file.append("x");
    const std::string err2 = testing::internal::GetCapturedStderr();
    EXPECT_NE(err2.find("history " + t.file("plain/chat_history") + ": Not a directory"), std::string::npos) << err2;
    HistoryFile deeper(t.file("plain/sub/chat_history"));  // a directory that cannot be made
    testing::internal::CaptureStderr();
    deeper.append("x");
    const std::string err3 = testing::internal::GetCapturedStderr();
    EXPECT_NE(err3.find("cannot create " + t.file("plain/sub") + ": Not a directory"), std::string::npos) << err3;
    EXPECT_EQ(read_text(t.file("plain")), "x\n");
    HistoryFile none("");
    EXPECT_TRUE(none.load(10).empty());
    none.append("nothing happens");
}

}  // namespace
}  // namespace flint::client
