// flint/client/chat.h — `flint chat`: a REPL over one persistent WebSocket to /v1/responses. Each turn
// chains with previous_response_id (the server continues on the KV it kept); Ctrl-C/Esc sends
// response.cancel and keeps the partial answer, which the next line continues from; a closed socket is
// reopened and the whole transcript resent.
#pragma once
#include <string>

namespace flint::client {

struct ChatOptions {
    std::string url = "ws://127.0.0.1:8080/v1/responses";
    std::string model;            // empty: the server's only model
    std::string api_key;          // default: $FLINT_API_KEY
    std::string system;           // instructions, sent with every turn
    int max_output_tokens = 0;    // 0: the server's budget
    double temperature = -1;      // < 0: the server's default
    bool stats = true;            // the status line after each turn
    bool warmup = true;           // /file: prefill the attachment at once (generate:false), not with the next message
    std::string history_file;     // lines typed at a terminal, kept between sessions; empty: none
};

// Returns the process exit code: 0 after Ctrl-D / Ctrl-C at an empty prompt / end of input, 1 when the
// server cannot be reached at the start.
int run_chat(const ChatOptions& o);

}  // namespace flint::client
