// `flint serve`'s own option values: a size or a type it cannot use ends the command at once with a
// message naming the option, before any model is loaded or port opened; and where it keeps its stored
// responses when no option says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_test_util.h"
#include "test_paths.h"

namespace flint::test {
namespace {

TEST(ServeOptions, AKvMemorySizeThatIsNotOneIsRefusedNamingIt) {
    const std::string err = (std::filesystem::temp_directory_path() / ("flint-serveopt-" + std::to_string(::getpid()) + ".txt")).string();
    const std::pair<const char*, const char*> cases[] = {
        {"abc", "expected a size such as 4GiB"},
        {"4 GiB", "unknown unit ' GiB'"},
        {"4TiB", "unknown unit 'TiB'"},
        {"-1G", "expected a size of 0 or more"},
        {"nan", "expected a size of 0 or more"},
        {"inf", "expected a size of 0 or more"},
        {"1e30G", "more memory than any machine has"},
    };
    for (const auto& [value, why] : cases) {
        SCOPED_TRACE(value);
        // An absent model: were the value accepted, loading it would fail (another message) rather than serve.
        CommandResult r = run_flint(std::string("serve --port 0 --no-store -m m=/nonexistent/none.gguf --kv-memory ") + shell_quote(value), err);
        EXPECT_NE(r.exit_code, 0);
        const std::string msg = read_text(err);
        EXPECT_NE(msg.find(std::string("--kv-memory '") + value + "'"), std::string::npos) << msg;
        EXPECT_NE(msg.find(why), std::string::npos) << msg;
    }
    CommandResult r = run_flint("serve --port 0 --no-store -m m=/nonexistent/none.gguf --kv-type q3", err);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(read_text(err).find("--kv-type"), std::string::npos) << read_text(err);
    std::filesystem::remove(err);
}

// Starts `flint serve` in `dir` with the environment changed by `env` (an `env` command's arguments) and
// `args`, stops it once it listens (or exits), and returns what it wrote to stderr.
std::string serve_once(const TempDir& dir, const std::string& env, const std::string& args) {
    const std::string out = dir.file("serve.out"), err = dir.file("serve.err");
    // The background command truncates these only when it starts: a previous run's "listening" must not be seen.
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    const std::string cmd = "cd " + shell_quote(dir.path.string()) + " && env -u FLINT_DATA_DIR -u XDG_DATA_HOME " + env + " " +
                            std::string(FLINT_BINARY) + " serve --port 0 -m " + shell_quote(shared_path("models/stories260K.gguf")) + " " +
                            args + " >" + shell_quote(out) + " 2>" + shell_quote(err) +
                            " & p=$!; i=0; while [ $i -lt 400 ] && kill -0 $p 2>/dev/null && ! grep -q listening " + shell_quote(out) +
                            "; do sleep 0.05; i=$((i+1)); done; kill $p 2>/dev/null; wait $p";
    EXPECT_NE(std::system(cmd.c_str()), -1);
    return read_text(err);
}

TEST(ServeOptions, StoredResponsesGoToTheDataDirectoryTheEnvironmentNames) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir t("flint-datadir");
    namespace fs = std::filesystem;
    const std::string home = t.file("home"), xdg = t.file("xdg"), own = t.file("own");
    struct Case {
        std::string env, args, db;
    };
    const Case cases[] = {
        {"HOME=" + shell_quote(home), "", home + "/.local/share/flint/responses.db"},
        {"HOME=" + shell_quote(home) + " XDG_DATA_HOME=" + shell_quote(xdg), "", xdg + "/flint/responses.db"},
        {"HOME=" + shell_quote(home) + " XDG_DATA_HOME=" + shell_quote(xdg) + " FLINT_DATA_DIR=" + shell_quote(own), "", own + "/responses.db"},
        {"FLINT_DATA_DIR=" + shell_quote(own), "--data-dir " + shell_quote(t.file("flag")), t.file("flag") + "/responses.db"},
        {"FLINT_DATA_DIR=" + shell_quote(own), "--store " + shell_quote(t.file("one/file.db")), t.file("one/file.db")},
        {"-u HOME", "", t.file(".flint/responses.db")},  // no HOME at all: beside where it runs
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.env + " " + c.args);
        for (const char* d : {"home", "xdg", "own", "flag", "one", ".flint"}) fs::remove_all(t.path / d);
        const std::string err = serve_once(t, c.env, c.args);
        EXPECT_TRUE(fs::is_regular_file(c.db)) << err;
        for (const char* d : {"home", "xdg", "own", "flag", "one", ".flint"}) {
            if (c.db.rfind((t.path / d).string() + "/", 0) != 0) EXPECT_FALSE(fs::exists(t.path / d)) << d << " was created too";
        }
    }
    // --no-store: no database anywhere.
    for (const char* d : {"home", "xdg", "own", "flag", "one", ".flint"}) fs::remove_all(t.path / d);
    serve_once(t, "HOME=" + shell_quote(home), "--no-store");
    EXPECT_FALSE(fs::exists(home + "/.local/share/flint"));
}

TEST(ServeOptions, AStoreThatCannotBeOpenedStopsTheStartSayingWhy) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TempDir t("flint-datadir-bad");
    std::ofstream(t.file("plain-file")) << "not a directory, nor a database\n";
    const std::pair<std::string, std::string> cases[] = {
        {"--data-dir " + shell_quote(t.file("plain-file/flint")),
         "response store " + t.file("plain-file/flint/responses.db") + ": cannot create the directory " + t.file("plain-file/flint") +
             ": Not a directory"},
        {"--store " + shell_quote(t.file("plain-file")), "response store " + t.file("plain-file") + ": file is not a database"},
        {"--store " + shell_quote(t.path.string()), "response store " + t.path.string() + ": is a directory, not a database file"},
    };
    for (const auto& [args, message] : cases) {
        SCOPED_TRACE(args);
        const std::string err = serve_once(t, "", args);
        EXPECT_NE(err.find(message), std::string::npos) << err;
        EXPECT_EQ(read_text(t.file("serve.out")).find("listening"), std::string::npos);
    }
    EXPECT_EQ(read_text(t.file("plain-file")), "not a directory, nor a database\n");  // left as it was
}

}  // namespace
}  // namespace flint::test
