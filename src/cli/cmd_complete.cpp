// `flint complete FILE:LINE:COL` — fill-in-the-middle at a cursor: the text before it is the prefix, the
// text after it the suffix, each cut to a window of lines around the cursor (client/fim_window.h); a
// running `flint serve` builds the FIM prompt for a model with FIM tokens (legacy /v1/completions with
// `suffix`). Prints only the completion: what an editor calls per keystroke.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "client/files.h"
#include "client/fim_window.h"
#include "client/http_client.h"
#include "client/responses.h"
#include "client/responses_http.h"
#include "client/sse.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

namespace flint::cli {
namespace {

struct CompleteOptions {
    std::string where;
    std::string url = "http://127.0.0.1:8080";
    std::string model, api_key;
    int max_tokens = 64;
    int prefix_lines = 256, suffix_lines = 16;
    double temperature = 0;
    std::vector<std::string> stop;
    bool verbose = false, from_stdin = false;
    int band_lines = -1;  // the server's fim_band_lines (-1: the server's default)
    bool stream = false;  // print the text as it is generated
    std::string repo;                   // repo-level FIM: the repository's name
    std::vector<std::string> context;  // and other files of it, before the one completed
    double timeout = client::HttpClient::kDefaultIdleTimeout;
};

struct Cursor {
    std::string file;
    long line = 0, col = 0;  // 1-based; col counts bytes
};

Cursor parse_cursor(const std::string& s) {
    const size_t c2 = s.rfind(':');
    const size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : s.rfind(':', c2 - 1);
    if (c1 == std::string::npos) fail("'", s, "': expected FILE:LINE:COL (1-based line and column)");
    Cursor c{s.substr(0, c1)};
    try {
        size_t n1 = 0, n2 = 0;
        c.line = std::stol(s.substr(c1 + 1, c2 - c1 - 1), &n1);
        c.col = std::stol(s.substr(c2 + 1), &n2);
        if (n1 != c2 - c1 - 1 || n2 != s.size() - c2 - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
        fail("'", s, "': LINE and COL must be numbers (FILE:LINE:COL)");
    }
    if (c.line < 1 || c.col < 1) fail("'", s, "': LINE and COL start at 1");
    return c;
}

// Byte offset of (line, col); col may be one past the line's end (the cursor at the end of the line).
size_t offset_of(const std::string& text, const Cursor& c) {
    size_t pos = 0;
    for (long l = 1; l < c.line; ++l) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) fail(c.file, " has fewer than ", c.line, " lines");
        pos = nl + 1;
    }
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (static_cast<size_t>(c.col - 1) > end - pos)
        fail(c.file, ":", c.line, " has ", end - pos, " bytes; column ", c.col, " is past its end (+1)");
    return pos + static_cast<size_t>(c.col - 1);
}

// What the server answered: the completion (already printed), its usage, when its first text came.
struct Reply {
    std::string text;
    nlohmann::json usage;
    double first_ms = -1;
    std::string server_timing = "-";  // the Server-Timing header (or trailer) when the server sent one
};

void print_text(std::string_view t) {
    std::fwrite(t.data(), 1, t.size(), stdout);
    std::fflush(stdout);
}

[[noreturn]] void server_failed(int status, const std::string& body) {
    fail(client::describe_failure(status, client::error_message(body)));
}

Reply post_whole(client::HttpClient& http, const nlohmann::json& body, const client::Headers& headers) {
    client::HttpResponse res = http.request("POST", "/v1/completions", body.dump(), headers);
    if (res.status != 200) server_failed(res.status, res.body);
    auto j = nlohmann::json::parse(res.body, nullptr, false);
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty() ||
        !j["choices"][0].contains("text") || !j["choices"][0]["text"].is_string())
        fail("the server's reply has no choices[0].text");
    Reply r{j["choices"][0]["text"].get<std::string>(), j.contains("usage") ? j["usage"] : nlohmann::json()};
    if (res.headers.count("server-timing")) r.server_timing = res.headers["server-timing"];
    print_text(r.text);
    return r;
}

// Streamed (SSE): each chunk's text printed as it arrives, so an editor can show it at once; the usage rides
// in a last chunk (stream_options.include_usage). A stream that ends without [DONE] or carries an error
// fails after what came was printed.
Reply post_stream(client::HttpClient& http, nlohmann::json body, const client::Headers& headers,
                  std::chrono::steady_clock::time_point t0) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    Reply r;
    client::SseParser parser;
    std::string raw, error;  // raw: the start of the reply, for an error status
    bool done = false;
    client::HttpResponse res = http.request("POST", "/v1/completions", body.dump(), headers, [&](std::string_view bytes) {
        if (raw.size() < 65536) raw.append(bytes);
        parser.feed(bytes, [&](client::SseEvent&& e) {
            if (e.data == "[DONE]") {
                done = true;
                return;
            }
            const auto j = nlohmann::json::parse(e.data, nullptr, false);
            if (!j.is_object()) return;
            if (j.contains("error")) error = client::error_message(e.data);
            if (j.contains("usage") && j["usage"].is_object()) r.usage = j["usage"];
            if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
            const auto& c = j["choices"][0];
            if (!c.is_object() || !c.contains("text") || !c["text"].is_string()) return;
            const std::string t = c["text"].get<std::string>();
            if (t.empty()) return;
            if (r.first_ms < 0)
                r.first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            r.text += t;
            print_text(t);
        });
    });
    if (res.status != 200) server_failed(res.status, raw);
    if (!error.empty()) fail("the server's stream ended with an error: ", error);
    if (!done) fail("the server's stream ended before its [DONE] (", r.text.size(), " bytes of completion came)");
    if (res.headers.count("server-timing")) r.server_timing = res.headers["server-timing"];
    return r;
}

void complete(const CompleteOptions& o) {
    using namespace client;
    const Cursor c = parse_cursor(o.where);
    const TextFile f = o.from_stdin ? read_text_stdin(1 << 20) : read_text_file(c.file, 1 << 20);
    const size_t at = offset_of(f.text, c);
    const FimWindow w = fim_window(f.text, at, size_t(o.prefix_lines), size_t(o.suffix_lines));
    nlohmann::json body = {{"prompt", w.prefix},
                           {"suffix", w.suffix},
                           {"max_tokens", o.max_tokens},
                           {"temperature", o.temperature},
                           {"stream", false}};
    if (!o.repo.empty() || !o.context.empty()) {
        // Repo-level FIM (flint extension): the files' paths relative to the current directory when they are
        // inside it (the model saw repository paths), else as given; the file completed last.
        const std::filesystem::path cwd = std::filesystem::current_path();
        auto repo_path = [&](const std::string& p) {
            const std::filesystem::path abs = std::filesystem::absolute(p).lexically_normal();
            const std::filesystem::path rel = abs.lexically_relative(cwd);
            return rel.empty() || *rel.begin() == ".." ? p : rel.generic_string();
        };
        body["repo_name"] = o.repo.empty() ? cwd.filename().string() : o.repo;
        body["path"] = repo_path(c.file);
        nlohmann::json files = nlohmann::json::array();
        for (const std::string& path : o.context)
            files.push_back({{"path", repo_path(path)}, {"content", read_text_file(path, 1 << 20).text}});
        body["context_files"] = std::move(files);
    }
    if (o.band_lines >= 0) body["fim_band_lines"] = o.band_lines;
    if (!o.model.empty()) body["model"] = o.model;
    if (!o.stop.empty()) body["stop"] = o.stop;
    std::string key = o.api_key;
    if (key.empty())
        if (const char* k = std::getenv("FLINT_API_KEY")) key = k;
    HttpClient http(parse_url(o.url), false, o.timeout);
    const auto t0 = std::chrono::steady_clock::now();
    const Reply r = o.stream ? post_stream(http, body, auth_headers(key), t0) : post_whole(http, body, auth_headers(key));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (o.verbose) {
        // The text is out already: a usage of the wrong shape prints as zeros rather than failing the command.
        const nlohmann::json& u = r.usage;
        std::string first;
        if (r.first_ms >= 0) first = ", first text at " + std::to_string(static_cast<int>(r.first_ms + 0.5)) + " ms";
        std::fprintf(stderr, "\n[lines %zu-%zu of %zu sent; %d prompt tokens (%d cached), %d completion tokens, %.1f ms round trip%s; server: %s]\n",
                     w.first_line + 1, w.end_line, w.lines, int_at(u, "prompt_tokens"),
                     int_at(u, "prompt_tokens_details", "cached_tokens"), int_at(u, "completion_tokens"), ms, first.c_str(),
                     r.server_timing.c_str());
    }
}

}  // namespace

void register_complete(CLI::App& app) {
    auto o = std::make_shared<CompleteOptions>();
    CLI::App* cmd = app.add_subcommand("complete", "Fill in the middle at FILE:LINE:COL with a running `flint serve` (a model with FIM tokens)");
    cmd->add_option("where", o->where, "FILE:LINE:COL, 1-based; the completion goes before that byte")->required();
    cmd->add_flag("--stdin", o->from_stdin,
                  "Read the text from stdin (an editor's unsaved buffer); FILE then only names it in messages");
    cmd->add_option("--url", o->url, "Server URL (default http://127.0.0.1:8080)");
    cmd->add_option("--model", o->model, "Model name (default: the server's only model)");
    cmd->add_option("--api-key", o->api_key, "API key (default: $FLINT_API_KEY)");
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Most tokens to generate (default 64)")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--prefix-lines", o->prefix_lines,
                    "Lines above the cursor's to send (default 256; 0: all). The window starts on a multiple of 32 lines, "
                    "so it stays put while the cursor moves and the server's prefix cache keeps it")
        ->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--suffix-lines", o->suffix_lines,
                    "Lines below the cursor's to send (default 16; 0: all). The server prefills these again when the lines "
                    "above the band change (see --band-lines; with 0, on every call): on two CPU cores and a 0.5B model "
                    "about 1 s at 16 lines, 4.7 s at 64")
        ->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--repo", o->repo,
                    "Repo-level FIM (Qwen2.5-Coder's <|repo_name|>/<|file_sep|> prompt): the repository's name, sent with "
                    "FILE's path, relative to the current directory when inside it (default with --context: the "
                    "current directory's name)");
    cmd->add_option("--context", o->context,
                    "Another file of the repository to put before FILE (repeatable; repo-level FIM). It sits at the "
                    "prompt's start, so the server's prefix cache keeps it from one call to the next");
    cmd->add_option("--band-lines", o->band_lines,
                    "The server puts the lines from the last multiple of N (counted from the window's start) through the "
                    "cursor's after <fim_middle>, as the start of the middle, so typing on reuses the cached suffix; the "
                    "suffix is prefilled again once every N lines (default: the server's, 8; 1: the cursor's line alone; "
                    "0: plain prefix-suffix-middle, the suffix prefilled again on every call)")
        ->check(CLI::Range(0, 1 << 20));
    cmd->add_flag("--stream", o->stream,
                  "Print the completion as it is generated (an editor can show it at once, and stop reading when the "
                  "user types on)");
    cmd->add_option("--temp", o->temperature, "Sampling temperature (default 0: greedy)")->check(CLI::Range(0.0, 2.0));
    cmd->add_option("--stop", o->stop, "Stop sequence (repeatable)");
    cmd->add_flag("-v,--verbose", o->verbose, "Token counts and timing on stderr");
    add_timeout_option(cmd, o->timeout);
    cmd->callback([o] {
        try {
            complete(*o);
        } catch (const Error& e) {
            std::fprintf(stderr, "flint complete: %s\n", e.what());
            throw CLI::RuntimeError(1);
        }
    });
}

}  // namespace flint::cli
