#include "server/chat_completions_api.h"

#include <cstdlib>
#include <limits>

#include "server/errors.h"
#include "server/json_fields.h"
#include "server/output_format.h"
#include "server/responses_api.h"

namespace flint::server {
namespace {

void parse_params(const json& body, CompletionParams& p, int64_t default_max) {
    p.model = opt_string(body, "model", "model").value_or("");
    p.stream = opt_bool(body, "stream", "stream").value_or(false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) wrong_type("stream_options", "an object");
        p.include_usage = opt_bool(*so, "include_usage", "stream_options.include_usage").value_or(false);
    }
    p.max_tokens = opt_int(body, "max_completion_tokens", "max_completion_tokens", 1, 1 << 24);
    if (!p.max_tokens) p.max_tokens = opt_int(body, "max_tokens", "max_tokens", 1, 1 << 24);
    if (!p.max_tokens && default_max > 0) p.max_tokens = default_max;
    p.temperature = opt_number(body, "temperature", "temperature", 0, 2);
    p.top_p = opt_number(body, "top_p", "top_p", 0, 1);
    p.presence_penalty = opt_number(body, "presence_penalty", "presence_penalty", -2, 2);
    p.frequency_penalty = opt_number(body, "frequency_penalty", "frequency_penalty", -2, 2);
    if (auto s = opt_int(body, "seed", "seed", INT64_MIN, INT64_MAX)) p.seed = static_cast<uint64_t>(*s);
    if (const json* st = field(body, "stop")) {
        if (st->is_string()) p.stop.push_back(st->get<std::string>());
        else if (st->is_array()) {
            if (st->size() > 4) throw bad_request("Invalid 'stop': at most 4 sequences.", "stop", "invalid_value");
            for (size_t i = 0; i < st->size(); ++i) {
                if (!(*st)[i].is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string");
                p.stop.push_back((*st)[i].get<std::string>());
            }
        } else {
            wrong_type("stop", "a string or an array of strings");
        }
    }
    if (const json* lb = field(body, "logit_bias")) {
        if (!lb->is_object()) wrong_type("logit_bias", "an object of token id → bias");
        for (auto& [k, v] : lb->items()) {
            const std::string param = "logit_bias." + k;
            char* end = nullptr;
            const long id = std::strtol(k.c_str(), &end, 10);
            if (k.empty() || k[0] < '0' || k[0] > '9' || *end != '\0' || id < 0 || id > INT32_MAX)
                throw bad_request("Invalid 'logit_bias': keys are token ids (non-negative integers); found '" + k + "'.", param,
                                  "invalid_value");
            if (!v.is_number()) wrong_type(param, "a number");
            const double b = v.get<double>();
            if (!(b >= -100 && b <= 100))
                throw bad_request("Invalid '" + param + "': " + dump(v) + " is out of range [-100, 100].", param, "invalid_value");
            p.logit_bias.push_back({static_cast<int32_t>(id), b <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(b)});
        }
    }
    p.n = static_cast<int>(opt_int(body, "n", "n", 1, kMaxChoices).value_or(1));
    p.prediction = parse_prediction(body);
    if (const json* f = field(body, "response_format")) p.format = output_format(*f, "response_format", FormatApi::Chat);
}

// The deprecated function-calling form: `functions` (a list of {name, description, parameters}) and
// `function_call` ("none", "auto" or {name}) become the tools and tool_choice they stand for.
void parse_legacy_functions(const json& body, ChatRequest& r) {
    const json* fs = field(body, "functions");
    const json* fc = field(body, "function_call");
    if (!fs && !fc) return;
    if (fs && field(body, "tools"))
        throw bad_request("Give either 'functions' (deprecated) or 'tools', not both.", "functions", "invalid_value");
    if (fc && field(body, "tool_choice"))
        throw bad_request("Give either 'function_call' (deprecated) or 'tool_choice', not both.", "function_call", "invalid_value");
    if (fc && !fs) throw bad_request("'function_call' needs 'functions'.", "function_call", "invalid_value");
    if (!fs->is_array()) wrong_type("functions", "an array");
    if (fs->empty()) throw bad_request("Invalid 'functions': empty array. Expected at least one function.", "functions", "empty_array");
    json tools = json::array();
    for (size_t i = 0; i < fs->size(); ++i) {
        const std::string param = "functions[" + std::to_string(i) + "]";
        if (!(*fs)[i].is_object()) wrong_type(param, "an object {name, description, parameters}");
        check_function((*fs)[i], param);
        tools.push_back({{"type", "function"}, {"function", (*fs)[i]}});
    }
    r.tools = std::move(tools);
    if (fc) {
        if (*fc == "none" || *fc == "auto") {
            r.tool_choice = *fc;
        } else {
            const std::optional<std::string> name = fc->is_object() ? opt_string(*fc, "name", "function_call.name") : std::nullopt;
            if (!name)
                throw bad_request("Invalid 'function_call': expected \"none\", \"auto\" or {\"name\": …}.", "function_call",
                                  "invalid_value");
            bool known = false;
            for (const json& f : *fs) known = known || f["name"] == *name;
            if (!known)
                throw bad_request("Invalid 'function_call': function '" + *name + "' is not among the functions.", "function_call",
                                  "invalid_value");
            r.tool_choice = {{"type", "function"}, {"function", {{"name", *name}}}};
        }
    }
    r.legacy_functions = true;
    r.parallel_tool_calls = false;  // the deprecated form has room for one call
}

}  // namespace

ChatRequest parse_chat_request(const json& body) {
    ChatRequest r;
    parse_params(body, r.p, 0);
    if (const json* lp = field(body, "logprobs")) {
        if (!lp->is_boolean()) wrong_type("logprobs", "a boolean");
        r.p.logprobs = lp->get<bool>();
    }
    r.p.top_logprobs = static_cast<int>(opt_int(body, "top_logprobs", "top_logprobs", 0, 20).value_or(0));
    if (r.p.top_logprobs > 0 && !r.p.logprobs)
        throw bad_request("Invalid 'top_logprobs': it needs 'logprobs' set to true.", "top_logprobs", "invalid_value");
    // What flint cannot do, refused by name rather than answered without it.
    if (field(body, "audio"))
        throw bad_request("'audio' output is not supported: flint answers in text.", "audio", "unsupported_parameter");
    if (const json* mod = field(body, "modalities")) {
        if (!mod->is_array()) wrong_type("modalities", "an array");
        for (const json& m : *mod)
            if (m != "text")
                throw bad_request("Invalid 'modalities': flint answers in text only (found " + dump(m) + ").", "modalities",
                                  "unsupported_parameter");
    }
    if (field(body, "web_search_options"))
        throw bad_request("'web_search_options' is not supported: flint has no web search.", "web_search_options",
                          "unsupported_parameter");
    const json* msgs = field(body, "messages");
    if (!msgs) throw bad_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
    if (!msgs->is_array()) wrong_type("messages", "an array");
    if (msgs->empty()) throw bad_request("Invalid 'messages': empty array. Expected at least one message.", "messages", "empty_array");
    for (size_t i = 0; i < msgs->size(); ++i) {
        const json& m = (*msgs)[i];
        std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) wrong_type(param, "an object");
        auto role = opt_string(m, "role", param + ".role");
        if (!role) throw bad_request("Missing required parameter: '" + param + ".role'.", param + ".role", "missing_required_parameter");
        const json* c = field(m, "content");
        std::string text = c ? text_content(*c, param + ".content", {"text"}) : "";
        if (*role == "tool" || *role == "function") {  // "function": the deprecated form's result, by name
            InputItem it;
            it.kind = InputItem::Kind::FunctionCallOutput;
            it.call_id = opt_string(m, "tool_call_id", param + ".tool_call_id").value_or("");
            it.output = text;
            r.messages.push_back(std::move(it));
            continue;
        }
        if (*role != "system" && *role != "developer" && *role != "user" && *role != "assistant")
            throw bad_request("Invalid value for '" + param + ".role': '" + *role + "'.", param + ".role", "invalid_value");
        if (!text.empty() || *role != "assistant" || !(field(m, "tool_calls") || field(m, "function_call")))
            r.messages.push_back(InputItem::message(*role, text));
        if (const json* fc = field(m, "function_call"); fc && *role == "assistant") {  // the deprecated form's call
            if (!fc->is_object()) wrong_type(param + ".function_call", "an object {name, arguments}");
            InputItem it;
            it.kind = InputItem::Kind::FunctionCall;
            it.name = opt_string(*fc, "name", param + ".function_call.name").value_or("");
            it.arguments = opt_string(*fc, "arguments", param + ".function_call.arguments").value_or("{}");
            r.messages.push_back(std::move(it));
        }
        if (const json* tcs = field(m, "tool_calls")) {
            if (!tcs->is_array()) wrong_type(param + ".tool_calls", "an array");
            for (size_t k = 0; k < tcs->size(); ++k) {
                const json& tc = (*tcs)[k];
                const std::string at = param + ".tool_calls[" + std::to_string(k) + "]";
                if (!tc.is_object() || !tc.contains("function") || !tc["function"].is_object())
                    wrong_type(at, "an object {id, type, function}");
                InputItem it;
                it.kind = InputItem::Kind::FunctionCall;
                it.call_id = opt_string(tc, "id", at + ".id").value_or("");
                it.name = opt_string(tc["function"], "name", at + ".function.name").value_or("");
                it.arguments = opt_string(tc["function"], "arguments", at + ".function.arguments").value_or("{}");
                r.messages.push_back(std::move(it));
            }
        }
    }
    if (const json* t = field(body, "tools")) {
        check_tools(*t);
        r.tools = *t;
    }
    if (const json* tc = field(body, "tool_choice")) {
        check_tool_choice(*tc);
        r.tool_choice = *tc;
    }
    r.parallel_tool_calls = opt_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true);
    parse_legacy_functions(body, r);
    return r;
}

namespace {

// A prompt given as token ids: integers only (their range is the model's to check).
std::vector<int32_t> token_ids(const json& a) {
    std::vector<int32_t> ids;
    for (const json& v : a) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
            throw bad_request("Invalid 'prompt': a token-id prompt holds non-negative integers only; found " + dump(v) + ".",
                              "prompt", "invalid_value");
        ids.push_back(v.get<int32_t>());
    }
    return ids;
}

}  // namespace

CompletionRequest parse_completion_request(const json& body) {
    CompletionRequest r;
    parse_params(body, r.p, 16);  // the legacy endpoint's documented default
    // best_of > 1 would pick the n best of several by likelihood; flint returns every choice it makes.
    if (auto b = opt_int(body, "best_of", "best_of", 1, 20); b && *b != 1)
        throw bad_request("'best_of' other than 1 is not supported: ask for 'n' choices and pick among them.", "best_of",
                          "unsupported_parameter");
    if (const json* lp = field(body, "logprobs")) {
        if (!lp->is_number_integer()) wrong_type("logprobs", "an integer");
        r.p.top_logprobs = std::clamp(lp->get<int>(), 0, 5);
        r.p.logprobs = true;
    }
    const json* pr = field(body, "prompt");
    if (!pr) r.prompt = "";
    else if (pr->is_string()) r.prompt = pr->get<std::string>();
    else if (pr->is_array() && pr->empty()) r.prompt = "";
    else if (pr->is_array() && pr->size() == 1 && (*pr)[0].is_string()) r.prompt = (*pr)[0].get<std::string>();
    else if (pr->is_array() && pr->size() == 1 && (*pr)[0].is_array()) r.prompt_tokens = token_ids((*pr)[0]);
    else if (pr->is_array() && !pr->empty() && (*pr)[0].is_number()) r.prompt_tokens = token_ids(*pr);
    else if (pr->is_array()) throw bad_request("Invalid 'prompt': this server takes one prompt per request.", "prompt", "invalid_value");
    else wrong_type("prompt", "a string, or an array of token ids");
    r.suffix = opt_string(body, "suffix", "suffix");
    r.echo = opt_bool(body, "echo", "echo").value_or(false);
    r.repo_name = opt_string(body, "repo_name", "repo_name");
    r.path = opt_string(body, "path", "path");
    if (const json* files = field(body, "context_files")) {
        if (!files->is_array()) wrong_type("context_files", "an array of {path, content} objects");
        for (size_t i = 0; i < files->size(); ++i) {
            const std::string at = "context_files[" + std::to_string(i) + "]";
            const json& f = (*files)[i];
            if (!f.is_object()) wrong_type(at, "an object with 'path' and 'content'");
            auto path = opt_string(f, "path", at + ".path");
            auto content = opt_string(f, "content", at + ".content");
            if (!path || !content) throw bad_request("'" + at + "' needs both 'path' and 'content'.", at, "invalid_value");
            r.context_files.push_back({std::move(*path), std::move(*content)});
        }
    }
    if (auto band = opt_int(body, "fim_band_lines", "fim_band_lines", 0, 1 << 20)) r.fim_band_lines = static_cast<int>(*band);
    if (r.fim_band_lines && !r.suffix)
        throw bad_request("'fim_band_lines' is for fill-in-the-middle: give 'suffix' too.", "fim_band_lines", "invalid_value");
    if (const char* repo = r.repo_field(); repo && !r.suffix)
        throw bad_request("'repo_name', 'path' and 'context_files' are for fill-in-the-middle: give 'suffix' too.", repo,
                          "invalid_value");
    return r;
}

json chat_usage(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
            {"completion_tokens_details",
             {{"reasoning_tokens", 0},
              {"accepted_prediction_tokens", u.accepted_prediction_tokens},
              {"rejected_prediction_tokens", u.rejected_prediction_tokens}}}};
}

std::string finish_reason_string(FinishReason f, bool tool_calls) {
    if (tool_calls) return "tool_calls";
    if (f == FinishReason::Length || f == FinishReason::ContextFull) return "length";
    return "stop";
}

json chat_choice(int index, const std::string& content, const json& tool_calls, const std::string& finish_reason, const json& logprobs) {
    json msg = {{"role", "assistant"}, {"content", content}, {"refusal", nullptr}};
    if (tool_calls.is_array() && !tool_calls.empty()) msg["tool_calls"] = tool_calls;
    return {{"index", index}, {"message", msg}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
}

json chat_completion_object(const std::string& id, const std::string& model, int64_t created, const json& choices, const Usage& u) {
    return {{"id", id},
            {"object", "chat.completion"},
            {"created", created},
            {"model", model},
            {"system_fingerprint", "flint"},
            {"choices", choices},
            {"usage", chat_usage(u)}};
}

json chat_chunk(const std::string& id, const std::string& model, int64_t created, int index, const json& delta,
                const json& finish_reason, const json& logprobs) {
    return {{"id", id},
            {"object", "chat.completion.chunk"},
            {"created", created},
            {"model", model},
            {"system_fingerprint", "flint"},
            {"choices", json::array({{{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}})}};
}

json chat_usage_chunk(const std::string& id, const std::string& model, int64_t created, const Usage& u) {
    return {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
            {"system_fingerprint", "flint"}, {"choices", json::array()}, {"usage", chat_usage(u)}};
}

json completion_choice(int index, const std::string& text, const json& finish_reason, const json& logprobs) {
    return {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
}

json completion_object(const std::string& id, const std::string& model, int64_t created, const json& choices, const Usage& u) {
    return {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}, {"choices", choices}, {"usage", chat_usage(u)}};
}

json completion_chunk(const std::string& id, const std::string& model, int64_t created, int index, const std::string& text,
                      const json& finish_reason, const json& logprobs) {
    return {{"id", id},
            {"object", "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({completion_choice(index, text, finish_reason, logprobs)})}};
}

json legacy_logprobs() {
    return {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()}, {"text_offset", json::array()}};
}

void add_legacy_logprob(json& lp, const Tokenizer& tok, const Event& ev, size_t text_offset) {
    lp["tokens"].push_back(token_piece(tok, ev.token));
    lp["token_logprobs"].push_back(ev.logprob);
    json top = json::object();
    for (const TokenProb& t : ev.top_logprobs) top[token_piece(tok, t.id)] = t.p;
    top[token_piece(tok, ev.token)] = ev.logprob;
    lp["top_logprobs"].push_back(std::move(top));
    lp["text_offset"].push_back(text_offset);
}

}  // namespace flint::server
