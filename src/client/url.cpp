#include "client/url.h"

#include "util/error.h"

namespace flint::client {

Url parse_url(const std::string& text) {
    Url u;
    const size_t sep = text.find("://");
    if (sep == std::string::npos) fail("URL '", text, "': expected http://HOST:PORT/... or ws://HOST:PORT/...");
    u.scheme = text.substr(0, sep);
    if (u.scheme == "https" || u.scheme == "wss")
        fail("URL '", text, "': TLS is not built into the client; put flint behind a local proxy or use ", u.scheme == "https" ? "http" : "ws", "://");
    if (u.scheme != "http" && u.scheme != "ws") fail("URL '", text, "': unsupported scheme '", u.scheme, "' (http or ws)");
    std::string rest = text.substr(sep + 3);
    const size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    u.target = slash == std::string::npos ? "/" : rest.substr(slash);
    if (authority.empty()) fail("URL '", text, "': no host");
    if (authority.front() == '[') {  // [v6]:port
        const size_t close = authority.find(']');
        if (close == std::string::npos) fail("URL '", text, "': unterminated IPv6 address");
        u.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size() && authority[close + 1] == ':') u.port = authority.substr(close + 2);
    } else {
        const size_t colon = authority.rfind(':');
        u.host = authority.substr(0, colon);
        if (colon != std::string::npos) u.port = authority.substr(colon + 1);
    }
    if (u.port.empty()) u.port = "80";
    for (char c : u.port)
        if (c < '0' || c > '9') fail("URL '", text, "': port '", u.port, "' is not a number");
    return u;
}

Url with_scheme(Url u, const std::string& scheme, const std::string& target) {
    u.scheme = scheme;
    u.target = target;
    return u;
}

std::string to_string(const Url& u) {
    const bool v6 = u.host.find(':') != std::string::npos;
    return u.scheme + "://" + (v6 ? "[" + u.host + "]" : u.host) + ":" + u.port + u.target;
}

}  // namespace flint::client
