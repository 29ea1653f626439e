// libFuzzer target for everything the server does with untrusted bytes before the engine sees them:
//   - Beast's HTTP request parser with the server's limits (header 64 KiB, body limit),
//   - the router (method + target),
//   - request JSON → native structs for /v1/responses, /v1/chat/completions, /v1/completions, and what
//     is made of a request's tools before the model (their prompt text, the forced call, the call schema),
//   - WebSocket text frames (parse_client_frame → response.create body → the Responses parser).
// The first input byte picks the path. Expected refusals are ApiError; anything else escaping (or a
// sanitizer report) is a bug. Build: cmake -DFLINT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ …; run:
// ./request_fuzz -max_len=65536 corpus/
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <boost/beast/http.hpp>

#include "server/chat_completions_api.h"
#include "server/errors.h"
#include "server/conversation.h"
#include "server/json_fields.h"
#include "server/output_format.h"
#include "server/responses_api.h"
#include "server/router.h"
#include "server/ws_protocol.h"

using namespace flint::server;

namespace {

void http_parse(std::string_view data) {
    namespace http = boost::beast::http;
    http::request_parser<http::string_body> p;
    p.header_limit(64 * 1024);
    p.body_limit(1 << 20);
    p.eager(true);
    boost::beast::error_code ec;
    // Feed in two pieces so the parser's resumption paths run too.
    size_t half = data.size() / 2;
    size_t used = p.put(boost::asio::buffer(data.data(), half), ec);
    // put() must not be called again once the message is complete (a Beast precondition).
    if ((!ec || ec == http::error::need_more) && !p.is_done()) {
        ec = {};
        p.put(boost::asio::buffer(data.data() + used, data.size() - used), ec);
    }
    if (p.is_header_done()) {
        const auto& req = p.get();
        route(std::string_view(req.method_string().data(), req.method_string().size()),
              std::string_view(req.target().data(), req.target().size()));
    }
}

// The tools of a request that parsed: rendered for the prompt, the forced start of a call, the tools the
// choice lets it call and their call schema (as generation.cpp's set_tool_calls builds it).
void tools_of(const json& tools, const json& tool_choice) {
    (void)render_tools(tools);
    (void)tool_call_schema(tools);
    (void)forced_call_prefix(tool_choice, tools);  // (may refuse: ApiError)
    if (tools.is_array() && !tools.empty()) (void)tool_call_schema(callable_tools(tool_choice, tools));
}

void json_requests(std::string_view data, int which) {
    try {
        json body = parse_body(std::string(data));
        if (which == 0) {
            ResponsesRequest r = parse_responses_request(body);
            ResponseRecord rec;
            rec.req = std::move(r);
            (void)dump(response_object(rec));
            (void)input_items_with_ids(rec.req.input_json);
            tools_of(rec.req.tools, rec.req.tool_choice);
        } else if (which == 1) {
            const ChatRequest r = parse_chat_request(body);
            tools_of(r.tools, r.tool_choice);
        } else {
            (void)parse_completion_request(body);
        }
    } catch (const ApiError&) {
    }
}

void ws_frame(std::string_view data) {
    ClientFrame f = parse_client_frame(data);
    if (f.kind == ClientFrame::Kind::Create) {
        try {
            (void)parse_responses_request(f.body);
        } catch (const ApiError&) {
        }
    }
    if (f.error) (void)dump(ws_error_frame(*f.error));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 6) {
    case 0: http_parse(rest); break;
    case 1: json_requests(rest, 0); break;
    case 2: json_requests(rest, 1); break;
    case 3: json_requests(rest, 2); break;
    case 4: ws_frame(rest); break;
    case 5: {
        size_t sp = rest.find(' ');
        if (sp != std::string_view::npos) route(rest.substr(0, sp), rest.substr(sp + 1));
        break;
    }
    }
    return 0;
}
