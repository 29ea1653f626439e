// `flint chat` — an interactive REPL against `flint serve` over one persistent WebSocket (src/client/chat.h).
#include "cli/commands.h"
#include "client/chat.h"
#include "util/data_dir.h"

namespace flint::cli {

void register_chat(CLI::App& app) {
    auto o = std::make_shared<client::ChatOptions>();
    auto code = std::make_shared<int>(0);
    CLI::App* cmd = app.add_subcommand("chat", "Chat with a running `flint serve` over one persistent WebSocket (Ctrl-C interrupts, Ctrl-D exits)");
    cmd->add_option("--url", o->url, "Responses WebSocket URL (default ws://127.0.0.1:8080/v1/responses)");
    cmd->add_option("--model", o->model, "Model name (default: the server's only model)");
    cmd->add_option("--api-key", o->api_key, "API key (default: $FLINT_API_KEY)");
    cmd->add_option("--system", o->system, "System instructions");
    cmd->add_option("-n,--max-tokens", o->max_output_tokens, "Most tokens per answer (default: the server's budget)")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--temp", o->temperature, "Sampling temperature (default: the server's)")->check(CLI::Range(0.0, 2.0));
    cmd->add_flag("!--no-stats", o->stats, "No status line after each answer");
    cmd->add_flag("!--no-warmup", o->warmup, "Send /file attachments with the next message instead of having the server read them as soon as they are attached (a generate:false warm-up)");
    auto history = std::make_shared<std::string>();
    auto no_history = std::make_shared<bool>(false);
    CLI::Option* history_opt = cmd->add_option("--history", *history, "File that keeps the lines you type between sessions (default <data-dir>/chat_history: $FLINT_DATA_DIR, $XDG_DATA_HOME/flint or ~/.local/share/flint)");
    cmd->add_flag("--no-history", *no_history, "Keep no history file (the session still has its own history)")->excludes(history_opt);
    cmd->callback([o, code, history, no_history] {
        o->history_file = *no_history ? "" : !history->empty() ? *history : default_data_dir() + "/chat_history";
        *code = client::run_chat(*o);
        if (*code != 0) throw CLI::RuntimeError(*code);
    });
}

}  // namespace flint::cli
