// flint edit and flint complete end to end against a real `flint serve`, and their bad-input cases:
// the file is never touched unless the user confirmed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "client/client_test_util.h"
#include "client/scripted_peers.h"

namespace flint::test {
namespace {

namespace fs = std::filesystem;
const std::string kOriginal = "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n";

class EditTest : public SharedServeSuite<EditTest> {
public:
    static std::vector<std::string> required() { return {"models/stories260K.gguf"}; }
    static std::string serve_args() { return "--api-key k1"; }

protected:
    void SetUp() override {
        SharedServeSuite::SetUp();
        if (stopped()) return;
        dir_ = temp_dir("edit");
        file_ = dir_ + "/add.py";
        write_file(file_, kOriginal);
    }
    void TearDown() override { fs::remove_all(dir_); }
    CommandResult edit(const std::string& args, const std::string& stdin_text = "") {
        write_file(dir_ + "/answer.txt", stdin_text + "\n");
        return run_flint("edit " + shell_quote(file_) + " 'rename add to plus' --url " + server_->http_url() +
                             " --api-key k1 -n 24 " + args + " <" + dir_ + "/answer.txt",
                         dir_ + "/err.txt");
    }
    std::string err() const { return read_text(dir_ + "/err.txt"); }
    std::string dir_, file_;
};

TEST_F(EditTest, ShowsTheDiffAndLeavesTheFileAloneWhenNotConfirmed) {
    auto r = edit("", "n");
    EXPECT_EQ(r.exit_code, 0) << err();
    EXPECT_NE(r.out.find("--- "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("+++ "), std::string::npos);
    EXPECT_NE(r.out.find("@@ -1,"), std::string::npos);
    EXPECT_NE(r.out.find("-def add(a, b):"), std::string::npos);
    EXPECT_NE(err().find("not written"), std::string::npos) << err();
    EXPECT_EQ(read_text(file_), kOriginal);
    EXPECT_FALSE(fs::exists(file_ + ".orig"));
}

TEST_F(EditTest, SendsTheFileAsThePredictionAndWritesOnConfirmationKeepingABackup) {
    auto r = edit("", "y");
    EXPECT_EQ(r.exit_code, 0) << err();
    // usage reports the prediction: accepted + rejected = the prediction's length, so it was sent.
    const std::string e = err();
    const size_t p = e.find("prediction accepted ");
    ASSERT_NE(p, std::string::npos) << e;
    int accepted = 0, rejected = 0;
    ASSERT_EQ(std::sscanf(e.c_str() + p, "prediction accepted %d, rejected %d", &accepted, &rejected), 2) << e;
    EXPECT_GT(accepted + rejected, 10) << e;
    EXPECT_NE(e.find("wrote "), std::string::npos) << e;
    EXPECT_EQ(read_text(file_ + ".orig"), kOriginal);
    const std::string now = read_text(file_);
    EXPECT_NE(now, kOriginal);
    // What was written is what the diff showed as '+' lines.
    const size_t first_line_end = now.find('\n');
    EXPECT_NE(r.out.find("+" + now.substr(0, first_line_end)), std::string::npos) << r.out << "\n---\n" << now;
}

TEST_F(EditTest, YesWritesWithoutAskingAndNoBackupKeepsNone) {
    auto r = edit("--yes --no-backup");
    EXPECT_EQ(r.exit_code, 0) << err();
    EXPECT_NE(read_text(file_), kOriginal);
    EXPECT_FALSE(fs::exists(file_ + ".orig"));
}

TEST_F(EditTest, TestCommandRunsAfterWritingAndItsFailureIsTheExitCode) {
    auto ok = edit("--yes --test 'test -f " + file_ + ".orig'");
    EXPECT_EQ(ok.exit_code, 0) << err();
    EXPECT_NE(err().find("test passed"), std::string::npos) << err();
    write_file(file_, kOriginal);
    auto bad = edit("--yes --test 'exit 3'");
    EXPECT_EQ(bad.exit_code, 4) << err();
    EXPECT_NE(err().find("test failed (exit 3)"), std::string::npos) << err();
}

TEST_F(EditTest, BadInputFailsWithAMessageAndTheFileUntouched) {
    struct Case {
        std::string name, args, file, expect;
    };
    const std::string bin = dir_ + "/blob.bin";
    write_file(bin, std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10));
    const std::string big = dir_ + "/big.py";
    std::string big_text;
    while (big_text.size() < 40000) big_text += "x = x + 1  # keep counting and counting\n";
    write_file(big, big_text);
    const std::string url = " --url " + server_->http_url();
    const std::vector<Case> cases = {
        {"missing file", url + " --api-key k1", dir_ + "/nope.py", "no such file"},
        {"binary file", url + " --api-key k1", bin, "binary"},
        {"larger than the context", url + " --api-key k1", big, "context"},
        {"server down", " --url http://127.0.0.1:1 --api-key k1", file_, "cannot connect"},
        {"wrong key", url + " --api-key wrong", file_, "401"},
    };
    for (const Case& c : cases) {
        const std::string before = fs::exists(c.file) ? read_text(c.file) : "";
        auto r = run_flint("edit " + shell_quote(c.file) + " 'x' --yes " + c.args + " </dev/null", dir_ + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << c.name;
        EXPECT_NE(err().find(c.expect), std::string::npos) << c.name << ": " << err();
        if (fs::exists(c.file)) {
            EXPECT_EQ(read_text(c.file), before) << c.name;
        }
        EXPECT_FALSE(fs::exists(c.file + ".orig")) << c.name;
    }
}

class CompleteTest : public SharedServeSuite<CompleteTest> {
public:
    static std::vector<std::string> required() { return {"models/flint-tiny-code.gguf"}; }
    static std::string serve_args() { return "-m code=" + shared_path("models/flint-tiny-code.gguf"); }

protected:
    void SetUp() override {
        SharedServeSuite::SetUp();
        if (stopped()) return;
        dir_ = temp_dir("complete");
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string dir_;
};

TEST_F(CompleteTest, FillsTheMiddleAtTheCursorLikeTheEngineDoes) {
    const std::string prefix = "import os\n\n\ndef main():\n    for name in os.listdir(\".\"):\n        ";
    const std::string suffix = "\n\n\nif __name__ == \"__main__\":\n    main()\n";
    const std::string file = dir_ + "/m.py";
    write_file(file, prefix + suffix);
    // Line 6, column 9: right after the 8 spaces of indentation.
    auto r = run_flint("complete " + file + ":6:9 --url " + server_->http_url() + " -n 16", dir_ + "/err.txt");
    ASSERT_EQ(r.exit_code, 0) << read_text(dir_ + "/err.txt");
    EXPECT_FALSE(r.out.empty());
    // The same FIM prompt through the engine directly, greedy: the same text. The server puts the lines
    // from the last multiple of 8 through the cursor's (here all six) after <fim_middle>.
    auto engine = [&](const std::string& above, const std::string& middle) {
        auto e = run_flint("run -m " + shared_path("models/flint-tiny-code.gguf") + " --temp 0 -n 16 --fim-prefix " +
                           shell_quote(above) + " --fim-suffix " + shell_quote(suffix) + " --fim-middle " + shell_quote(middle));
        EXPECT_EQ(e.exit_code, 0);
        return e.out;
    };
    const std::string ref_out = engine("", prefix);
    EXPECT_EQ(r.out, ref_out);
    // --band-lines 1: the cursor's line (its 8 spaces) alone; 0: plain PSM, the whole prefix before the suffix.
    const size_t line_start = prefix.rfind('\n') + 1;
    const std::vector<std::pair<std::string, std::string>> bands = {{"1", engine(prefix.substr(0, line_start), prefix.substr(line_start))},
                                                                    {"0", engine(prefix, "")}};
    for (const auto& [band, expected] : bands) {
        auto b = run_flint("complete " + file + ":6:9 --band-lines " + band + " --url " + server_->http_url() + " -n 16", dir_ + "/err.txt");
        ASSERT_EQ(b.exit_code, 0) << read_text(dir_ + "/err.txt");
        EXPECT_EQ(b.out, expected) << band;
    }
    // An editor's unsaved buffer on stdin (the name only labels it): the same completion.
    auto piped = run_flint("complete --stdin unsaved.py:6:9 --url " + server_->http_url() + " -n 16 < " + file, dir_ + "/err.txt");
    ASSERT_EQ(piped.exit_code, 0) << read_text(dir_ + "/err.txt");
    EXPECT_EQ(piped.out, ref_out);
    // Streamed: the same text, and -v says when its first piece came and what the usage chunk counted.
    auto streamed = run_flint("complete " + file + ":6:9 --stream -v --url " + server_->http_url() + " -n 16", dir_ + "/err.txt");
    const std::string err = read_text(dir_ + "/err.txt");
    ASSERT_EQ(streamed.exit_code, 0) << err;
    EXPECT_EQ(streamed.out, ref_out);
    EXPECT_NE(err.find(", first text at "), std::string::npos) << err;
    EXPECT_NE(err.find(", 16 completion tokens"), std::string::npos) << err;
}

// The window around the cursor starts on a multiple of 32 lines, so moving to the next line keeps the
// prompt's start and the server finds the earlier lines cached (a start one line later would share only
// the FIM token).
TEST_F(CompleteTest, TheNextLineFindsTheWindowCached) {
    std::string text;
    for (int i = 0; i < 200; ++i) text += std::string("x") + char('0' + i % 7) + " = f(" + char('0' + i % 10) + ")\n";
    const std::string file = dir_ + "/w.py";
    write_file(file, text);
    struct Usage {
        int prompt = -1, cached = -1;
    };
    auto complete_at = [&](int line, const std::string& lines_sent) {
        auto r = run_flint("complete " + file + ":" + std::to_string(line) + ":1 --prefix-lines 20 --suffix-lines 2 -n 4 -v --url " +
                               server_->http_url(),
                           dir_ + "/err.txt");
        const std::string err = read_text(dir_ + "/err.txt");
        EXPECT_EQ(r.exit_code, 0) << err;
        EXPECT_NE(err.find("[lines " + lines_sent + " of 201 sent; "), std::string::npos) << err;
        Usage u;
        const size_t at = err.find(" sent; ");
        if (at != std::string::npos) std::sscanf(err.c_str() + at, " sent; %d prompt tokens (%d cached)", &u.prompt, &u.cached);
        return u;
    };
    // Line 150: 20 lines up is line 130, the window starts at 129 (0-based 128); the suffix ends with line 152.
    const Usage first = complete_at(150, "129-152");
    const Usage next = complete_at(151, "129-153");
    ASSERT_GT(first.prompt, 100);
    EXPECT_GT(next.cached, first.prompt / 2) << next.cached << " of " << next.prompt;
}

TEST_F(CompleteTest, BadInputFailsWithAMessage) {
    const std::string file = dir_ + "/a.py";
    write_file(file, "x = 1\ny = 2\n");
    struct Case {
        std::string where, url, expect;
    };
    const std::string url = server_->http_url();
    const std::vector<Case> cases = {
        {file + ":9:1", url, "fewer than 9 lines"},
        {file + ":1:99", url, "past its end"},
        {file + ":x:1", url, "numbers"},
        {file, url, "FILE:LINE:COL"},
        {dir_ + "/missing.py:1:1", url, "no such file"},
        {file + ":1:1", "http://127.0.0.1:1", "cannot connect"},
    };
    for (const Case& c : cases) {
        auto r = run_flint("complete " + shell_quote(c.where) + " --url " + c.url, dir_ + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << c.where;
        EXPECT_NE(read_text(dir_ + "/err.txt").find(c.expect), std::string::npos) << c.where << ": " << read_text(dir_ + "/err.txt");
    }
    // The same checks on stdin.
    const std::string binary = dir_ + "/b.bin", big = dir_ + "/big.txt";
    write_file(binary, std::string("x = 1\0\n", 7));
    write_file(big, std::string((1 << 20) + 1, 'a'));
    const std::vector<Case> piped = {
        {"a.py:1:1 < " + binary, url, "stdin: looks like a binary file"},
        {"a.py:1:1 < " + big, url, "stdin: more than 1048576 bytes"},
        {"a.py:4:1 < " + file, url, "a.py has fewer than 4 lines"},
        {"a.py:1:1 < " + file, "http://127.0.0.1:1", "cannot connect"},
    };
    for (const Case& c : piped) {
        auto r = run_flint("complete --stdin --url " + c.url + " " + c.where, dir_ + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << c.where;
        EXPECT_NE(read_text(dir_ + "/err.txt").find(c.expect), std::string::npos) << c.where << ": " << read_text(dir_ + "/err.txt");
    }
}

TEST(CompleteNoFim, AModelWithoutFimTokensIsAClearError) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    ServeProcess s("");
    ASSERT_GT(s.port(), 0);
    const std::string dir = temp_dir("complete-nofim");
    write_file(dir + "/a.txt", "Once upon a time\n");
    auto r = run_flint("complete " + dir + "/a.txt:1:5 --url " + s.http_url(), dir + "/err.txt");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(dir + "/err.txt").find("fill-in-the-middle"), std::string::npos) << read_text(dir + "/err.txt");
    fs::remove_all(dir);
}

// The completion is printed before the usage line, so a usage of the wrong shape must not turn a
// completion into a failure; a reply with no text is one.
TEST(CompleteReply, AUsageOfTheWrongShapeStillGivesTheCompletion) {
    const std::string dir = temp_dir("complete-canned");
    write_file(dir + "/a.py", "x = 1\n");
    struct Case {
        std::string body, usage_line;
    };
    const std::vector<Case> cases = {
        {R"({"choices":[{"text":"pass"}],"usage":{"prompt_tokens":7,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens":1}})",
         "; 7 prompt tokens (2 cached), 1 completion tokens"},
        {R"({"choices":[{"text":"pass"}],"usage":"lots"})", "; 0 prompt tokens (0 cached), 0 completion tokens"},
        {R"({"choices":[{"text":"pass"}],"usage":{"prompt_tokens":"7","prompt_tokens_details":3,"completion_tokens":null}})",
         "; 0 prompt tokens (0 cached), 0 completion tokens"},
        {R"({"choices":[{"text":"pass"}],"usage":{"prompt_tokens":7,"prompt_tokens_details":{"cached_tokens":[2]}}})",
         "; 7 prompt tokens (0 cached), 0 completion tokens"},
        {R"({"choices":[{"text":"pass"}]})", "; 0 prompt tokens (0 cached), 0 completion tokens"},
    };
    for (const Case& c : cases) {
        CannedHttpServer s(c.body);
        auto r = run_flint("complete " + dir + "/a.py:1:1 -v --url " + s.url(), dir + "/err.txt");
        const std::string err = read_text(dir + "/err.txt");
        EXPECT_EQ(r.exit_code, 0) << c.body << ": " << err;
        EXPECT_EQ(r.out, "pass") << c.body;
        EXPECT_NE(err.find(c.usage_line), std::string::npos) << c.body << ": " << err;
    }
    for (const std::string body : {R"({"choices":[]})", R"({"choices":[{"text":7}]})", R"([1,2])", "not json"}) {
        CannedHttpServer s(body);
        auto r = run_flint("complete " + dir + "/a.py:1:1 -v --url " + s.url(), dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << body;
        EXPECT_EQ(r.out, "") << body;
        EXPECT_NE(read_text(dir + "/err.txt").find("no choices[0].text"), std::string::npos) << body << ": " << read_text(dir + "/err.txt");
    }
    fs::remove_all(dir);
}

// --stream against scripted servers: the body asks for a stream with its usage; pieces print as they come;
// a stream cut before [DONE], or carrying an error, fails after printing what came; an error status is
// reported from its JSON body.
TEST(CompleteReply, AStreamPrintsItsPiecesAndFailsWhenItIsCutOrCarriesAnError) {
    const std::string dir = temp_dir("complete-stream");
    write_file(dir + "/a.py", "x = 1\n");
    auto sse = [](const std::string& events) {
        return RawReply{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + events};
    };
    const std::string piece1 = "data: {\"choices\":[{\"index\":0,\"text\":\"pa\"}]}\n\n";
    const std::string piece2 = "data: {\"choices\":[{\"index\":0,\"text\":\"ss\"}]}\n\n";
    const std::string usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":4},\"completion_tokens\":2}}\n\n";
    std::string body;
    {
        CannedHttpServer s(sse(piece1 + ": a comment\n\n" + piece2 + usage + "data: [DONE]\n\n"), CannedHttpServer::kWhole, &body);
        auto r = run_flint("complete " + dir + "/a.py:1:1 --stream -v --url " + s.url(), dir + "/err.txt");
        const std::string err = read_text(dir + "/err.txt");
        EXPECT_EQ(r.exit_code, 0) << err;
        EXPECT_EQ(r.out, "pass");
        EXPECT_NE(err.find("; 5 prompt tokens (4 cached), 2 completion tokens"), std::string::npos) << err;
    }
    const auto j = nlohmann::json::parse(body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << body;
    EXPECT_EQ(j.value("stream", false), true) << body;
    EXPECT_TRUE(j.contains("stream_options") && j["stream_options"].value("include_usage", false)) << body;
    struct Bad {
        std::string events, message;
    };
    const std::vector<Bad> bad = {
        {piece1, "ended before its [DONE] (2 bytes of completion came)"},
        {piece1 + "data: {\"error\":{\"message\":\"the model was unloaded\",\"type\":\"server_error\"}}\n\n",
         "ended with an error: the model was unloaded"},
    };
    for (const Bad& b : bad) {
        CannedHttpServer s(sse(b.events));
        auto r = run_flint("complete " + dir + "/a.py:1:1 --stream --url " + s.url(), dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << b.events;
        EXPECT_EQ(r.out, "pa") << "what came is printed";
        EXPECT_NE(read_text(dir + "/err.txt").find(b.message), std::string::npos) << read_text(dir + "/err.txt");
    }
    {
        const std::string err_body = R"({"error":{"message":"no such model","type":"invalid_request_error"}})";
        CannedHttpServer s(RawReply{"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: " +
                                    std::to_string(err_body.size()) + "\r\nConnection: close\r\n\r\n" + err_body});
        auto r = run_flint("complete " + dir + "/a.py:1:1 --stream --url " + s.url(), dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_EQ(r.out, "");
        EXPECT_NE(read_text(dir + "/err.txt").find("answered 404: no such model"), std::string::npos) << read_text(dir + "/err.txt");
    }
    fs::remove_all(dir);
}

// What goes on the wire: the lines around the cursor, or the whole file with 0; bad window sizes refused.
TEST(CompleteWindow, SendsTheLinesAroundTheCursor) {
    const std::string dir = temp_dir("complete-window");
    std::string text;
    for (int i = 1; i <= 100; ++i) text += "line " + std::to_string(i) + "\n";
    write_file(dir + "/a.py", text);
    auto sent = [&](const std::string& args) {
        std::string body;
        {
            CannedHttpServer s(R"({"choices":[{"text":"pass"}]})", CannedHttpServer::kWhole, &body);
            auto r = run_flint("complete " + dir + "/a.py:80:3 " + args + " --url " + s.url(), dir + "/err.txt");
            EXPECT_EQ(r.exit_code, 0) << args << ": " << read_text(dir + "/err.txt");
        }
        auto j = nlohmann::json::parse(body, nullptr, false);
        EXPECT_TRUE(j.is_object()) << body;
        return j.is_object() ? std::pair(j.value("prompt", ""), j.value("suffix", "")) : std::pair<std::string, std::string>();
    };
    const size_t line80 = text.find("line 80\n");
    // 40 lines up from 80 is 40 (0-based 39), down to 0-based 32: the prompt starts with line 33.
    auto [prompt, suffix] = sent("--prefix-lines 40 --suffix-lines 3");
    EXPECT_EQ(prompt, text.substr(text.find("line 33\n"), line80 + 2 - text.find("line 33\n")));
    EXPECT_EQ(suffix, "ne 80\nline 81\nline 82\nline 83\n");
    std::tie(prompt, suffix) = sent("--prefix-lines 0 --suffix-lines 0");
    EXPECT_EQ(prompt + suffix, text);
    EXPECT_EQ(prompt.size(), line80 + 2);
    std::tie(prompt, suffix) = sent("");  // the defaults: 256 lines above (all of them here), 16 below
    EXPECT_EQ(prompt, text.substr(0, line80 + 2));
    EXPECT_EQ(suffix, text.substr(line80 + 2, text.find("line 97\n") - line80 - 2));
    for (const char* bad : {"--prefix-lines -1", "--suffix-lines x", "--prefix-lines 99999999"}) {
        auto r = run_flint("complete " + dir + "/a.py:1:1 " + bad + " --url http://127.0.0.1:1", dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << bad;
        EXPECT_NE(read_text(dir + "/err.txt").find(std::string(bad).substr(0, 14)), std::string::npos) << bad << ": " << read_text(dir + "/err.txt");
    }
    fs::remove_all(dir);
}

// Repo-level FIM: --repo and --context put the repository's name, FILE's path and the other files in the
// request (flint's extension fields); a context file that cannot be read stops the command first.
TEST(CompleteRepo, SendsTheRepoFieldsAndTheContextFiles) {
    const std::string dir = temp_dir("complete-repo");
    write_file(dir + "/main.py", "from library import \n");
    write_file(dir + "/library.py", "class Book:\n    pass\n");
    std::string body;
    {
        CannedHttpServer s(R"({"choices":[{"text":"Book"}]})", CannedHttpServer::kWhole, &body);
        auto r = run_flint("complete " + dir + "/main.py:1:21 --repo lib --context " + dir + "/library.py --url " + s.url(),
                           dir + "/err.txt");
        EXPECT_EQ(r.exit_code, 0) << read_text(dir + "/err.txt");
        EXPECT_EQ(r.out, "Book");
    }
    const auto j = nlohmann::json::parse(body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << body;
    EXPECT_EQ(j.value("repo_name", ""), "lib");
    EXPECT_EQ(j.value("path", ""), dir + "/main.py");
    ASSERT_TRUE(j.contains("context_files") && j["context_files"].size() == 1) << body;
    EXPECT_EQ(j["context_files"][0].value("path", ""), dir + "/library.py");
    EXPECT_EQ(j["context_files"][0].value("content", ""), "class Book:\n    pass\n");
    EXPECT_EQ(j.value("prompt", ""), "from library import ");
    // Without either flag, no repo fields.
    {
        CannedHttpServer s(R"({"choices":[{"text":"Book"}]})", CannedHttpServer::kWhole, &body);
        EXPECT_EQ(run_flint("complete " + dir + "/main.py:1:21 --url " + s.url()).exit_code, 0);
    }
    EXPECT_EQ(body.find("repo_name"), std::string::npos) << body;
    EXPECT_EQ(body.find("fim_band_lines"), std::string::npos) << "the server's default: " << body;
    // --band-lines asks the server for that band (0: plain PSM).
    {
        CannedHttpServer s(R"({"choices":[{"text":"Book"}]})", CannedHttpServer::kWhole, &body);
        EXPECT_EQ(run_flint("complete " + dir + "/main.py:1:21 --band-lines 0 --url " + s.url()).exit_code, 0);
    }
    const auto psm = nlohmann::json::parse(body, nullptr, false);
    ASSERT_TRUE(psm.is_object()) << body;
    EXPECT_EQ(psm.value("fim_band_lines", -1), 0) << body;
    // Run from the repository's directory: paths inside it go out relative to it (as the model saw them in
    // training), and the repository's name defaults to the directory's.
    {
        const std::string outside = temp_dir("complete-repo-outside");
        write_file(outside + "/notes.txt", "see library.py\n");
        const fs::path before = fs::current_path();
        fs::current_path(dir);
        {
            CannedHttpServer s(R"({"choices":[{"text":"Book"}]})", CannedHttpServer::kWhole, &body);
            const std::string context = " --context " + dir + "/library.py --context " + outside + "/notes.txt";
            EXPECT_EQ(run_flint("complete main.py:1:21" + context + " --url " + s.url()).exit_code, 0);
        }
        fs::current_path(before);
        const auto k = nlohmann::json::parse(body, nullptr, false);
        ASSERT_TRUE(k.is_object()) << body;
        EXPECT_EQ(k.value("repo_name", ""), fs::path(dir).filename().string());
        EXPECT_EQ(k.value("path", ""), "main.py");
        ASSERT_EQ(k["context_files"].size(), 2u) << body;
        EXPECT_EQ(k["context_files"][0].value("path", ""), "library.py");
        EXPECT_EQ(k["context_files"][1].value("path", ""), outside + "/notes.txt");  // outside: as given
        fs::remove_all(outside);
    }
    auto r = run_flint("complete " + dir + "/main.py:1:21 --context " + dir + "/missing.py --url http://127.0.0.1:1", dir + "/err.txt");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(dir + "/err.txt").find("missing.py: no such file"), std::string::npos) << read_text(dir + "/err.txt");
    fs::remove_all(dir);
}

// Against real servers: a Qwen-vocabulary model takes the repo-level prompt (longer by the context), a FIM
// model without <|repo_name|> / <|file_sep|> refuses it with a message naming them.
TEST(CompleteRepo, ServedByAQwenVocabularyRefusedWithoutRepoTokens) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("models/flint-tiny-code.gguf");
    const std::string dir = temp_dir("complete-repo-serve");
    write_file(dir + "/main.py", "from library import \n");
    write_file(dir + "/library.py", "class Book:\n    pass\n");
    auto prompt_tokens = [&](const std::string& err) {
        int n = -1;
        const size_t at = err.find(" sent; ");
        if (at != std::string::npos) std::sscanf(err.c_str() + at, " sent; %d prompt tokens", &n);
        return n;
    };
    {
        ServeProcess s("-m qwen=" + shared_path("models/tiny-qwen2-f32.gguf"));
        ASSERT_GT(s.port(), 0);
        auto plain = run_flint("complete " + dir + "/main.py:1:21 -n 4 -v --url " + s.http_url(), dir + "/err.txt");
        ASSERT_EQ(plain.exit_code, 0) << read_text(dir + "/err.txt");
        const int n_plain = prompt_tokens(read_text(dir + "/err.txt"));
        auto repo = run_flint("complete " + dir + "/main.py:1:21 -n 4 -v --repo lib --context " + dir + "/library.py --url " + s.http_url(),
                              dir + "/err.txt");
        ASSERT_EQ(repo.exit_code, 0) << read_text(dir + "/err.txt");
        const int n_repo = prompt_tokens(read_text(dir + "/err.txt"));
        EXPECT_GT(n_plain, 0);
        EXPECT_GT(n_repo, n_plain + 10) << "the repo name, two paths and library.py's text";
    }
    {
        ServeProcess s("-m code=" + shared_path("models/flint-tiny-code.gguf"));
        ASSERT_GT(s.port(), 0);
        auto r = run_flint("complete " + dir + "/main.py:1:21 --repo lib --url " + s.http_url(), dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(read_text(dir + "/err.txt").find("no repo-level FIM tokens"), std::string::npos) << read_text(dir + "/err.txt");
    }
    fs::remove_all(dir);
}

// A server that accepts and then says nothing (or stops partway through its reply) must not hold the
// command forever: after --timeout seconds of silence it fails with a message, and edit leaves the file alone.
TEST(ClientTimeout, ASilentServerEndsTheCommandAfterTheIdleTimeout) {
    const std::string dir = temp_dir("client-timeout");
    write_file(dir + "/a.py", "x = 1\n");
    const std::string reply = R"({"choices":[{"text":"pass"}]})";
    for (size_t stall_after : {size_t(0), size_t(20), size_t(100)}) {  // nothing; mid-header; mid-body
        CannedHttpServer s(reply, stall_after);
        auto r = run_flint("complete " + dir + "/a.py:1:1 --timeout 1 --url " + s.url(), dir + "/err.txt");
        const std::string err = read_text(dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << stall_after;
        EXPECT_EQ(r.out, "") << stall_after;
        EXPECT_NE(err.find("sent nothing for 1 s"), std::string::npos) << stall_after << ": " << err;
    }
    {
        CannedHttpServer s("", 0);
        auto r = run_flint("edit " + dir + "/a.py 'rename x' --yes --timeout 0.5 --url " + s.url(), dir + "/err.txt");
        const std::string err = read_text(dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(err.find("sent nothing for 0.5 s"), std::string::npos) << err;
        EXPECT_EQ(read_text(dir + "/a.py"), "x = 1\n");
        EXPECT_FALSE(fs::exists(dir + "/a.py.orig"));
    }
    for (const char* bad : {"0", "-1", "soon"}) {
        auto r = run_flint("complete " + dir + "/a.py:1:1 --timeout " + bad, dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << bad;
        EXPECT_NE(read_text(dir + "/err.txt").find("--timeout"), std::string::npos) << bad << ": " << read_text(dir + "/err.txt");
    }
    fs::remove_all(dir);
}

// A reply larger than the client takes (256 MiB; here a Content-Length that says so) ends the command
// with a message before any of it is read, and edit leaves the file alone.
TEST(ClientLimits, AReplyLargerThanTheClientTakesIsRefused) {
    const std::string dir = temp_dir("client-limits");
    write_file(dir + "/a.py", "x = 1\n");
    const RawReply huge{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 300000000\r\n\r\ndata: {}\n\n"};
    for (const std::string& cmd : {"complete " + dir + "/a.py:1:1", "edit " + dir + "/a.py 'rename x' --yes"}) {
        CannedHttpServer s(huge);
        auto r = run_flint(cmd + " --url " + s.url(), dir + "/err.txt");
        const std::string err = read_text(dir + "/err.txt");
        EXPECT_NE(r.exit_code, 0) << cmd;
        EXPECT_EQ(r.out, "") << cmd;
        EXPECT_NE(err.find("sent a reply of more than 268435456 bytes"), std::string::npos) << cmd << ": " << err;
    }
    EXPECT_EQ(read_text(dir + "/a.py"), "x = 1\n");
    EXPECT_FALSE(fs::exists(dir + "/a.py.orig"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace flint::test
