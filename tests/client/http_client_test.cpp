// HttpClient against canned replies: a body over the client's size limit is refused, however it is framed
// (Content-Length, chunked, or until the server closes) and whether it is kept or streamed.
#include <gtest/gtest.h>

#include "client/http_client.h"
#include "client/scripted_peers.h"
#include "util/error.h"

namespace flint::test {
namespace {

using client::HttpClient;
using client::parse_url;

std::string chunked(size_t chunks, size_t each) {
    std::string r = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", each);
    for (size_t i = 0; i < chunks; ++i) r += size + std::string(each, 'x') + "\r\n";
    return r + "0\r\n\r\n";
}

std::string until_close(size_t n) {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + std::string(n, 'x');
}

// What request() did: the body it kept, the bytes it streamed, or the error it threw.
struct Outcome {
    std::string body;
    size_t streamed = 0;
    std::string error;
};

Outcome fetch(const RawReply& reply, size_t max_body, bool stream) {
    CannedHttpServer s(reply);
    HttpClient http(parse_url(s.url()), false, 30, max_body);
    Outcome o;
    try {
        auto on_data = [&](std::string_view d) { o.streamed += d.size(); };
        auto res = stream ? http.request("GET", "/", "", {}, on_data) : http.request("GET", "/", "");
        o.body = std::move(res.body);
    } catch (const Error& e) {
        o.error = e.what();
    }
    return o;
}

TEST(HttpClient, ABodyOverTheSizeLimitIsRefusedHoweverItIsFramed) {
    const std::string fits = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n" + std::string(1000, 'y');
    const std::string says_too_much = "HTTP/1.1 200 OK\r\nContent-Length: 300000000000\r\nConnection: close\r\n\r\n{}";
    struct Case {
        const char* name;
        std::string reply;
        bool refused;
    };
    const std::vector<Case> cases = {
        {"exactly the limit", fits, false},
        {"a Content-Length over it, before any body", says_too_much, true},
        {"chunked, over it", chunked(5, 500), true},
        {"chunked, up to it", chunked(2, 500), false},
        {"until close, over it", until_close(2000), true},
        {"until close, up to it", until_close(1000), false},
    };
    for (const Case& c : cases)
        for (bool stream : {false, true}) {
            const Outcome o = fetch(RawReply{c.reply}, 1000, stream);
            SCOPED_TRACE(std::string(c.name) + (stream ? ", streamed" : ", kept"));
            if (c.refused) {
                EXPECT_NE(o.error.find("sent a reply of more than 1000 bytes (the client's limit); refused"), std::string::npos)
                    << o.error;
                EXPECT_LE(o.streamed + o.body.size(), 1000u);
            } else {
                EXPECT_EQ(o.error, "");
                EXPECT_EQ(stream ? o.streamed : o.body.size(), 1000u);
            }
        }
    EXPECT_THROW(HttpClient(parse_url("http://127.0.0.1:1"), false, 30, 0), Error);
}

}  // namespace
}  // namespace flint::test
