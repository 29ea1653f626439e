// flint/server/tool_stream.h — streaming text that may turn into a tool call. A model answers with text,
// or with Qwen-style <tool_call>{…}</tool_call> blocks, or both; the text before a call should reach the
// client as it is generated, the call only once it is complete and parsed. Feed each token's text; what
// comes back can be shown now (a tail that could still be the start of "<tool_call>" is held back until
// it is clear). At the end, finish() gives what is left to show and the parsed calls. Used by the
// Responses events and the Chat Completions stream alike.
#pragma once
#include <string>
#include <string_view>

#include "server/conversation.h"

namespace flint::server {

class ToolCallStream {
public:
    // The part of the text so far that can be shown now.
    std::string feed(std::string_view text);
    // Text still to show (the held tail, and whatever of the calls' part is not a well-formed call) and the
    // calls. Feeding after finish() starts over.
    ParsedOutput finish();

private:
    bool in_call_ = false;
    std::string held_;       // a possible "<tool_call>" prefix not yet shown
    std::string call_text_;  // everything from the first <tool_call>
};

}  // namespace flint::server
