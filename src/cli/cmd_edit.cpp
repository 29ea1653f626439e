// `flint edit FILE "instruction"` — the coding loop's edit step against a running `flint serve`: the file
// and the instruction go out with the file as the `prediction` (so unchanged stretches are accepted
// drafts, not generated), the new version streams back, a unified diff is shown, and the file is written
// only after confirmation (FILE.orig keeps the original). The file is never touched on any failure.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "client/diff.h"
#include "client/files.h"
#include "client/responses_http.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct EditOptions {
    std::string file, instruction;
    std::string url = "http://127.0.0.1:8080";
    std::string model, api_key;
    bool yes = false, no_backup = false, quiet = false;
    std::string test;
    int max_tokens = 0;
    size_t max_bytes = 1 << 20;
    double timeout = client::HttpClient::kDefaultIdleTimeout;
};

constexpr const char* kInstructions =
    "You edit source files. Apply the user's instruction to the file and reply with the complete new file "
    "only: no explanations, no code fences.";

// Models often wrap the file in a code fence anyway; take what is inside.
std::string strip_fences(const std::string& s) {
    size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos || s.compare(a, 3, "```") != 0) return s;
    size_t body = s.find('\n', a);
    if (body == std::string::npos) return s;
    size_t close = s.rfind("```");
    if (close == std::string::npos || close <= body) return s.substr(body + 1);
    return s.substr(body + 1, close - body - 1);
}

bool confirm(const std::string& file) {
    std::fprintf(stderr, "Write the changes to %s? [y/N] ", file.c_str());
    std::fflush(stderr);
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    return answer == "y" || answer == "Y" || answer == "yes" || answer == "Yes";
}

int edit(const EditOptions& o) {
    namespace fs = std::filesystem;
    using namespace client;
    const TextFile original = read_text_file(o.file, o.max_bytes);
    std::string key = o.api_key;
    if (key.empty())
        if (const char* k = std::getenv("FLINT_API_KEY")) key = k;
    HttpClient http(parse_url(o.url), true, o.timeout);
    json body = {{"input", json::array({message_item("user", "File " + fs::path(o.file).filename().string() + ":\n```\n" +
                                                                 original.text + "```\n\nInstruction: " + o.instruction)})},
                 {"instructions", kInstructions},
                 {"prediction", {{"type", "content"}, {"content", original.text}}},
                 {"temperature", 0},
                 {"store", false}};
    if (!o.model.empty()) body["model"] = o.model;
    if (o.max_tokens > 0) body["max_output_tokens"] = o.max_tokens;
    const bool show = !o.quiet;
    SseTurn r = post_response_stream(http, "/v1/responses", body, auth_headers(key), [&](std::string_view d) {
        if (!show) return;
        std::fwrite(d.data(), 1, d.size(), stderr);
        std::fflush(stderr);
    });
    if (show && !r.turn.text.empty() && r.turn.text.back() != '\n') std::fputc('\n', stderr);
    if (r.status != 200) fail(describe_failure(r.status, r.error));
    if (!r.turn.finished) fail("the server closed the stream before the answer was complete; ", o.file, " is unchanged");
    if (r.turn.status == "failed" || r.turn.status == "error")
        fail("the server could not make the edit: ", r.turn.error_message.empty() ? r.turn.error_code : r.turn.error_message);
    std::fprintf(stderr, "[%d tokens in %.0f ms · prediction accepted %d, rejected %d · cached %d]\n", r.turn.output_tokens,
                 r.turn.total_ms(), r.turn.accepted_prediction_tokens, r.turn.rejected_prediction_tokens, r.turn.cached_tokens);
    if (r.turn.status == "incomplete")
        std::fprintf(stderr, "flint edit: warning: the answer was cut off at the token limit; the new version may be truncated\n");
    const std::string updated = strip_fences(r.turn.text);
    const bool rel = fs::path(o.file).is_relative();
    const std::string diff = unified_diff(rel ? "a/" + o.file : o.file, rel ? "b/" + o.file : o.file, original.text, updated);
    if (diff.empty()) {
        std::printf("no changes to %s\n", o.file.c_str());
        return 0;
    }
    std::fwrite(diff.data(), 1, diff.size(), stdout);
    std::fflush(stdout);
    if (!o.yes && !confirm(o.file)) {
        std::fprintf(stderr, "not written; %s is unchanged\n", o.file.c_str());
        return 0;
    }
    if (!o.no_backup) {
        std::error_code ec;
        fs::copy_file(o.file, o.file + ".orig", fs::copy_options::overwrite_existing, ec);
        if (ec) fail("cannot keep a backup as ", o.file, ".orig: ", ec.message(), "; ", o.file, " is unchanged");
    }
    write_text_file(o.file, updated);
    std::fprintf(stderr, "wrote %s%s\n", o.file.c_str(), o.no_backup ? "" : (" (the original is " + o.file + ".orig)").c_str());
    if (o.test.empty()) return 0;
    std::fprintf(stderr, "running: %s\n", o.test.c_str());
    std::fflush(stdout);
    const int status = std::system(o.test.c_str());
    const int rc = status == -1 ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::fprintf(stderr, rc == 0 ? "test passed\n" : "test failed (exit %d)\n", rc);
    return rc == 0 ? 0 : 4;
}

}  // namespace

void register_edit(CLI::App& app) {
    auto o = std::make_shared<EditOptions>();
    CLI::App* cmd = app.add_subcommand("edit", "Edit a file with a running `flint serve`: stream the new version, show the diff, write on confirmation");
    cmd->add_option("file", o->file, "The file to edit")->required();
    cmd->add_option("instruction", o->instruction, "What to change")->required();
    cmd->add_option("--url", o->url, "Server URL (default http://127.0.0.1:8080)");
    cmd->add_option("--model", o->model, "Model name (default: the server's only model)");
    cmd->add_option("--api-key", o->api_key, "API key (default: $FLINT_API_KEY)");
    cmd->add_flag("-y,--yes", o->yes, "Write without asking");
    cmd->add_flag("--no-backup", o->no_backup, "Do not keep the original as FILE.orig");
    cmd->add_option("--test", o->test, "Shell command to run after writing (exit 4 when it fails)");
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Most tokens for the new version (default: the server's budget)")->check(CLI::Range(0, 1 << 20));
    cmd->add_flag("-q,--quiet", o->quiet, "Do not stream the new version (only the diff)");
    add_timeout_option(cmd, o->timeout);
    cmd->callback([o] {
        try {
            int rc = edit(*o);
            if (rc != 0) throw CLI::RuntimeError(rc);
        } catch (const Error& e) {
            std::fprintf(stderr, "flint edit: %s\n", e.what());
            throw CLI::RuntimeError(1);
        }
    });
}

}  // namespace flint::cli
