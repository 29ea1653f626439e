#include "client/responses.h"

namespace flint::client {
namespace {

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

int int_at(const json& j, const char* a, const char* b) {
    if (!j.is_object() || !j.contains(a)) return 0;
    const json& v = j[a];
    if (!b) return v.is_number_integer() ? v.get<int>() : 0;
    return v.is_object() && v.contains(b) && v[b].is_number_integer() ? v[b].get<int>() : 0;
}

std::string str_at(const json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

json message_item(const std::string& role, const std::string& text) {
    return {{"type", "message"}, {"role", role}, {"content", text}};
}

std::string_view Turn::apply(const json& ev, Clock::time_point at) {
    const std::string type = str_at(ev, "type");
    if (type == "response.output_text.delta") {
        const auto d = ev.find("delta");  // find, not [] (a const [] on a missing key reads past the map)
        if (d == ev.end() || !d->is_string()) return {};
        if (delta_times.empty()) first_delta = at;
        delta_times.push_back(at);
        const auto t = ev.find("t_us");
        delta_engine_us.push_back(t != ev.end() && t->is_number_integer() ? t->get<int64_t>() : 0);
        const size_t from = text.size();
        text += d->get_ref<const std::string&>();
        return std::string_view(text).substr(from);
    }
    if (type == "error") {  // WebSocket errors carry {status, error:{code,message}}; SSE's carry code, message
        finished = true;
        done = at;
        status = "error";
        const json& e = ev.contains("error") && ev["error"].is_object() ? ev["error"] : ev;
        error_code = str_at(e, "code");
        error_message = str_at(e, "message");
        return {};
    }
    if (type.rfind("response.", 0) != 0 || !ev.contains("response")) return {};
    const json& r = ev["response"];
    if (response_id.empty()) response_id = str_at(r, "id");
    if (type == "response.created") created = at;
    if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
        finished = true;
        done = at;
        status = str_at(r, "status");
        if (status.empty()) status = type.substr(9);
        const json& u = r.contains("usage") ? r["usage"] : json();
        input_tokens = int_at(u, "input_tokens");
        cached_tokens = int_at(u, "input_tokens_details", "cached_tokens");
        output_tokens = int_at(u, "output_tokens");
        accepted_prediction_tokens = int_at(u, "output_tokens_details", "accepted_prediction_tokens");
        rejected_prediction_tokens = int_at(u, "output_tokens_details", "rejected_prediction_tokens");
        if (r.contains("timings")) timings = r["timings"];
        if (r.contains("error") && r["error"].is_object()) {
            error_code = str_at(r["error"], "code");
            error_message = str_at(r["error"], "message");
        }
    }
    return {};
}

int64_t monotonic_us(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

double Turn::ttft_ms() const { return delta_times.empty() ? 0 : ms(sent, first_delta); }
double Turn::total_ms() const { return finished ? ms(sent, done) : 0; }
double Turn::tokens_per_s() const {
    if (delta_times.empty() || output_tokens <= 0) return 0;
    const double t = ms(first_delta, done);
    // A stream shorter than this is a burst (a verified draft block, a tiny model): a rate over its few
    // microseconds says nothing, so the whole request's rate stands in.
    constexpr double kMinStreamMs = 10;
    if (delta_times.size() > 1 && t >= kMinStreamMs) return (output_tokens - 1) * 1000.0 / t;
    const double all = ms(sent, done);
    return all > 0 ? output_tokens * 1000.0 / all : 0;
}

}  // namespace flint::client
