// Tab at flint chat's prompt: the editor's completion step (any completer), and what chat completes
// (src/client/completion.cpp) against a temporary directory tree.
#include "client/completion.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_test_util.h"

namespace flint::client {
namespace {

using Step = LineEditor::Step;
using Strings = std::vector<std::string>;

// A completer offering `candidates` for the text from `start` to the cursor.
LineEditor::Completer offering(size_t start, Strings candidates) {
    return [=](const std::string&, size_t) { return LineEditor::Completion{start, candidates}; };
}

Step type(LineEditor& e, const std::string& keys) {
    Step last = Step::Edit;
    for (unsigned char c : keys) last = e.feed(c);
    return last;
}

TEST(Completion, TabTakesOneCandidateExtendsToTheCommonPartOrAsksForAListing) {
    LineEditor e;
    e.start();
    type(e, "a\tb");  // no completer: a tab
    EXPECT_EQ(e.text(), "a\tb");
    e.set_completer(offering(std::string::npos, {}));  // not a completion here: a tab too
    e.start();
    type(e, "a\t");
    EXPECT_EQ(e.text(), "a\t");
    e.set_completer(offering(1, {"file "}));
    e.start();
    type(e, "/fi\t");
    EXPECT_EQ(e.text(), "/file ");
    EXPECT_EQ(e.cursor(), 6u);
    e.set_completer(offering(6, {"src/main.cpp ", "src/main.h "}));
    e.start();
    EXPECT_EQ(type(e, "/file s\t"), Step::Edit);
    EXPECT_EQ(e.text(), "/file src/main.");
    EXPECT_EQ(type(e, "\t"), Step::List);  // nothing more in common: the candidates, the line unchanged
    EXPECT_EQ(e.listing(), (Strings{"main.cpp ", "main.h "}));  // without the directory they share
    EXPECT_EQ(e.text(), "/file src/main.");
    e.set_completer(offering(0, {"/model ", "/file "}));  // a leading '/' alone is not a directory
    e.start();
    EXPECT_EQ(type(e, "/\t"), Step::List);
    EXPECT_EQ(e.listing(), (Strings{"/model ", "/file "}));
    e.set_completer(offering(6, {}));  // a completion with no candidates: nothing happens
    e.start();
    type(e, "/file zz\t");
    EXPECT_EQ(e.text(), "/file zz");
    // The common part stops at a whole UTF-8 character: "é" and "è" share their first byte only.
    e.set_completer(offering(0, {"caf\xc3\xa9", "caf\xc3\xa8"}));
    e.start();
    type(e, "c\t");
    EXPECT_EQ(e.text(), "caf");
}

class ChatCompletion : public ::testing::Test {
protected:
    void SetUp() override {
        namespace fs = std::filesystem;
        fs::create_directories(t_.path / "src" / "deep");
        fs::create_directories(t_.path / "home" / "proj");
        for (const char* f : {"src/main.cpp", "src/main.h", "src/util.cpp", "src/.hidden", "notes.txt", "home/todo.md"})
            std::ofstream(t_.file(f)) << "x\n";
        const char* home = std::getenv("HOME");
        saved_home_ = home ? home : "";
        had_home_ = home != nullptr;
        setenv("HOME", t_.file("home").c_str(), 1);
    }
    void TearDown() override {
        if (had_home_) setenv("HOME", saved_home_.c_str(), 1);
        else unsetenv("HOME");
    }
    std::string dir() const { return t_.path.string(); }
    static Strings candidates(const std::string& text) { return complete_chat_line(text, text.size()).candidates; }
    test::TempDir t_{"flint-completion"};
    std::string saved_home_;
    bool had_home_ = false;
};

TEST_F(ChatCompletion, CommandNamesAtTheStartOfTheLine) {
    EXPECT_EQ(candidates("/"), (Strings{"/model ", "/system ", "/file ", "/reset", "/help", "/quit"}));
    EXPECT_EQ(candidates("/f"), Strings{"/file "});
    EXPECT_EQ(complete_chat_line("/f", 2).start, 0u);
    EXPECT_TRUE(candidates("/x").empty());
    EXPECT_EQ(complete_chat_line("/x", 2).start, 0u);  // a command, none matching: Tab does nothing
    // Not a command: Tab is a tab.
    for (const std::string text : {"", "hello", " /file", "/model qw", "/system be", "two\n/f"})
        EXPECT_EQ(complete_chat_line(text, text.size()).start, std::string::npos) << text;
}

TEST_F(ChatCompletion, FilePathsDirectoriesWithASlashFilesWithASpace) {
    const std::string d = dir();
    EXPECT_EQ(candidates("/file " + d + "/src/m"), (Strings{d + "/src/main.cpp ", d + "/src/main.h "}));
    EXPECT_EQ(complete_chat_line("/file " + d + "/src/m", 6 + d.size() + 6).start, 6u);
    EXPECT_EQ(candidates("/file " + d + "/src/"), (Strings{d + "/src/deep/", d + "/src/main.cpp ", d + "/src/main.h ", d + "/src/util.cpp "}));
    EXPECT_EQ(candidates("/file " + d + "/src/."), Strings{d + "/src/.hidden "});  // hidden names when asked for
    EXPECT_EQ(candidates("/file   " + d + "/no"), Strings{d + "/notes.txt "});       // spaces before the path
    EXPECT_TRUE(candidates("/file " + d + "/missing/x").empty());
    EXPECT_TRUE(candidates("/file \"" + d + "/no").empty());  // a quoted path is left as typed
    // The home directory, as /file reads it; the candidates keep the "~/" that was typed.
    EXPECT_EQ(candidates("/file ~"), Strings{"~/"});
    EXPECT_EQ(candidates("/file ~/"), (Strings{"~/proj/", "~/todo.md "}));
    EXPECT_EQ(candidates("/file ~/t"), Strings{"~/todo.md "});
}

TEST_F(ChatCompletion, ADirectoryListingIsCappedAndSorted) {
    for (int i = 0; i < 30; ++i) std::ofstream(t_.file("src/deep/f" + std::to_string(100 + i))) << "";
    const Strings all = directory_matches(t_.file("src/deep"), "f", 1000);
    ASSERT_EQ(all.size(), 30u);
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
    EXPECT_EQ(directory_matches(t_.file("src/deep"), "f", 10).size(), 10u);
    EXPECT_TRUE(directory_matches(t_.file("no/such/dir"), "", 10).empty());
}

}  // namespace
}  // namespace flint::client
