// flint/cli/commands.h — each subcommand registers itself on the top-level CLI11 app.
// One file per subcommand (cmd_<name>.cpp); main.cpp calls every register function below.
#pragma once
#include <CLI/CLI.hpp>

namespace flint::cli {

void register_inspect(CLI::App& app);   // cmd_inspect.cpp
void register_tokenize(CLI::App& app);  // cmd_tokenize.cpp
CLI::App* register_bench(CLI::App& app);  // cmd_bench.cpp (returns the bench command for its sub-benchmarks)
void register_bench_tokenize(CLI::App& bench);  // bench_tokenize.cpp
void register_bench_runtime(CLI::App& bench);   // bench_runtime.cpp
void register_bench_edit(CLI::App& bench);      // bench_edit.cpp
void register_run(CLI::App& app);       // cmd_run.cpp
void register_quantize(CLI::App& app);  // cmd_quantize.cpp
void register_mkmodel(CLI::App& app);   // cmd_mkmodel.cpp
void register_serve(CLI::App& app);     // cmd_serve.cpp
void register_chat(CLI::App& app);      // cmd_chat.cpp
void register_edit(CLI::App& app);      // cmd_edit.cpp
void register_complete(CLI::App& app);  // cmd_complete.cpp
void register_bench_latency(CLI::App& bench);   // bench_latency.cpp

// --timeout on the client commands that talk HTTP (edit, complete): the longest the server may stay silent.
inline void add_timeout_option(CLI::App* cmd, double& seconds) {
    cmd->add_option("--timeout", seconds, "Seconds the server may stay silent (a long prompt's prefill, a stall) before giving up (default 300; at most a day)")
        ->check(CLI::Range(0.001, 86400.0));
}

// The model flint uses when none is given: ../shared/models/stories260K.gguf next to the source tree,
// or beside the working directory.
std::string default_model_path();

}  // namespace flint::cli
