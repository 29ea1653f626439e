#include "server/ws_protocol.h"

#include "server/json_fields.h"

namespace flint::server {

ClientFrame parse_client_frame(std::string_view text) {
    ClientFrame f;
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        f.kind = ClientFrame::Kind::Error;
        f.error = bad_request("Each message must be one JSON object in UTF-8.", "", "invalid_json");
        return f;
    }
    const json* type = field(j, "type");
    if (!type || !type->is_string()) {
        f.kind = ClientFrame::Kind::Error;
        f.error = bad_request("Missing or invalid 'type': expected \"response.create\".", "type", "invalid_type");
        return f;
    }
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "response.create") {
        f.kind = ClientFrame::Kind::Create;
        // Fields may sit at the top level (as Codex sends them) or inside "response" (older clients).
        if (const json* r = field(j, "response"); r && r->is_object()) {
            f.body = *r;
            for (auto& [k, v] : j.items())
                if (k != "response" && k != "type" && !f.body.contains(k)) f.body[k] = v;
        } else {
            f.body = std::move(j);
            f.body.erase("type");
        }
        if (const json* bg = field(f.body, "background"); bg && bg->is_boolean() && bg->get<bool>()) {
            f.kind = ClientFrame::Kind::Error;
            f.error = bad_request("'background' is not supported over WebSocket.", "background", "unsupported_parameter");
        }
        return f;
    }
    if (t == "response.cancel") {
        f.kind = ClientFrame::Kind::Cancel;
        if (const json* id = field(j, "response_id"); id && id->is_string()) f.response_id = id->get<std::string>();
        return f;
    }
    return f;  // Ignore
}

}  // namespace flint::server
