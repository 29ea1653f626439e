// `flint serve`'s own option values: a size or a type it cannot use ends the command at once with a
// message naming the option, before any model is loaded or port opened.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli/cli_test_util.h"

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

}  // namespace
}  // namespace flint::test
