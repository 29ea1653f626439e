#include "server/responses_api.h"

#include <chrono>
#include <cmath>

#include "server/errors.h"
#include "server/json_fields.h"
#include "server/output_format.h"
#include "tokenizer/tokenizer.h"

namespace flint::server {
namespace {

int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Responses content parts: input_text (the default), output_text (assistant turns) and plain text.
std::string content_text(const json& content, const std::string& param) {
    return text_content(content, param, {"input_text", "output_text", "text"});
}

InputItem parse_item(const json& item, const std::string& param, bool& skip) {
    if (!item.is_object()) wrong_type(param, "an object");
    InputItem it;
    std::string type = opt_string(item, "type", param + ".type").value_or("message");
    skip = false;
    if (type == "message") {
        it.kind = InputItem::Kind::Message;
        auto role = opt_string(item, "role", param + ".role");
        if (!role) throw bad_request("Missing required parameter: '" + param + ".role'.", param + ".role", "missing_required_parameter");
        if (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer")
            throw bad_request("Invalid value for '" + param + ".role': '" + *role + "'.", param + ".role", "invalid_value");
        it.role = *role;
        const json* c = field(item, "content");
        it.text = c ? content_text(*c, param + ".content") : "";
    } else if (type == "function_call") {
        it.kind = InputItem::Kind::FunctionCall;
        it.call_id = opt_string(item, "call_id", param + ".call_id").value_or("");
        it.name = opt_string(item, "name", param + ".name").value_or("");
        it.arguments = opt_string(item, "arguments", param + ".arguments").value_or("{}");
    } else if (type == "function_call_output") {
        it.kind = InputItem::Kind::FunctionCallOutput;
        it.call_id = opt_string(item, "call_id", param + ".call_id").value_or("");
        const json* o = field(item, "output");
        it.output = o ? content_text(*o, param + ".output") : "";
    } else {
        skip = true;  // reasoning and other item kinds carry nothing a text model can use
    }
    return it;
}

void parse_input(const json& body, ResponsesRequest& r) {
    const json* in = field(body, "input");
    if (!in) return;
    if (in->is_string()) {
        r.input.push_back(InputItem::message("user", in->get<std::string>()));
        r.input_json = json::array({{{"type", "message"}, {"role", "user"},
                                     {"content", json::array({{{"type", "input_text"}, {"text", *in}}})}}});
        return;
    }
    if (!in->is_array()) wrong_type("input", "a string or an array of items");
    for (size_t i = 0; i < in->size(); ++i) {
        bool skip = false;
        InputItem it = parse_item((*in)[i], "input[" + std::to_string(i) + "]", skip);
        if (skip) continue;
        r.input.push_back(std::move(it));
        r.input_json.push_back((*in)[i]);
    }
}

}  // namespace

std::optional<std::string> parse_prediction(const json& body) {
    const json* p = field(body, "prediction");
    if (!p) return std::nullopt;
    if (!p->is_object()) wrong_type("prediction", "an object");
    std::string type = opt_string(*p, "type", "prediction.type").value_or("content");
    if (type != "content") throw bad_request("Invalid value for 'prediction.type': only 'content' is supported.", "prediction.type");
    const json* c = field(*p, "content");
    if (!c) return std::nullopt;
    return content_text(*c, "prediction.content");
}

ResponsesRequest parse_responses_request(const json& body) {
    ResponsesRequest r;
    r.model = opt_string(body, "model", "model").value_or("");
    parse_input(body, r);
    r.instructions = opt_string(body, "instructions", "instructions");
    r.previous_response_id = opt_string(body, "previous_response_id", "previous_response_id").value_or("");
    // Server-side objects flint does not keep: refused by name rather than ignored (the answer would
    // silently lack the conversation's items or the stored prompt).
    if (field(body, "conversation"))
        throw bad_request("'conversation' is not supported: flint has no Conversations API. Chain turns with "
                          "'previous_response_id' (or send the items in 'input').",
                          "conversation", "unsupported_parameter");
    if (field(body, "prompt"))
        throw bad_request("'prompt' (a stored prompt template) is not supported: send its text as 'instructions' and 'input'.",
                          "prompt", "unsupported_parameter");
    r.store = opt_bool(body, "store", "store").value_or(true);
    r.stream = opt_bool(body, "stream", "stream").value_or(false);
    r.background = opt_bool(body, "background", "background").value_or(false);
    r.generate = opt_bool(body, "generate", "generate").value_or(true);
    r.max_output_tokens = opt_int(body, "max_output_tokens", "max_output_tokens", 1, 1 << 24);
    r.temperature = opt_number(body, "temperature", "temperature", 0, 2);
    r.top_p = opt_number(body, "top_p", "top_p", 0, 1);
    r.top_logprobs = static_cast<int>(opt_int(body, "top_logprobs", "top_logprobs", 0, 20).value_or(0));
    if (auto s = opt_int(body, "seed", "seed", INT64_MIN, INT64_MAX)) r.seed = static_cast<uint64_t>(*s);
    if (const json* t = field(body, "tools")) {
        check_tools(*t);
        r.tools = *t;
    }
    if (const json* tc = field(body, "tool_choice")) {
        check_tool_choice(*tc);
        r.tool_choice = *tc;
    }
    r.parallel_tool_calls = opt_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true);
    r.truncation = opt_string(body, "truncation", "truncation").value_or("disabled");
    if (r.truncation != "disabled" && r.truncation != "auto")
        throw bad_request("Invalid value for 'truncation': expected 'disabled' or 'auto'.", "truncation", "invalid_value");
    if (const json* m = field(body, "metadata")) {
        if (!m->is_object()) wrong_type("metadata", "an object");
        if (m->size() > 16) throw bad_request("Invalid 'metadata': at most 16 pairs.", "metadata", "invalid_value");
        for (auto& [k, v] : m->items())
            if (!v.is_string()) wrong_type("metadata." + k, "a string");
        r.metadata = *m;
    }
    r.service_tier = opt_string(body, "service_tier", "service_tier").value_or("auto");
    if (const json* t = field(body, "text")) {
        if (!t->is_object()) wrong_type("text", "an object");
        if (const json* f = field(*t, "format")) r.format = output_format(*f, "text.format", FormatApi::Responses);
        r.text = *t;
    }
    if (const json* t = field(body, "reasoning")) r.reasoning = *t;
    if (const json* inc = field(body, "include")) {
        if (!inc->is_array()) wrong_type("include", "an array");
        for (const json& v : *inc) r.include_logprobs = r.include_logprobs || v == "message.output_text.logprobs";
    }
    r.include_logprobs = r.include_logprobs || r.top_logprobs > 0;
    r.prompt_cache_key = opt_string(body, "prompt_cache_key", "prompt_cache_key").value_or("");
    r.user = opt_string(body, "user", "user").value_or("");
    r.prediction = parse_prediction(body);
    r.stream_timestamps = opt_bool(body, "stream_timestamps", "stream_timestamps").value_or(false);
    return r;
}

json responses_usage(const Usage& u) {
    json out_details = {{"reasoning_tokens", 0}};
    if (u.accepted_prediction_tokens || u.rejected_prediction_tokens) {
        out_details["accepted_prediction_tokens"] = u.accepted_prediction_tokens;
        out_details["rejected_prediction_tokens"] = u.rejected_prediction_tokens;
    }
    return {{"input_tokens", u.prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
            {"output_tokens", u.completion_tokens},
            {"output_tokens_details", out_details},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

namespace {

double ms3(double v) { return std::round(v * 1000) / 1000; }  // microsecond resolution is plenty

json timings_object(const ResponseRecord& r) {
    const Timings& t = r.timings;
    json j = {{"queued_ms", ms3(t.queued_ms)},     {"prefill_ms", ms3(t.prefill_ms)}, {"first_token_ms", ms3(t.first_token_ms)},
              {"decode_ms", ms3(t.decode_ms)},     {"total_ms", ms3(t.total_ms)},     {"compute_ms", ms3(t.compute_ms)},
              {"steps", t.steps}};
    if (r.prepare_ms >= 0) j["prepare_ms"] = ms3(r.prepare_ms);
    if (r.req.stream_timestamps) {
        j["received_us"] = r.received_us;
        j["finished_us"] = r.finished_us;
    }
    return j;
}

}  // namespace

namespace {

// Whether a member of the response object can change once the response is prepared: most are the request's
// parameters and ids, fixed; the rest change as it runs (`timings` is absent until it finishes).
enum class Member { Fixed, Changing };

// The response object's members, in key order, each handed to put(key, kind, value) with `value` a callable
// that gives its JSON (a discarded value: the member is absent): one list for the two ways the object is
// made (response_object, a DOM; append_response_object, its text), so they cannot disagree.
template <class Put>
void response_members(const ResponseRecord& r, Put&& put) {
    const ResponsesRequest& q = r.req;
    auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
    auto str_or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    using M = Member;
    put("background", M::Fixed, [&] { return json(q.background); });
    put("completed_at", M::Changing, [&] { return r.completed_at ? json(r.completed_at) : json(nullptr); });
    put("created_at", M::Fixed, [&] { return json(r.created_at); });
    put("error", M::Changing, [&]() -> const json& { return r.error; });
    put("id", M::Fixed, [&] { return json(r.id); });
    put("incomplete_details", M::Changing, [&]() -> const json& { return r.incomplete_details; });
    put("instructions", M::Fixed, [&] { return opt(q.instructions); });
    put("max_output_tokens", M::Fixed, [&] { return opt(q.max_output_tokens); });
    put("metadata", M::Fixed, [&]() -> const json& { return q.metadata; });
    put("model", M::Fixed, [&] { return json(r.model); });
    put("object", M::Fixed, [] { return json("response"); });
    put("output", M::Changing, [&]() -> const json& { return r.output; });
    put("parallel_tool_calls", M::Fixed, [&] { return json(q.parallel_tool_calls); });
    put("previous_response_id", M::Fixed, [&] { return str_or_null(q.previous_response_id); });
    put("prompt_cache_key", M::Fixed, [&] { return str_or_null(q.prompt_cache_key); });
    put("reasoning", M::Fixed, [&]() -> const json& { return q.reasoning; });
    put("service_tier", M::Fixed, [&] { return json(q.service_tier); });
    put("status", M::Changing, [&] { return json(r.status); });
    put("store", M::Fixed, [&] { return json(q.store); });
    put("temperature", M::Fixed, [&] { return json(q.temperature.value_or(1.0)); });
    put("text", M::Fixed, [&]() -> const json& { return q.text; });
    put("timings", M::Changing, [&] { return r.completed_at ? timings_object(r) : json(json::value_t::discarded); });
    put("tool_choice", M::Fixed, [&]() -> const json& { return q.tool_choice; });
    put("tools", M::Fixed, [&]() -> const json& { return q.tools; });
    put("top_logprobs", M::Fixed, [&] { return json(q.top_logprobs); });
    put("top_p", M::Fixed, [&] { return json(q.top_p.value_or(1.0)); });
    put("truncation", M::Fixed, [&] { return json(q.truncation); });
    put("usage", M::Changing, [&]() -> const json& { return r.usage; });
    put("user", M::Fixed, [&] { return str_or_null(q.user); });
}

}  // namespace

json response_object(const ResponseRecord& r) {
    // Built member by member, in key order (the object's map keeps its keys sorted, so each insertion goes
    // at its end): a braced list copies every value twice (microbenchmark: 15 -> 6 us warm, 50 -> 33 us cold).
    json o(json::value_t::object);
    json::object_t& f = *o.get_ptr<json::object_t*>();
    response_members(r, [&f](const char* key, Member, auto&& value) {
        decltype(auto) v = value();
        if (!v.is_discarded()) f.emplace_hint(f.end(), key, std::move(v));
    });
    return o;
}

void append_response_object(std::string& out, const ResponseRecord& r, FixedMembers* fixed) {
    // With `fixed`, the first call keeps the fixed members' text, run by run between the changing ones, and
    // later calls write those runs as kept: only the changing members are made and dumped again.
    const bool keep = fixed && fixed->runs.empty();
    const bool reuse = fixed && !keep;
    size_t run = 0;
    std::string kept;
    char sep = '{';
    auto write = [&sep](std::string& s, const char* key, const json& v) {
        s += sep;
        sep = ',';
        s += '"';
        s += key;
        s += "\":";
        s += dump(v);
    };
    auto end_run = [&] {
        if (keep) {
            out += kept;
            fixed->runs.push_back(std::move(kept));
            kept.clear();
        } else if (reuse) {
            out += fixed->runs.at(run++);
        }
    };
    response_members(r, [&](const char* key, Member kind, auto&& value) {
        if (kind == Member::Fixed) {
            if (reuse) sep = ',';  // written with its run
            else write(keep ? kept : out, key, value());
            return;
        }
        end_run();
        decltype(auto) v = value();
        if (!v.is_discarded()) write(out, key, v);
    });
    end_run();
    out += '}';
}

json input_items_with_ids(const json& items) {
    json out = json::array();
    for (json it : items) {
        if (!it.contains("type")) it["type"] = "message";
        if (!it.contains("id")) it["id"] = make_id(it["type"] == "message" ? "msg_" : it["type"] == "function_call" ? "fc_" : "fco_");
        if (it["type"] == "message" && it.contains("content") && it["content"].is_string())
            it["content"] = json::array({{{"type", "input_text"}, {"text", it["content"]}}});
        out.push_back(std::move(it));
    }
    return out;
}

std::string token_piece(const Tokenizer& tok, int32_t id) {
    return id >= 0 && id < tok.n_vocab() ? tok.token_to_piece(id) : std::string();
}

json token_logprobs(const Tokenizer& tok, const Event& ev) {
    auto entry = [&](int32_t id, float lp) {
        const std::string s = token_piece(tok, id);
        json bytes = json::array();
        for (unsigned char c : s) bytes.push_back(c);
        return json{{"token", s}, {"logprob", lp}, {"bytes", bytes}};
    };
    json e = entry(ev.token, ev.logprob);
    json top = json::array();
    for (const TokenProb& t : ev.top_logprobs) top.push_back(entry(t.id, t.p));
    e["top_logprobs"] = top;
    return e;
}

// ---- event state machine ----------------------------------------------------------------------------

ResponseEvents::ResponseEvents(ResponseRecord& rec, const Tokenizer& tok) : rec_(rec), tok_(tok) {
    tools_ = rec.req.tools.is_array() && !rec.req.tools.empty() && rec.req.tool_choice != "none";
    if (tools_ && !rec.forced_prefix.empty()) calls_.feed(rec.forced_prefix);  // the call the model completes
}

json ResponseEvents::ev(const char* type) { return json{{"type", type}, {"sequence_number", seq_++}}; }

void ResponseEvents::push(json e, std::vector<WireEvent>& out) {
    std::string type = e["type"].get<std::string>();
    out.push_back({std::move(type), dump(e)});
}

void ResponseEvents::start(std::vector<WireEvent>& out) {
    for (const char* type : {"response.created", "response.in_progress"}) response_event(type, out);
}

void ResponseEvents::response_event(const char* type, std::vector<WireEvent>& out) {
    std::string e = R"({"response":)";
    append_response_object(e, rec_, &fixed_);
    close_event(e, type, out);
}

// The message's events are written out directly, keys in dump()'s (sorted) order, as the delta is (see
// emit_text): they are built on the way from the engine to the client, with the caches cold (opening the
// item and part with the first token: 48 -> 16 us, stamped; BENCHMARKS.md "Latency"). protocol_test parses
// each back and checks it is byte for byte what dump() writes.
void ResponseEvents::open_message(std::vector<WireEvent>& out) {
    if (message_open_) return;
    message_open_ = true;
    msg_id_ = make_id("msg_");
    const std::string idx = std::to_string(rec_.output.size());
    std::string a = R"({"item":{"content":[],"id":)";
    append_json_string(a, msg_id_);
    a += R"(,"role":"assistant","status":"in_progress","type":"message"},"output_index":)" + idx;
    close_event(a, "response.output_item.added", out);
    std::string p = R"({"content_index":0,"item_id":)";
    append_json_string(p, msg_id_);
    p += R"(,"output_index":)" + idx + R"(,"part":{"annotations":[],"logprobs":[],"text":"","type":"output_text"})";
    close_event(p, "response.content_part.added", out);
}

void ResponseEvents::close_event(std::string& e, const char* type, std::vector<WireEvent>& out, std::string_view tail) {
    e += R"(,"sequence_number":)";
    e += std::to_string(seq_++);
    e += tail;
    e += R"(,"type":")";
    e += type;
    e += "\"}";
    out.push_back({type, std::move(e)});
}

void ResponseEvents::emit_text(const std::string& delta, std::vector<WireEvent>& out, int64_t t_us) {
    json lps = pending_lp_.take(delta, calls_.in_call());  // (only fed with tools)
    if (delta.empty()) return;
    open_message(out);
    text_ += delta;
    for (const json& l : lps) logprobs_.push_back(l);
    // Written out directly, keys in dump()'s (sorted) order: one goes out per token, and with the caches
    // cold, as the engine's pass over the KV cache leaves them, building and dumping its DOM took ~35 us
    // (this: ~19 us; warm 2.5 -> 0.7 us; microbenchmark in BENCHMARKS.md "Latency").
    static constexpr char kType[] = "response.output_text.delta";
    std::string d;
    d.reserve(192 + delta.size());
    d += R"({"content_index":0,"delta":)";
    append_json_string(d, delta);
    d += R"(,"item_id":)";
    append_json_string(d, msg_id_);
    d += R"(,"logprobs":)";
    d += lps.empty() ? std::string("[]") : dump(lps);
    d += R"(,"output_index":)";
    d += std::to_string(rec_.output.size());
    close_event(d, kType, out, rec_.req.stream_timestamps ? R"(,"t_us":)" + std::to_string(t_us) : std::string());
}

void ResponseEvents::token(const Event& e, std::vector<WireEvent>& out, int64_t t_us) {
    if (rec_.req.include_logprobs && e.token >= 0) pending_lp_.push(token_logprobs(tok_, e));
    emit_text(tools_ ? calls_.feed(e.text) : e.text, out, t_us);
}

json ResponseEvents::text_part() const {
    return {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}, {"logprobs", logprobs_}};
}

json ResponseEvents::message_item(const char* status) const {
    return {{"id", msg_id_}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", json::array({text_part()})}};
}

json ResponseEvents::partial() const {
    json r = response_object(rec_);
    if (message_open_) r["output"].push_back(message_item("in_progress"));
    return r;
}

void ResponseEvents::finish(const Event& fin, std::vector<int32_t> prompt, std::vector<WireEvent>& out, int64_t t_us) {
    if (!fin.text.empty()) token(fin, out, t_us);  // text the runtime held back until the end (a flush)
    rec_.finished_us = t_us;
    rec_.history = std::move(prompt);
    rec_.history.insert(rec_.history.end(), fin.output.begin(), fin.output.end());
    rec_.timings = fin.timings;
    rec_.usage = responses_usage(fin.usage);
    const bool generated = fin.finish != FinishReason::Prefilled;
    ParsedOutput parsed = calls_.finish(rec_.req.parallel_tool_calls);
    emit_text(parsed.text, out, t_us);  // the held tail; a malformed <tool_call> stays visible text
    const bool cancelled = fin.finish == FinishReason::Cancelled;
    const bool truncated = fin.finish == FinishReason::Length || fin.finish == FinishReason::ContextFull;
    const char* item_status = cancelled || truncated ? "incomplete" : "completed";
    if (generated && (!message_open_ && parsed.calls.empty())) open_message(out);  // an empty answer is still an answer
    if (message_open_) {
        const std::string idx = std::to_string(rec_.output.size());
        std::string id, text;
        append_json_string(id, msg_id_);
        append_json_string(text, text_);
        const std::string lps = logprobs_.empty() ? std::string("[]") : dump(logprobs_);
        const std::string part = R"({"annotations":[],"logprobs":)" + lps + R"(,"text":)" + text + R"(,"type":"output_text"})";
        std::string d = R"({"content_index":0,"item_id":)" + id + R"(,"logprobs":)" + lps + R"(,"output_index":)" + idx;
        close_event(d, "response.output_text.done", out, R"(,"text":)" + text);
        std::string pd = R"({"content_index":0,"item_id":)" + id + R"(,"output_index":)" + idx + R"(,"part":)" + part;
        close_event(pd, "response.content_part.done", out);
        std::string od = R"({"item":{"content":[)" + part + R"(],"id":)" + id + R"(,"role":"assistant","status":")" +
                         item_status + R"(","type":"message"},"output_index":)" + idx;
        close_event(od, "response.output_item.done", out);
        rec_.output.push_back(message_item(item_status));
    }
    for (const ParsedToolCall& c : parsed.calls) {
        const size_t idx = rec_.output.size();
        std::string fc_id = make_id("fc_");
        json item = {{"id", fc_id}, {"type", "function_call"}, {"status", "in_progress"}, {"call_id", make_id("call_")},
                     {"name", c.name}, {"arguments", ""}};
        json a = ev("response.output_item.added");
        a["output_index"] = idx;
        a["item"] = item;
        push(std::move(a), out);
        json d = ev("response.function_call_arguments.delta");
        d["item_id"] = fc_id;
        d["output_index"] = idx;
        d["delta"] = c.arguments;
        push(std::move(d), out);
        json dd = ev("response.function_call_arguments.done");
        dd["item_id"] = fc_id;
        dd["output_index"] = idx;
        dd["arguments"] = c.arguments;
        push(std::move(dd), out);
        item["arguments"] = c.arguments;
        item["status"] = "completed";
        json od = ev("response.output_item.done");
        od["output_index"] = idx;
        od["item"] = item;
        push(std::move(od), out);
        rec_.output.push_back(std::move(item));
    }
    rec_.completed_at = now_s();
    const char* terminal = "response.completed";
    if (fin.finish == FinishReason::Error) {
        rec_.status = "failed";
        rec_.error = {{"code", "server_error"}, {"message", fin.error.empty() ? "generation failed" : fin.error}};
        terminal = "response.failed";
    } else if (cancelled) {
        rec_.status = "cancelled";
        rec_.incomplete_details = {{"reason", "cancelled"}};
        terminal = "response.incomplete";
    } else if (truncated) {
        rec_.status = "incomplete";
        rec_.incomplete_details = {{"reason", "max_output_tokens"}};
        terminal = "response.incomplete";
    } else {
        rec_.status = "completed";
    }
    response_event(terminal, out);
}

}  // namespace flint::server
