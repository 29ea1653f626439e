// flint chat against a real `flint serve`: through a pseudo-terminal as a person uses it (streaming,
// Ctrl-C / Esc interrupt, redirect from the partial answer, reconnect after the server closes the socket)
// and through pipes as a script uses it.
#include <gtest/gtest.h>

#include "client/client_test_util.h"
#include "client/scripted_peers.h"

namespace flint::test {
namespace {

// No history file unless a test names one: the tests must not write to the home of whoever runs them.
std::string chat_cmd(const ServeProcess& s, const std::string& extra) {
    const bool own_history = extra.find("--history") != std::string::npos;
    return std::string(FLINT_BINARY) + " chat --url " + s.ws_url() + (own_history ? " " : " --no-history ") + extra;
}

class ChatTest : public SharedServeSuite<ChatTest> {
public:
    static std::vector<std::string> required() { return {"models/stories260K.gguf", "models/tiny-qwen2-f32.gguf"}; }
    // The random-weight qwen2 model never says EOS, and its 152k-entry vocabulary makes it slow enough
    // (~400 tok/s here) that its answer is still streaming when the test interrupts it, even on a
    // loaded machine. (stories260K ends its story within ~40 ms; the code model's loops are drafted
    // by prompt lookup at thousands of tokens per second.)
    static std::string serve_args() {
        return "-m stories=" + shared_path("models/stories260K.gguf") + " -m qwen=" + shared_path("models/tiny-qwen2-f32.gguf");
    }
};

TEST_F(ChatTest, StreamsAnAnswerAndChainsTheNextTurnOnTheCachedPrefix) {
    Pty p(chat_cmd(*server_, "--model stories -n 24 --temp 0"));
    ASSERT_NE(p.wait_for("> "), std::string::npos) << p.out();
    p.type("Once upon a time\r");
    size_t s1 = p.wait_for("[ttft");
    ASSERT_NE(s1, std::string::npos) << p.out();
    p.type("The little dog\r");
    size_t s2 = p.wait_for("[ttft", s1 + 1);
    ASSERT_NE(s2, std::string::npos) << p.out();
    p.wait_for("> ", s2);
    auto cached = cached_counts(p.out());
    ASSERT_EQ(cached.size(), 2u) << p.out();
    EXPECT_GT(cached[1], 0) << "the second turn should reuse the first turn's KV\n" << p.out();
    // The answer streamed: text between the typed line and the status line.
    const size_t typed = p.out().find("Once upon a time");
    EXPECT_GT(s1 - typed, std::string("Once upon a time\r\n").size() + 5) << p.out();
    p.type("\x04");  // Ctrl-D exits
    EXPECT_EQ(p.wait_exit(), 0) << p.out();
}

TEST_F(ChatTest, CtrlCInterruptsKeepsThePartialAnswerAndTheNextLineContinuesFromIt) {
    Pty p(chat_cmd(*server_, "--model qwen -n 1500"));
    ASSERT_NE(p.wait_for("> "), std::string::npos) << p.out();
    p.type("Once upon a time\r");
    const size_t echo = p.wait_for("\r\n", p.wait_for("Once upon a time"));
    ASSERT_NE(echo, std::string::npos) << p.out();
    // Interrupt as soon as the answer starts to stream.
    p.wait_size(echo + 20);
    p.type("\x03");
    const size_t note = p.wait_for("(interrupted");
    ASSERT_NE(note, std::string::npos) << "the answer was not interrupted (did it finish first?)\n" << p.out();
    const std::string partial = p.out().substr(echo + 2, note - echo - 2);
    EXPECT_GT(partial.size(), 2u) << "the partial answer stays on screen";
    ASSERT_NE(p.wait_for("> ", note), std::string::npos);
    p.type("Then the dog said\r");
    const size_t typed = p.wait_for("\r\n", p.wait_for("Then the dog said", note));
    ASSERT_NE(typed, std::string::npos) << p.out().substr(note);
    p.wait_size(typed + 20);
    p.type("\x03");  // this answer is long too: its status line (with cached tokens) follows the interrupt
    const size_t s2 = p.wait_for("[ttft", typed);
    ASSERT_NE(s2, std::string::npos) << p.out().substr(note);
    auto cached = cached_counts(p.out());
    ASSERT_GE(cached.size(), 2u) << p.out();
    // The redirect continues on the cancelled response's KV: its prompt and the partial output.
    EXPECT_GT(cached.back(), 4) << p.out();
    const size_t prompt = p.wait_for("> ", s2);
    p.type("half a line\x03");  // Ctrl-C on a line being typed drops it; the chat goes on
    ASSERT_NE(p.wait_for("> ", p.wait_for("^C", p.wait_for("> half a line", prompt))), std::string::npos) << p.out().substr(prompt);
    p.type("\x03");  // Ctrl-C at an empty prompt exits
    EXPECT_EQ(p.wait_exit(), 0) << p.out();
}

TEST_F(ChatTest, EscInterruptsToo) {
    Pty p(chat_cmd(*server_, "--model qwen -n 1500"));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("Once upon a time\r");
    const size_t echo = p.wait_for("\r\n", p.wait_for("Once upon a time"));
    ASSERT_NE(echo, std::string::npos) << p.out();
    p.wait_size(echo + 20);
    p.type("\x1b");
    EXPECT_NE(p.wait_for("(interrupted"), std::string::npos) << p.out();
    p.wait_for("> ", echo + 20);
    p.type("\x04");
    EXPECT_EQ(p.wait_exit(), 0);
}

TEST_F(ChatTest, CommandsAndAttachedFiles) {
    const std::string dir = temp_dir("chat-file");
    write_file(dir + "/notes.txt", "Lily had a red ball.\n");
    Pty p(chat_cmd(*server_, "--model stories -n 8 --temp 0"));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("/help\r");
    EXPECT_NE(p.wait_for("/file PATH"), std::string::npos) << p.out();
    p.type("/file " + dir + "/notes.txt\r");
    EXPECT_NE(p.wait_for("attached"), std::string::npos) << p.out();
    p.type("/file " + dir + "/missing.txt\r");
    EXPECT_NE(p.wait_for("no such file"), std::string::npos) << p.out();
    p.type("What did Lily have?\r");
    const size_t s1 = p.wait_for("[ttft");
    ASSERT_NE(s1, std::string::npos) << p.out();
    // The attached file went into the prompt: more input tokens than the question alone.
    const size_t slash = p.out().find('/', p.out().find("cached ", s1));
    EXPECT_GT(std::atoi(p.out().c_str() + slash + 1), 12) << p.out();
    p.type("/model\r");
    EXPECT_NE(p.wait_for("model:"), std::string::npos);
    p.type("/reset\r");
    EXPECT_NE(p.wait_for("new conversation"), std::string::npos);
    p.type("/bogus\r");
    EXPECT_NE(p.wait_for("unknown command"), std::string::npos) << p.out();
    // Pasted text of several lines is a message even when it starts with '/' (code, a path).
    const size_t pasted = p.out().size();
    p.type("\x1b[200~/* Lily */\rWhat did she have?\x1b[201~\r");
    EXPECT_NE(p.wait_for("[ttft", pasted), std::string::npos) << p.out().substr(pasted);
    EXPECT_EQ(p.out().find("unknown command", pasted), std::string::npos) << p.out().substr(pasted);
    p.type("/quit\r");
    EXPECT_EQ(p.wait_exit(), 0);
    std::filesystem::remove_all(dir);
}

TEST_F(ChatTest, FilePathsTakeATildeForHomeAndQuotesAroundSpaces) {
    const std::string dir = temp_dir("chat-home");
    write_file(dir + "/notes.txt", "Lily had a red ball.\n");
    write_file(dir + "/my notes.txt", "Tom had a blue kite.\n");
    Pty p("env HOME=" + dir + " " + chat_cmd(*server_, "--model stories -n 4 --temp 0 --no-warmup"));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("/file ~/notes.txt\r");
    EXPECT_NE(p.wait_for("attached ~/notes.txt (21 bytes)"), std::string::npos) << p.out();
    p.type("/file \"" + dir + "/my notes.txt\"\r");
    EXPECT_NE(p.wait_for("attached \"" + dir + "/my notes.txt\" (21 bytes)"), std::string::npos) << p.out();
    p.type("/file ~/missing.txt\r");
    EXPECT_NE(p.wait_for(dir + "/missing.txt: no such file"), std::string::npos) << p.out();
    p.type("/file '~/notes.txt'\r");  // quoted, as in a shell: no home
    EXPECT_NE(p.wait_for("~/notes.txt: no such file"), std::string::npos) << p.out();
    p.type("\x04");
    EXPECT_EQ(p.wait_exit(), 0);
    std::filesystem::remove_all(dir);
}

TEST_F(ChatTest, TheHistoryFileKeepsLinesBetweenSessions) {
    const std::string dir = temp_dir("chat-history");
    const std::string file = dir + "/history";
    {
        Pty p(chat_cmd(*server_, "--model stories -n 4 --temp 0 --history " + file));
        ASSERT_NE(p.wait_for("> "), std::string::npos);
        p.type("Once upon a time\r");
        ASSERT_NE(p.wait_for("[ttft"), std::string::npos) << p.out();
        // A line dropped with Ctrl-C is not kept, and the chat goes on (Ctrl-C exits at an empty prompt only).
        p.type("\x1b[200~/help me\rwith this\x1b[201~\x03");
        ASSERT_NE(p.wait_for("> ", p.wait_for("^C")), std::string::npos) << p.out();
        p.type("/help\r");
        ASSERT_NE(p.wait_for("/file PATH"), std::string::npos);
        p.type("\x04");
        EXPECT_EQ(p.wait_exit(), 0);
    }
    EXPECT_EQ(read_text(file), "Once upon a time\n/help\n");
    Pty p(chat_cmd(*server_, "--model stories -n 4 --temp 0 --history " + file));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("\x1b[A\x1b[A\r");  // the line before last, from the last session
    EXPECT_NE(p.wait_for("> Once upon a time"), std::string::npos) << p.out();
    EXPECT_NE(p.wait_for("[ttft"), std::string::npos) << p.out();
    p.type("\x04");
    EXPECT_EQ(p.wait_exit(), 0);
    EXPECT_EQ(read_text(file), "Once upon a time\n/help\nOnce upon a time\n");
    // --no-history (what chat_cmd passes otherwise) reads and writes none.
    Pty q(chat_cmd(*server_, "--model stories -n 4 --temp 0"));
    ASSERT_NE(q.wait_for("> "), std::string::npos);
    q.type("\x1b[A");
    q.type("x\r");
    EXPECT_NE(q.wait_for("[ttft"), std::string::npos) << q.out();
    EXPECT_EQ(q.out().find("> Once"), std::string::npos) << q.out();
    q.type("\x04");
    EXPECT_EQ(q.wait_exit(), 0);
    EXPECT_EQ(read_text(file), "Once upon a time\n/help\nOnce upon a time\n");
    std::filesystem::remove_all(dir);
}

TEST_F(ChatTest, TabCompletesCommandsAndFilePaths) {
    const std::string dir = temp_dir("chat-tab");
    write_file(dir + "/notes.txt", "Lily had a red ball.\n");
    write_file(dir + "/other.txt", "Tom had a kite.\n");
    Pty p(chat_cmd(*server_, "--model stories -n 4 --temp 0 --no-warmup"));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("/\t");  // every command, listed under the line, and the line drawn again
    const size_t listed = p.wait_for("/quit");
    ASSERT_NE(listed, std::string::npos) << p.out();
    EXPECT_NE(p.out().find("/model", p.out().rfind("\n", listed)), std::string::npos) << p.out();
    EXPECT_NE(p.wait_for("\r> /\x1b[K", listed), std::string::npos) << p.out();
    p.type("fi\t" + dir + "/no\t");
    EXPECT_NE(p.wait_for("\r> /file " + dir + "/notes.txt \x1b[K"), std::string::npos) << p.out();
    p.type("\r");
    EXPECT_NE(p.wait_for("attached " + dir + "/notes.txt (21 bytes)"), std::string::npos) << p.out();
    p.type("Once\tupon\r");  // not a command: Tab is a tab (drawn as a space)
    EXPECT_NE(p.wait_for("[ttft"), std::string::npos) << p.out();
    p.type("\x04");
    EXPECT_EQ(p.wait_exit(), 0);
    std::filesystem::remove_all(dir);
}

TEST(ChatReconnect, ReopensTheSocketWithTheWholeConversationWhenTheServerClosesIt) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    ServeProcess s("--ws-max-age 2");
    ASSERT_GT(s.port(), 0);
    Pty p(chat_cmd(s, "-n 16 --temp 0"));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("Once upon a time\r");
    const size_t s1 = p.wait_for("[ttft");
    ASSERT_NE(s1, std::string::npos) << p.out();
    std::this_thread::sleep_for(std::chrono::milliseconds(2600));  // past the server's connection age limit
    p.type("The cat\r");
    const size_t re = p.wait_for("reconnected", s1);
    ASSERT_NE(re, std::string::npos) << p.out();
    const size_t s2 = p.wait_for("[ttft", re);
    ASSERT_NE(s2, std::string::npos) << p.out();
    // The whole conversation was resent: the prompt holds turn 1 (cached from the prefix cache) and more.
    auto cached = cached_counts(p.out());
    ASSERT_EQ(cached.size(), 2u);
    EXPECT_GT(cached[1], 0) << p.out();
    p.type("\x04");
    EXPECT_EQ(p.wait_exit(), 0);
}

// A session idle at the prompt for longer than the server's idle timeout stays open: the prompt serves the
// socket, so the server's keep-alive pings are answered, and the next turn is chained on the same connection.
TEST(ChatIdle, AnIdlePromptAnswersThePingsAndKeepsTheConnection) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    ServeProcess s("--idle-timeout 1");
    ASSERT_GT(s.port(), 0);
    Pty p(chat_cmd(s, "-n 16 --temp 0"));
    ASSERT_NE(p.wait_for("> "), std::string::npos);
    p.type("Once upon a time\r");
    const size_t s1 = p.wait_for("[ttft");
    ASSERT_NE(s1, std::string::npos) << p.out();
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));  // three idle timeouts at the prompt
    p.type("The cat\r");
    const size_t s2 = p.wait_for("[ttft", s1 + 1);
    ASSERT_NE(s2, std::string::npos) << p.out();
    EXPECT_EQ(p.out().find("reconnected"), std::string::npos) << p.out();
    EXPECT_EQ(p.out().find("connection lost"), std::string::npos) << p.out();
    auto cached = cached_counts(p.out());
    ASSERT_EQ(cached.size(), 2u) << p.out();
    EXPECT_GT(cached[1], 0) << p.out();
    p.type("\x04");
    EXPECT_EQ(p.wait_exit(), 0);
}

TEST_F(ChatTest, PipesGetPlainTextAndNoEscapeCodes) {
    const std::string dir = temp_dir("chat-pipe");
    const std::string err = dir + "/err.txt";
    write_file(dir + "/in.txt", "Once upon a time\nThe dog\n");
    auto r = run_flint("chat --url " + server_->ws_url() + " --model stories -n 12 --temp 0 <" + dir + "/in.txt", err);
    const std::string e = read_text(err);
    EXPECT_EQ(r.exit_code, 0) << e;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
    EXPECT_EQ(e.find('\x1b'), std::string::npos);
    EXPECT_EQ(cached_counts(e).size(), 2u) << e;
    EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
    std::filesystem::remove_all(dir);
}

// /file sends the attachment as a generate:false warm-up: by the time the question goes out the server
// has the file in this connection's KV, so the question's prompt is almost all cached. With --no-warmup
// the file goes with the question and nothing of it is cached (its text is new to the server).
TEST_F(ChatTest, AttachedFilesArePrefilledBeforeTheQuestion) {
    const std::string dir = temp_dir("chat-warm");
    for (const char* variant : {"warm", "cold"}) {
        std::string story;
        for (int i = 0; i < 30; ++i)
            story += std::string("Lily the ") + variant + " cat found " + std::to_string(i * 7 + 3) + " red balls in the garden.\n";
        const std::string file = dir + "/" + variant + ".txt";  // the paths share only the directory's prefix
        write_file(file, story);
        write_file(dir + "/in.txt", "/file " + file + "\nWhat did Lily find?\n");
        const std::string err = dir + "/err.txt";
        const bool warm = std::string(variant) == "warm";
        auto r = run_flint("chat --url " + server_->ws_url() + " --model stories -n 8 --temp 0" + (warm ? "" : " --no-warmup") + " <" +
                           dir + "/in.txt", err);
        const std::string e = read_text(err);
        ASSERT_EQ(r.exit_code, 0) << e;
        EXPECT_NE(e.find(warm ? "reading it while you type" : "to the next message"), std::string::npos) << e;
        auto cached = cached_counts(e);
        ASSERT_EQ(cached.size(), 1u) << e;
        const size_t slash = e.find('/', e.find("cached "));
        const int input = std::atoi(e.c_str() + slash + 1);
        EXPECT_GT(input, 300) << e;  // the file is in the prompt either way
        if (warm) EXPECT_GT(cached[0], input - 30) << "only the question should be left to prefill\n" << e;
        else EXPECT_LT(cached[0], 60) << e;  // at most the path's directory, from the warm run
    }
    std::filesystem::remove_all(dir);
}

// A warm-up the server refuses (the file is longer than the context) is reported; the file then goes with
// the question, which the server refuses too, and the chat goes on: the next message is answered.
TEST_F(ChatTest, ARefusedWarmUpIsReportedAndTheChatGoesOn) {
    const std::string dir = temp_dir("chat-warm-refused");
    std::string story;
    for (int i = 0; i < 400; ++i) story += "Tom and Lily played with " + std::to_string(i) + " toys in the big park.\n";
    write_file(dir + "/long.txt", story);
    write_file(dir + "/in.txt", "/file " + dir + "/long.txt\nWhat did they play with?\nOnce upon a time\n");
    const std::string err = dir + "/err.txt";
    auto r = run_flint("chat --url " + server_->ws_url() + " --model stories -n 8 --temp 0 <" + dir + "/in.txt", err);
    const std::string e = read_text(err);
    EXPECT_EQ(r.exit_code, 0) << e;
    const size_t refused = e.find("(the server did not read the attachment ahead");
    ASSERT_NE(refused, std::string::npos) << e;
    EXPECT_NE(e.find("context", refused), std::string::npos) << "the reason is shown\n" << e;
    const size_t error = e.find("error:", refused);
    ASSERT_NE(error, std::string::npos) << "the question with the file is refused too\n" << e;
    EXPECT_EQ(cached_counts(e.substr(error)).size(), 1u) << "the next message is answered\n" << e;
    std::filesystem::remove_all(dir);
}

// Frames a server sends between turns are read at the next prompt (for the age-limit notice). Ones of any
// other shape — a type that is not a string, not an object, not JSON — are passed over, and the chat goes on.
TEST(ChatErrors, StrayFramesOfAnyShapeBetweenTurnsAreIgnored) {
    const std::string dir = temp_dir("chat-stray");
    write_file(dir + "/in.txt", "one\ntwo\n");
    std::string second_request;
    CommandResult r;
    {
        WsPeer peer([&](PeerSocket& ws) {
            auto answer = [&](const std::string& id, const std::string& text) {
                boost::beast::flat_buffer buf;
                ws.read(buf);
                const std::string req = boost::beast::buffers_to_string(buf.data());
                ws.text(true);
                for (const std::string& ev :
                     {R"({"type":"response.created","response":{"id":")" + id + R"(","status":"in_progress"}})",
                      R"({"type":"response.output_text.delta","delta":")" + text + R"("})",
                      R"({"type":"response.completed","response":{"id":")" + id + R"(","status":"completed"}})"})
                    ws.write(boost::asio::buffer(ev));
                return req;
            };
            answer("resp_1", "hi");
            // Sent with the first answer's last frame, so they wait in the socket for the next prompt.
            for (const std::string stray : {R"({"type":5})", R"({"type":null,"error":1})", "[1,2]", "\"error\"", "not json"})
                ws.write(boost::asio::buffer(stray));
            second_request = answer("resp_2", "there");
            boost::beast::flat_buffer buf;
            ws.read(buf);  // until the client closes (the peer ends on the exception)
        });
        r = run_flint("chat --url ws://127.0.0.1:" + std::to_string(peer.port()) + "/v1/responses <" + dir + "/in.txt",
                      dir + "/err.txt");
    }  // the peer's thread has ended: second_request can be read
    const std::string err = read_text(dir + "/err.txt");
    EXPECT_EQ(r.exit_code, 0) << err;
    EXPECT_NE(r.out.find("hi"), std::string::npos) << r.out << err;
    EXPECT_NE(r.out.find("there"), std::string::npos) << r.out << err;
    EXPECT_NE(second_request.find(R"("previous_response_id":"resp_1")"), std::string::npos) << second_request;
    std::filesystem::remove_all(dir);
}

TEST(ChatErrors, ServerDownAndWrongKeyExitNonZeroWithAMessage) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string dir = temp_dir("chat-err");
    auto r = run_flint("chat --url ws://127.0.0.1:1/v1/responses </dev/null", dir + "/e1");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(dir + "/e1").find("cannot connect"), std::string::npos) << read_text(dir + "/e1");
    ServeProcess s("--api-key right-key");
    ASSERT_GT(s.port(), 0);
    r = run_flint("chat --url " + s.ws_url() + " --api-key wrong-key </dev/null", dir + "/e2");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(dir + "/e2").find("401"), std::string::npos) << read_text(dir + "/e2");
    write_file(dir + "/in.txt", "Hello\n");
    r = run_flint("chat --url " + s.ws_url() + " --api-key right-key -n 4 <" + dir + "/in.txt", dir + "/e3");
    EXPECT_EQ(r.exit_code, 0) << read_text(dir + "/e3");
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flint::test
