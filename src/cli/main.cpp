// flint — one binary, many subcommands. Errors from the library arrive as flint::Error and are
// printed as one line on stderr with exit code 1; usage errors exit with 2.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "util/error.h"

namespace flint::cli {

std::string default_model_path() {
    const char* candidates[] = {"../shared/models/stories260K.gguf", FLINT_SOURCE_DIR "/../shared/models/stories260K.gguf"};
    for (const char* c : candidates)
        if (std::filesystem::exists(c)) return std::filesystem::weakly_canonical(c).string();
    return candidates[0];
}

}  // namespace flint::cli

int main(int argc, char** argv) {
    CLI::App app{"flint — real-time coding with small, fast code models (GGUF, CPU).\n"
                 "Run `flint <command> --help` for a command's options."};
    app.require_subcommand(1);
    app.set_version_flag("--version", "flint 0.1.0");
    using namespace flint::cli;
    register_run(app);
    register_inspect(app);
    register_tokenize(app);
    register_quantize(app);
    register_mkmodel(app);
    register_serve(app);
    register_chat(app);
    register_edit(app);
    register_complete(app);
    CLI::App* bench = register_bench(app);
    register_bench_tokenize(*bench);
    register_bench_runtime(*bench);
    register_bench_edit(*bench);
    register_bench_latency(*bench);
    try {
        app.parse(argc, argv);
    } catch (const CLI::RuntimeError& e) {
        return e.get_exit_code();  // a command's own failure, already reported
    } catch (const CLI::Error& e) {
        return app.exit(e) == 0 ? 0 : 2;
    } catch (const flint::Error& e) {
        std::fprintf(stderr, "flint: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "flint: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
