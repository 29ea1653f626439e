#include "server/router.h"

#include <vector>

#include "server/errors.h"
#include "server/generation.h"
#include "server/json_fields.h"
#include "server/model_admin.h"
#include "server/responses_api.h"
#include "server/state.h"

namespace flint::server {
namespace {

std::vector<std::string_view> segments(std::string_view path) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') ++i;
        size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        if (j > i) out.push_back(path.substr(i, j - i));
        i = j;
    }
    return out;
}

json model_object(const ModelEntry& m) {
    return {{"id", m.name}, {"object", "model"}, {"created", m.created}, {"owned_by", "flint"}};
}

}  // namespace

static Route route_path(std::string_view method, std::string_view target);

static bool query_says_stream(std::string_view target) {
    const size_t q = target.find('?');
    if (q == std::string_view::npos) return false;
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
        const size_t amp = query.find('&');
        const std::string_view kv = query.substr(0, amp);
        if (kv == "stream=true" || kv == "stream=1") return true;
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
    return false;
}

Route route(std::string_view method, std::string_view target) {
    Route r = route_path(method, target);
    r.stream = query_says_stream(target);
    return r;
}

static Route route_path(std::string_view method, std::string_view target) {
    std::string_view path = target.substr(0, target.find('?'));
    auto s = segments(path);
    const bool get = method == "GET", post = method == "POST", del = method == "DELETE";
    auto pick = [&](bool ok, Endpoint e, std::string id = "") {
        return ok ? Route{e, std::move(id)} : Route{Endpoint::MethodNotAllowed, {}};
    };
    if (s.size() == 1 && s[0] == "health") return pick(get, Endpoint::Health);
    if (s.size() == 1 && s[0] == "metrics") return pick(get, Endpoint::Metrics);
    if (s.size() == 2 && s[0] == "admin" && s[1] == "limits")
        return get ? Route{Endpoint::AdminLimitsGet, {}} : pick(post, Endpoint::AdminLimitsSet);
    if (s.empty() || s[0] != "v1") return {};
    if (s.size() == 2 && s[1] == "models") return get ? Route{Endpoint::Models, {}} : pick(post, Endpoint::ModelLoad);
    if (s.size() == 3 && s[1] == "models")
        return get ? Route{Endpoint::Model, std::string(s[2])} : pick(del, Endpoint::ModelUnload, std::string(s[2]));
    if (s.size() == 3 && s[1] == "chat" && s[2] == "completions") return pick(post, Endpoint::ChatCompletions);
    if (s.size() == 2 && s[1] == "completions") return pick(post, Endpoint::Completions);
    if (s.size() >= 2 && s[1] == "responses") {
        if (s.size() == 2) return post ? Route{Endpoint::ResponsesCreate, {}} : pick(get, Endpoint::ResponsesSocket);
        if (s.size() == 3 && s[2] == "input_tokens" && post) return {Endpoint::ResponsesInputTokens, {}};  // (ids are resp_…)
        std::string id(s[2]);
        if (s.size() == 3) return get ? Route{Endpoint::ResponseGet, id} : pick(del, Endpoint::ResponseDelete, id);
        if (s.size() == 4 && s[3] == "cancel") return pick(post, Endpoint::ResponseCancel, id);
        if (s.size() == 4 && s[3] == "input_items") return pick(get, Endpoint::ResponseInputItems, id);
    }
    return {};
}

const char* endpoint_name(Endpoint e) {
    switch (e) {
    case Endpoint::Health: return "/health";
    case Endpoint::Metrics: return "/metrics";
    case Endpoint::Models: return "/v1/models";
    case Endpoint::Model: return "/v1/models/{id}";
    case Endpoint::ResponsesCreate: return "/v1/responses";
    case Endpoint::ResponsesSocket: return "/v1/responses (websocket)";
    case Endpoint::ResponseGet: return "GET /v1/responses/{id}";
    case Endpoint::ResponseDelete: return "DELETE /v1/responses/{id}";
    case Endpoint::ResponseCancel: return "/v1/responses/{id}/cancel";
    case Endpoint::ResponseInputItems: return "/v1/responses/{id}/input_items";
    case Endpoint::ResponsesInputTokens: return "/v1/responses/input_tokens";
    case Endpoint::ChatCompletions: return "/v1/chat/completions";
    case Endpoint::Completions: return "/v1/completions";
    case Endpoint::AdminLimitsGet:
    case Endpoint::AdminLimitsSet: return "/admin/limits";
    case Endpoint::ModelLoad: return "POST /v1/models";
    case Endpoint::ModelUnload: return "DELETE /v1/models/{id}";
    case Endpoint::NotFound: return "not_found";
    case Endpoint::MethodNotAllowed: return "method_not_allowed";
    }
    return "?";
}

bool is_generation(Endpoint e) {
    return e == Endpoint::ResponsesCreate || e == Endpoint::ChatCompletions || e == Endpoint::Completions;
}

Reply handle_simple(ServerState& st, const Route& r, const std::string& body, const ApiKey* key) {
    Reply rep;
    switch (r.endpoint) {
    case Endpoint::Health:
        rep.body = {{"status", st.stopping ? "stopping" : "ok"}};
        if (st.stopping) rep.status = 503;
        return rep;
    case Endpoint::Metrics:
        rep.text = st.metrics.render(st.models);
        rep.content_type = "text/plain; version=0.0.4; charset=utf-8";
        return rep;
    case Endpoint::Models: {
        json data = json::array();
        for (const auto& m : st.models.all())
            if (!key || key->models.empty() || std::find(key->models.begin(), key->models.end(), m->name) != key->models.end())
                data.push_back(model_object(*m));
        rep.body = {{"object", "list"}, {"data", data}};
        return rep;
    }
    case Endpoint::Model: {
        std::shared_ptr<ModelEntry> m = st.models.find(r.id);
        if (!m) throw not_found("The model '" + r.id + "' does not exist.", "model", "model_not_found");
        st.auth.check_model(key, m->name);
        rep.body = model_object(*m);
        return rep;
    }
    case Endpoint::ResponseGet: {
        if (r.stream)
            throw bad_request("Resuming a response's stream (GET with stream=true) is not supported: GET it without "
                              "'stream' to poll its state.",
                              "stream", "unsupported_parameter");
        if (auto live = st.live_snapshot(r.id)) {
            rep.body = *live;
            return rep;
        }
        auto s = st.get(r.id);
        if (!s) throw not_found("Response with id '" + r.id + "' not found.", "response_id");
        rep.body = s->response;
        return rep;
    }
    case Endpoint::ResponseDelete:
        if (!st.remove(r.id)) throw not_found("Response with id '" + r.id + "' not found.", "response_id");
        rep.body = {{"id", r.id}, {"object", "response"}, {"deleted", true}};
        return rep;
    case Endpoint::ResponseCancel: {
        if (st.cancel_live(r.id)) {
            // The response finishes at the next token boundary; report it as being cancelled now.
            json snap = st.live_snapshot(r.id).value_or(json{{"id", r.id}, {"object", "response"}});
            snap["status"] = "cancelled";
            rep.body = snap;
            return rep;
        }
        auto s = st.get(r.id);
        if (!s) throw not_found("Response with id '" + r.id + "' not found.", "response_id");
        throw ApiError{409, "invalid_request_error", "response_not_in_progress", "response_id",
                       "Response '" + r.id + "' is not in progress (status " + s->response.value("status", "?") + ")."};
    }
    case Endpoint::ResponseInputItems: {
        auto s = st.get(r.id);
        if (!s) throw not_found("Response with id '" + r.id + "' not found.", "response_id");
        json items = input_items_with_ids(s->input_items);
        rep.body = {{"object", "list"},
                    {"data", items},
                    {"first_id", items.empty() ? json(nullptr) : items.front()["id"]},
                    {"last_id", items.empty() ? json(nullptr) : items.back()["id"]},
                    {"has_more", false}};
        return rep;
    }
    case Endpoint::ResponsesInputTokens:
        rep.body = {{"object", "response.input_tokens"},
                    {"input_tokens", count_input_tokens(st, parse_responses_request(parse_body(body)), key)}};
        return rep;
    case Endpoint::AdminLimitsGet:
        st.auth.check_admin(key);
        rep.body = st.limits.config();
        return rep;
    case Endpoint::AdminLimitsSet:
        st.auth.check_admin(key);
        st.limits.configure(parse_body(body));
        rep.body = st.limits.config();
        return rep;
    case Endpoint::ModelLoad: return load_model(st, body, key);
    case Endpoint::ModelUnload: return unload_model(st, r.id, key);
    case Endpoint::MethodNotAllowed:
        throw ApiError{405, "invalid_request_error", "method_not_allowed", "", "Method not allowed for this path."};
    case Endpoint::ResponsesSocket:
        throw ApiError{405, "invalid_request_error", "method_not_allowed", "",
                       "GET /v1/responses needs a WebSocket upgrade; use POST to create a response over HTTP."};
    default:
        throw not_found("Unknown path. See GET /v1/models, POST /v1/responses, POST /v1/chat/completions.", "", "not_found");
    }
}

}  // namespace flint::server
