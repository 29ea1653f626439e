// `flint serve` — the OpenAI-compatible server (Responses over HTTP/SSE/WebSocket, Chat Completions,
// Completions). Options map onto RuntimeConfig (engine) and ServerConfig (transport, auth, storage).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "server/model_registry.h"
#include "server/server.h"
#include "tensor/dtype.h"
#include "util/data_dir.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct ServeOptions {
    std::vector<std::string> models;
    server::ServerConfig server;
    RuntimeConfig runtime;
    std::string kv_memory;
    std::string kv_type = "f16";
    bool mmap = false;
    std::string decode_prefetch = "auto";
    std::string chat_format;
    std::string data_dir;
    std::string store;
    bool no_store = false;
    bool no_websocket = false;
    bool no_speculation = false;
    bool no_prompt_lookup = false;
    int ctx = 0;
};

// "4GiB", "512MiB", "1.5G", "1000000" → bytes.
int64_t parse_bytes(const std::string& s) {
    size_t pos = 0;
    double v = 0;
    try {
        v = std::stod(s, &pos);
    } catch (...) {
        fail("--kv-memory '", s, "': expected a size such as 4GiB or 512MiB");
    }
    std::string unit = s.substr(pos);
    double mult = 1;
    if (unit == "" || unit == "B") mult = 1;
    else if (unit == "K" || unit == "KiB" || unit == "k") mult = 1024.0;
    else if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
    else if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
    else if (unit == "KB") mult = 1e3;
    else if (unit == "MB") mult = 1e6;
    else if (unit == "GB") mult = 1e9;
    else fail("--kv-memory '", s, "': unknown unit '", unit, "' (KiB, MiB, GiB, KB, MB, GB)");
    if (!std::isfinite(v) || v < 0) fail("--kv-memory '", s, "': expected a size of 0 or more, such as 4GiB or 512MiB");
    const double bytes = v * mult;
    // Past 2^62 bytes (4 EiB) no machine has the memory, and the conversion to int64 would overflow.
    if (bytes >= std::ldexp(1.0, 62)) fail("--kv-memory '", s, "': more memory than any machine has");
    return static_cast<int64_t>(bytes);
}

void serve(ServeOptions& o) {
    if (!o.kv_memory.empty()) o.runtime.kv_memory_bytes = parse_bytes(o.kv_memory);
    auto dt = dtype_from_name(o.kv_type);
    if (!dt) fail("--kv-type '", o.kv_type, "': unknown type");
    o.runtime.kv_type = *dt;
    o.runtime.ctx = o.ctx;  // 0: the model's own (at most 4096), resolved per model
    o.runtime.speculative = !o.no_speculation;
    o.runtime.prompt_lookup = !o.no_prompt_lookup;
    if (o.models.empty()) {
        std::string def = default_model_path();
        if (!std::filesystem::exists(def)) fail("no model given and the default ", def, " is absent; pass -m name=path.gguf");
        o.models.push_back(def);
    }
    if (o.no_websocket) o.server.websocket = false;
    if (!o.no_store) o.server.store_path = !o.store.empty() ? o.store : (o.data_dir.empty() ? default_data_dir() : o.data_dir) + "/responses.db";
    apply_decode_prefetch(o.decode_prefetch);
    server::ModelRegistry registry;
    if (o.mmap) registry.set_residency(Residency::Map);
    for (const std::string& m : o.models) registry.load(server::parse_model_spec(m), o.runtime, o.chat_format, true);
    o.server.handle_signals = true;
    server::Server srv(o.server, registry);
    srv.start();
    std::printf("flint: listening on http://%s:%d\n", o.server.host.c_str(), srv.port());
    std::fflush(stdout);
    srv.run();
    std::fprintf(stderr, "flint: stopped\n");
}

}  // namespace

void register_serve(CLI::App& app) {
    auto o = std::make_shared<ServeOptions>();
    CLI::App* cmd = app.add_subcommand("serve", "Serve models over the OpenAI Responses / Chat Completions APIs (HTTP, SSE, WebSocket)");
    cmd->add_option("-m,--model", o->models, "Model to serve, as name=path.gguf or path.gguf (repeatable; default: stories260K)");
    cmd->add_option("--host", o->server.host, "Address to bind (default 127.0.0.1)");
    cmd->add_option("--port", o->server.port, "Port (default 8080; 0 picks a free one)")->check(CLI::Range(0, 65535));
    cmd->add_option("-t,--threads", o->runtime.threads, "Kernel threads per model (default: all cores)")->check(CLI::Range(0, 256));
    cmd->add_option("-c,--ctx", o->ctx, "Context length per sequence (default: the model's, at most 4096)")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--kv-memory", o->kv_memory, "KV cache pool size, e.g. 4GiB (default: max-running full contexts)");
    cmd->add_option("--kv-type", o->kv_type, "KV cache element type: f16 (default), f32, or q8_0 (half of f16's memory, for long contexts)")
        ->check(CLI::IsMember({"f32", "f16", "q8_0"}));
    cmd->add_flag("--mmap", o->mmap,
                  "Map the weights from the file (zero-copy, page cache shared with other processes serving or running "
                  "the same file) instead of reading them onto 2 MiB pages; decode is slower that way");
    add_decode_prefetch_option(*cmd, o->decode_prefetch);
    cmd->add_option("--max-running", o->runtime.max_running, "Sequences decoding at once per model")->check(CLI::Range(1, 4096));
    cmd->add_option("--max-queued", o->runtime.max_queued, "Waiting requests beyond this get 503")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--prefill-chunk", o->runtime.prefill_chunk, "Prompt tokens per engine step")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--background-step-ms", o->runtime.background_step_ms,
                    "While priority requests come, size flex prefill chunks so a step takes about this long (default 200; 0: off)")
        ->check(CLI::Range(0.0, 60000.0));
    cmd->add_flag("--no-prompt-lookup", o->no_prompt_lookup,
                  "Do not draft from n-gram matches in the prompt and output (predictions still speculate); lookup "
                  "is on by default and drafts less, down to a rare single token, where its drafts are rejected");
    cmd->add_flag("--no-speculation", o->no_speculation,
                  "Decode one token per step: no drafts from predictions or prompt lookup (the output is the same "
                  "either way; this only trades speed, e.g. for comparisons)");
    cmd->add_option("--max-draft", o->runtime.max_draft, "Most draft tokens verified in one step (default 16)")
        ->check(CLI::Range(1, 64));
    cmd->add_option("--chat-format", o->chat_format, "Chat format for models without a template: chatml, llama3, llama2, zephyr");
    cmd->add_option("--io-threads", o->server.io_threads, "Threads for sockets (default 2)")->check(CLI::Range(1, 256));
    cmd->add_option("--body-limit", o->server.body_limit, "Largest request body in bytes (default 8 MiB)")->check(CLI::Range(int64_t{1024}, int64_t{1} << 34));
    cmd->add_option("--idle-timeout", o->server.idle_timeout_s, "Seconds a keep-alive connection may idle (default 120)");
    cmd->add_option("--body-timeout", o->server.body_timeout_s, "Seconds to receive a request body (default 60)");
    cmd->add_option("--ws-max-age", o->server.ws_max_age_s, "WebSocket connection age limit in seconds (default 3600)");
    cmd->add_option("--fim-band-lines", o->server.fim_band_lines,
                    "Fill-in-the-middle on /v1/completions: the lines from the last multiple of N through the cursor's go "
                    "after <fim_middle>, so typing on reuses the cached suffix (default 8; 1: the cursor's line alone; "
                    "0: plain prefix-suffix-middle). A request's fim_band_lines overrides it")
        ->check(CLI::Range(0, 1 << 20));
    cmd->add_flag("--no-websocket", o->no_websocket, "Answer WebSocket upgrades with 426 (clients fall back to HTTP/SSE)");
    cmd->add_flag("--no-ws-direct", [o](int64_t) { o->server.ws_direct = false; },
                  "Write WebSocket events from the socket's thread only; by default the engine thread writes a "
                  "response's events itself while it serves no other sequence (fewer wake-ups per event)");
    cmd->add_option("--data-dir", o->data_dir, "Directory for flint's data (default $FLINT_DATA_DIR, $XDG_DATA_HOME/flint or ~/.local/share/flint)");
    cmd->add_option("--store", o->store, "SQLite file for stored responses (default <data-dir>/responses.db)");
    cmd->add_flag("--no-store", o->no_store, "Keep stored responses in memory only (lost at exit)");
    cmd->add_option("--api-key", o->server.api_keys, "API key clients must send as 'Authorization: Bearer' (repeatable)");
    cmd->add_option("--admin-key", o->server.admin_keys, "API key that may also change rate limits (repeatable)");
    cmd->add_option("--keys-file", o->server.keys_file, "Keys file: JSON {\"keys\":[{\"key\",\"models\",\"admin\"}]} or one key per line");
    cmd->add_option("--limits", o->server.limits_file, "Rate-limit config (JSON); reloaded on SIGHUP");
    cmd->add_option("--models-dir", o->server.models_dir,
                    "Directory POST /v1/models may load from (admin key; default: any path the server can read)");
    cmd->callback([o] { serve(*o); });
}

}  // namespace flint::cli
