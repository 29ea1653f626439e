// flint/client/url.h — the few URL shapes the client takes: http://, ws:// (host, port, path).
#pragma once
#include <string>

namespace flint::client {

struct Url {
    std::string scheme;  // "http" or "ws"
    std::string host;
    std::string port;    // default 80
    std::string target;  // path and query, "/" when empty
};

// Throws flint::Error for anything but http:// or ws:// (https/wss need a TLS proxy in front of flint).
Url parse_url(const std::string& text);

// The same server under the other scheme: ws://h:p/v1/responses ⇄ http://h:p/v1/responses.
Url with_scheme(Url u, const std::string& scheme, const std::string& target);

std::string to_string(const Url& u);

}  // namespace flint::client
