// flint/server/tool_stream.h — streaming text that may turn into a tool call. A model answers with text,
// or with Qwen-style <tool_call>{…}</tool_call> blocks, or both; the text before a call should reach the
// client as it is generated, the call only once it is complete and parsed. Feed each token's text; what
// comes back can be shown now (a tail that could still be the start of "<tool_call>" is held back until
// it is clear). At the end, finish() gives what is left to show and the parsed calls. Used by the
// Responses events and the Chat Completions stream alike.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/conversation.h"

namespace flint::server {

class ToolCallStream {
public:
    // The part of the text so far that can be shown now.
    std::string feed(std::string_view text);
    // Text still to show (the held tail, and whatever of the calls' part is not a well-formed call) and the
    // calls. Feeding after finish() starts over.
    // parallel_calls false (the request's parallel_tool_calls): at most the first call.
    ParsedOutput finish(bool parallel_calls = true);

    // Inside a call: from the first <tool_call> on, text goes to the calls (and finish()).
    bool in_call() const { return in_call_; }

private:
    bool in_call_ = false;
    std::string held_;       // a possible "<tool_call>" prefix not yet shown
    std::string call_text_;  // everything from the first <tool_call>
};

// Logprob entries in step with the text they belong to. A token whose text comes later (the runtime holds
// a partial character or a possible stop sequence; ToolCallStream a possible "<tool_call>") has its entry
// wait for that text; entries of text that a tool call swallowed are dropped, and so are those of text
// never shown (a stop sequence).
class LogprobQueue {
public:
    void push(nlohmann::json entry) { q_.push_back(std::move(entry)); }
    // The entries `shown` carries (all waiting ones when it is not empty); then, inside a call, none wait.
    nlohmann::json take(const std::string& shown, bool in_call);

private:
    nlohmann::json q_ = nlohmann::json::array();
};

}  // namespace flint::server
