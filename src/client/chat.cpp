#include "client/chat.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "client/completion.h"
#include "client/files.h"
#include "client/history_file.h"
#include "client/responses.h"
#include "client/terminal.h"
#include "client/ws_client.h"
#include "util/error.h"

namespace flint::client {
namespace {

const char* kHelp =
    "  /model [NAME]   show or switch the model\n"
    "  /system [TEXT]  set the system instructions (no text: clear them)\n"
    "  /file PATH      attach a file as context: the server reads it at once (a generate:false\n"
    "                  warm-up), so the next message's answer starts after only that message;\n"
    "                  ~/ is your home; Tab completes the path (and a command's name)\n"
    "  /reset          start a new conversation\n"
    "  /help           this list;  /quit (or Ctrl-D) exits\n"
    "  Ctrl-C or Esc while an answer streams stops it; the partial answer stays and your next line\n"
    "  continues from it. Ctrl-C drops the line being typed; at an empty prompt it exits.\n";

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A path as typed at the prompt, read as a shell would: quotes around it dropped, else a leading ~/ (or ~
// alone) made $HOME.
std::string typed_path(const std::string& p) {
    if (p.size() >= 2 && (p.front() == '"' || p.front() == '\'') && p.back() == p.front()) return p.substr(1, p.size() - 2);
    return expand_home(p);
}

class Session {
public:
    explicit Session(const ChatOptions& o) : o_(o), url_(parse_url(o.url)), model_(o.model), system_(o.system) {
        std::string key = o.api_key;
        if (key.empty())
            if (const char* k = std::getenv("FLINT_API_KEY")) key = k;
        headers_ = auth_headers(key);
        dim_ = isatty(STDERR_FILENO);
    }

    int run() {
        try {
            ws_.connect(url_, headers_);
        } catch (const Error& e) {
            std::fprintf(stderr, "flint chat: %s\n", e.what());
            return 1;
        }
        watch_socket();
        if (term_.interactive())
            note("connected to " + to_string(url_) + (model_.empty() ? "" : " (model " + model_ + ")") +
                 " — /help for commands, Ctrl-C stops an answer, Ctrl-D exits");
        HistoryFile history(term_.interactive() ? o_.history_file : "");
        term_.set_history(history.load(LineEditor::kMaxHistory));
        term_.set_completer(complete_chat_line);
        std::string line;
        for (;;) {
            Terminal::Read r = term_.read_line(term_.interactive() ? "> " : "", line);
            if (r == Terminal::Read::Interrupt && !line.empty()) continue;  // Ctrl-C drops the line being typed
            if (r != Terminal::Read::Line) break;  // Ctrl-D, end of input, Ctrl-C at an empty prompt
            if (term_.line_added()) history.append(line);
            line = trim(line);
            if (line.empty()) continue;
            if (line[0] == '/' && line.find('\n') == std::string::npos) {  // a pasted text starting with '/' is a message
                if (!command(line)) break;
                continue;
            }
            finish_warmup();
            json items = pending_;
            pending_ = json::array();
            items.push_back(message_item("user", line));
            turn(items);
        }
        ws_.close();
        return 0;
    }

private:
    void note(const std::string& s) const {
        if (dim_) std::fprintf(stderr, "\x1b[2m%s\x1b[0m\n", s.c_str());
        else std::fprintf(stderr, "%s\n", s.c_str());
        std::fflush(stderr);
    }

    // The socket is served while the prompt waits: a pong for each of the server's keep-alive pings, so an
    // idle session is not closed as dead (`flint serve --idle-timeout`).
    void watch_socket() {
        term_.watch(ws_.native_handle(), [this] {
            ws_.service();
            return ws_.is_open();
        });
    }

    void reconnect(const std::string& why) {
        ws_.close();
        ws_.connect(url_, headers_);
        watch_socket();
        last_id_.clear();  // a new connection starts from the whole transcript
        note("(" + why + "; reconnected, resending the conversation: " + std::to_string(transcript_.size()) + " items)");
    }

    // Frames that arrived while the prompt waited: the server's age-limit notice, or a close.
    void drain() {
        while (ws_.is_open()) {
            auto f = ws_.next(0);
            if (!f) break;
            json j = json::parse(f->text, nullptr, false);
            if (str_at(j, "type") == "error") closing_ = true;  // e.g. websocket_connection_limit_reached
        }
        if (!ws_.is_open() || closing_) {
            closing_ = false;
            reconnect(ws_.is_open() ? "the server is closing this connection" : ws_.close_reason());
        }
    }

    json request(const json& items) const {
        json body = {{"type", "response.create"}, {"store", false}};
        if (!model_.empty()) body["model"] = model_;
        if (!system_.empty()) body["instructions"] = system_;
        if (o_.max_output_tokens > 0) body["max_output_tokens"] = o_.max_output_tokens;
        if (o_.temperature >= 0) body["temperature"] = o_.temperature;
        if (last_id_.empty()) {
            json all = transcript_;
            for (const json& it : items) all.push_back(it);
            body["input"] = all;
        } else {
            body["previous_response_id"] = last_id_;
            body["input"] = items;
        }
        return body;
    }

    // Folds a response's events into t until its terminal event or the socket's end. Ctrl-C/Esc
    // sends response.cancel (held until the response has an id); `on_delta` gets each text delta,
    // `on_idle` runs whenever 20 ms pass without a frame.
    template <typename OnDelta, typename OnIdle>
    void follow(Turn& t, OnDelta on_delta, OnIdle on_idle) {
        bool cancel_wanted = false, cancel_sent = false;
        while (!t.finished) {
            if (!cancel_wanted && term_.interrupt_pressed()) cancel_wanted = true;
            if (cancel_wanted && !cancel_sent && !t.response_id.empty()) {
                ws_.send(json{{"type", "response.cancel"}, {"response_id", t.response_id}}.dump());
                cancel_sent = true;
            }
            auto f = ws_.next(20);  // frames that arrived before a close are still read
            if (!f) {
                if (!ws_.is_open()) return;
                on_idle();
                continue;
            }
            json j = json::parse(f->text, nullptr, false);
            if (j.is_discarded()) continue;
            std::string_view d = t.apply(j, f->at);
            if (!d.empty()) on_delta(d);
        }
    }

    // One streamed answer; Ctrl-C/Esc cancels it. Returns false when the connection was lost before any
    // output (the caller reconnects and retries once).
    bool stream(const json& items, Turn& t) {
        t = Turn{};
        t.sent = Clock::now();
        ws_.send(request(items).dump());
        follow(
            t,
            [](std::string_view d) {
                std::fwrite(d.data(), 1, d.size(), stdout);
                std::fflush(stdout);
            },
            [] {});
        return t.finished || !t.text.empty();
    }

    // Sends attachments as a warm-up (generate:false): the server prefills them into this connection's KV
    // while the user types, and the next message chains on it, so its time to first token is the
    // message's own prefill. Not waited for here: finish_warmup() collects it before the next request.
    // False when it could not be sent (the items then wait in pending_ for the next message).
    bool start_warmup(const json& item) {
        finish_warmup();
        json items = pending_;
        items.push_back(item);
        pending_ = json::array();
        try {
            drain();
            json body = request(items);
            body["generate"] = false;
            warm_turn_ = Turn{};
            warm_turn_.sent = Clock::now();
            ws_.send(body.dump());
            warm_items_ = items;
            warming_ = true;
            return true;
        } catch (const Error& e) {
            pending_ = items;  // sent with the next message instead
            note(std::string("flint chat: could not send the attachment ahead (") + e.what() + ")");
            return false;
        }
    }

    // Waits for the warm-up in flight (usually done by the time the user has typed). Completed: its items
    // join the conversation and the next request chains on it. Failed or cut off: they go with the next
    // message, as without a warm-up.
    void finish_warmup() {
        if (!warming_) return;
        warming_ = false;
        try {
            // A long file may still be prefilling when the user is done typing: say so, and let Ctrl-C
            // stop it (the file then goes with the message, as without a warm-up).
            const auto told_at = Clock::now() + std::chrono::milliseconds(500);
            bool told = false;
            follow(warm_turn_, [](std::string_view) {}, [&] {
                if (!told && Clock::now() >= told_at) {
                    note("(the server is still reading the attachment; Ctrl-C sends it with your message instead)");
                    told = true;
                }
            });
        } catch (const Error&) {
            // the connection failed: handled as unfinished below
        }
        if (warm_turn_.finished && warm_turn_.status == "completed" && !warm_turn_.response_id.empty()) {
            commit(warm_items_, "", warm_turn_.response_id);
            return;
        }
        note("(the server did not read the attachment ahead — " +
             (warm_turn_.finished ? (warm_turn_.error_message.empty() ? warm_turn_.status : warm_turn_.error_message) : ws_.close_reason()) +
             " — it goes with your next message)");
        for (const json& it : pending_) warm_items_.push_back(it);
        pending_ = warm_items_;
        if (warm_turn_.error_code == "previous_response_not_found") last_id_.clear();
        if (warm_turn_.error_code == "websocket_connection_limit_reached") closing_ = true;  // drain() reconnects
    }

    void turn(const json& items) {
        Turn t;
        try {
            drain();
            bool ok = stream(items, t);
            const bool retry = !ok || (t.status == "error" && (t.error_code == "websocket_connection_limit_reached" ||
                                                                t.error_code == "previous_response_not_found"));
            if (retry) {
                if (!ws_.is_open() || t.error_code == "websocket_connection_limit_reached") reconnect(ok ? t.error_message : ws_.close_reason());
                else last_id_.clear();
                stream(items, t);
            }
        } catch (const Error& e) {
            note(std::string("flint chat: ") + e.what());
            return;
        }
        if (!t.text.empty() && t.text.back() != '\n') std::fputc('\n', stdout);
        std::fflush(stdout);
        if (!t.finished) {
            note("(connection lost: " + ws_.close_reason() + "; the next message reconnects)");
            commit(items, t.text, "");
            return;
        }
        if (t.status == "error" || t.status == "failed") {
            note("error: " + (t.error_message.empty() ? t.error_code : t.error_message));
            return;  // the server did not take the turn: it is not part of the conversation
        }
        commit(items, t.text, t.response_id);
        if (t.status == "cancelled") note("(interrupted — your next message continues from here)");
        if (o_.stats) status_line(t);
    }

    void commit(const json& items, const std::string& answer, const std::string& id) {
        for (const json& it : items) transcript_.push_back(it);
        if (!answer.empty()) transcript_.push_back(message_item("assistant", answer));
        last_id_ = id;
    }

    void status_line(const Turn& t) const {
        char buf[256];
        std::snprintf(buf, sizeof buf, "[ttft %.0f ms · %d tokens · %.0f tok/s · cached %d/%d · prediction accepted %d]",
                      t.ttft_ms(), t.output_tokens, t.tokens_per_s(), t.cached_tokens, t.input_tokens,
                      t.accepted_prediction_tokens);
        note(buf);
    }

    bool command(const std::string& line) {
        finish_warmup();  // every command below sees the conversation with the attachment in it (or pending)
        const size_t sp = line.find(' ');
        const std::string cmd = line.substr(0, sp);
        const std::string arg = sp == std::string::npos ? "" : trim(line.substr(sp + 1));
        if (cmd == "/quit" || cmd == "/exit") return false;
        if (cmd == "/help") {
            std::fputs(kHelp, stderr);
        } else if (cmd == "/model") {
            if (arg.empty()) {
                note("model: " + (model_.empty() ? std::string("(the server's default)") : model_));
            } else {
                model_ = arg;
                last_id_.clear();  // a continuation cannot switch models: resend the transcript
                note("model: " + model_);
            }
        } else if (cmd == "/system") {
            system_ = arg;
            note(arg.empty() ? "system instructions cleared" : "system instructions set");
        } else if (cmd == "/file") {
            try {
                TextFile f = read_text_file(typed_path(arg), 1 << 20);
                json item = message_item("user", "File " + arg + ":\n```\n" + f.text + (f.text.empty() || f.text.back() == '\n' ? "" : "\n") + "```");
                if (o_.warmup && start_warmup(item)) {
                    note("attached " + arg + " (" + std::to_string(f.text.size()) + " bytes): the server is reading it while you type");
                } else {
                    if (!o_.warmup) pending_.push_back(item);  // (a failed warm-up left it there already)
                    note("attached " + arg + " (" + std::to_string(f.text.size()) + " bytes) to the next message");
                }
            } catch (const Error& e) {
                note(std::string("flint chat: ") + e.what());
            }
        } else if (cmd == "/reset") {
            transcript_ = json::array();
            pending_ = json::array();
            last_id_.clear();
            note("new conversation");
        } else {
            note("unknown command " + cmd + " (/help lists them)");
        }
        return true;
    }

    const ChatOptions& o_;
    Url url_;
    Headers headers_;
    std::string model_, system_;
    Terminal term_;
    WsClient ws_;
    json transcript_ = json::array();  // every item of the conversation, for reconnects
    json pending_ = json::array();     // attachments for the next message
    bool warming_ = false;             // a warm-up of warm_items_ is in flight
    json warm_items_ = json::array();
    Turn warm_turn_;
    std::string last_id_;
    bool closing_ = false;
    bool dim_ = false;
};

}  // namespace

int run_chat(const ChatOptions& o) {
    Session s(o);
    return s.run();
}

}  // namespace flint::client
