#include "server/generation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>

#include "server/errors.h"
#include "server/output_format.h"
#include "server/state.h"
#include "tokenizer/fim.h"

namespace flint::server {
namespace {

constexpr size_t kCacheEntries = 8;
// Room reserved after a Responses prompt for its answer's tokens (prepare_response).
constexpr int64_t kSpareTokens = 4096;

int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t random_seed() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng();
}

ApiError context_error(size_t n, int ctx) {
    return bad_request("Your input is " + std::to_string(n) + " tokens; this model's context window is " + std::to_string(ctx) +
                           " tokens.",
                       "input", "context_length_exceeded");
}

// Output budget: what the client asked for, capped by what the context has left.
int output_budget(const ModelEntry& m, size_t prompt, std::optional<int64_t> requested) {
    int64_t left = static_cast<int64_t>(m.ctx) - static_cast<int64_t>(prompt);
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(left, requested.value_or(left))));
}

void set_sampling(GenerationRequest& g, std::optional<double> temperature, std::optional<double> top_p, std::optional<uint64_t> seed) {
    g.sampling.temperature = static_cast<float>(temperature.value_or(1.0));
    g.sampling.top_p = static_cast<float>(top_p.value_or(1.0));
    g.sampling.seed = seed.value_or(random_seed());
}

std::vector<int32_t> prediction_tokens(const ModelEntry& m, const std::optional<std::string>& p) {
    if (!p || p->empty()) return {};
    return m.tokenizer->encode(*p, false, false);
}

}  // namespace

void ConnectionCache::put(const std::string& id, History h) {
    entries_.emplace_back(id, std::move(h));
    while (entries_.size() > kCacheEntries) entries_.pop_front();
}

const History* ConnectionCache::find(const std::string& id) const {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
        if (it->first == id) return &it->second;
    return nullptr;
}

std::shared_ptr<ModelEntry> resolve_model(ServerState& st, const std::string& name, const ApiKey* key) {
    std::shared_ptr<ModelEntry> m = st.models.find(name);
    if (!m) {
        if (name.empty()) throw bad_request("Missing required parameter: 'model'.", "model", "missing_required_parameter");
        throw not_found("The model '" + name + "' does not exist on this server (GET /v1/models lists them).", "model",
                        "model_not_found");
    }
    st.auth.check_model(key, m->name);
    return m;
}

// A token id a request gives (prompt, logit_bias) must be one of the model's tokens (the parsers checked >= 0).
static void require_in_vocab(const ModelEntry& m, int32_t id, const std::string& field, const std::string& param) {
    if (id >= m.tokenizer->n_vocab())
        throw bad_request("Invalid '" + field + "': token id " + std::to_string(id) + " is not in the vocabulary of '" + m.name +
                              "' (" + std::to_string(m.tokenizer->n_vocab()) + " tokens).",
                          param, "invalid_value");
}

static void check_logit_bias(const ModelEntry& m, const std::vector<std::pair<int32_t, float>>& bias) {
    for (const auto& [id, b] : bias) require_in_vocab(m, id, "logit_bias", "logit_bias." + std::to_string(id));
}

// What the model may do with the request's tools. Those it may not call this turn (tool_choice "none", or
// allowed_tools naming no function): it still sees them, but <tool_call> is banned. Whenever it may call
// (callable tools, a vocab with the <tool_call> token):
// - a JSON-constrained answer may instead be a call: the call's opening token is allowed as its first token
//   (the format then applies to the answer that follows the tool's output, as with OpenAI's models);
// - the call's JSON is constrained to the callable tools' schemas (output_format.h tool_call_schema), so it
//   names one of them, and closed with </tool_call> once complete; with parallel_tool_calls false, the answer
//   ends there (the server would keep only the first call: a second one is not worth generating).
// `forced`: tool_choice's start of a call, already in the prompt, which the output continues. Call after the
// request's own logit_bias is set.
static void set_tool_calls(const ModelEntry& m, const json& tool_choice, const json& tools, bool parallel_calls,
                           const std::string& forced, GenerationRequest& g) {
    if (!tools.is_array() || tools.empty()) return;
    const std::optional<int32_t> open = m.tokenizer->find_token(kToolOpen);
    if (!open) return;
    const json callable = callable_tools(tool_choice, tools);
    if (callable.empty()) {
        g.sampling.logit_bias.push_back({*open, -std::numeric_limits<float>::infinity()});
        return;
    }
    g.call_schema = tool_call_schema(callable);
    g.call_open = *open;
    g.call_close = m.tokenizer->find_token(kToolClose).value_or(-1);
    g.one_call = !parallel_calls;
    if (forced.starts_with(kToolOpen)) g.call_prefix = forced.substr(std::string_view(kToolOpen).size());
}

// tool_choice's forced start of a call (conversation.h), after the rendered prompt: the <tool_call> tag is
// markup, the rest (it holds the client's function name) plain text.
static void append_forced_prefix(const ModelEntry& m, std::vector<int32_t>& prompt, const std::string& prefix) {
    if (prefix.empty()) return;
    const std::string_view open = kToolOpen;
    const bool tagged = prefix.starts_with(open);
    const TextPart parts[] = {{tagged ? std::string(open) : std::string(), true}, {prefix.substr(tagged ? open.size() : 0), false}};
    const std::vector<int32_t> t = m.tokenizer->encode(parts, false);
    prompt.insert(prompt.end(), t.begin(), t.end());
}

namespace {
struct ResponsePrompt {
    std::shared_ptr<ModelEntry> model;
    std::vector<int32_t> tokens;
    std::string forced;  // tool_choice's start of a call, at the end of `tokens`
};
}  // namespace

// The prompt of a Responses request: the history it continues, its own items, tools and a forced call's
// start; truncation "auto" drops items and turns until it fits. req.model is set from the history when the
// client names none.
static ResponsePrompt response_prompt(ServerState& st, ResponsesRequest& req, const ApiKey* key, const ConnectionCache* cache) {
    ResponsePrompt out;
    // The history this request continues: the connection's own (not copied), or one from the store.
    const History* previous = nullptr;
    std::optional<History> owned;
    if (!req.previous_response_id.empty()) {
        previous = cache ? cache->find(req.previous_response_id) : nullptr;
        if (!previous) {
            if (auto s = st.get(req.previous_response_id)) previous = &owned.emplace(std::move(s->history));
        }
        if (!previous)
            throw bad_request("Previous response with id '" + req.previous_response_id + "' not found.", "previous_response_id",
                              "previous_response_not_found");
        // A continuation runs on the model that holds its history, unless the client names another one.
        if (req.model.empty()) req.model = previous->model;
    }
    out.model = resolve_model(st, req.model, key);
    ModelEntry& m = *out.model;
    if (previous && previous->model != m.name)
        throw bad_request("Response '" + req.previous_response_id + "' was made by model '" + previous->model +
                              "'; it cannot be continued with '" + m.name + "'.",
                          "previous_response_id");
    std::vector<InputItem> items = req.input;
    PromptParts parts{req.instructions, items, &req.tools};
    const std::string forced = req.generate ? forced_call_prefix(req.tool_choice, req.tools) : "";
    // The prompt becomes the response's token history when it finishes (ResponseEvents::finish appends the
    // output): room for a typical answer, so that append does not copy the whole conversation after the last
    // token (a longer answer costs one copy then, spread over its tokens).
    const size_t spare = static_cast<size_t>(std::clamp<int64_t>(req.max_output_tokens.value_or(kSpareTokens), 1, kSpareTokens));
    std::vector<int32_t> prompt = build_prompt(m, parts, previous, spare);
    // truncation "auto": drop the oldest items of this request (never the last), then the oldest turns of the
    // conversation it continues (keeping its first turn), until the prompt fits.
    while (req.truncation == "auto" && static_cast<int>(prompt.size()) >= m.ctx && items.size() > 1) {
        items.erase(items.begin());
        parts.items = items;
        prompt = build_prompt(m, parts, previous, spare);
    }
    if (req.truncation == "auto" && static_cast<int>(prompt.size()) >= m.ctx && previous) {
        if (!owned) previous = &owned.emplace(*previous);  // turns are dropped from a copy, never the cache's
        while (static_cast<int>(prompt.size()) >= m.ctx && drop_oldest_turns(m, *owned, prompt.size() - static_cast<size_t>(m.ctx) + 1))
            prompt = build_prompt(m, parts, previous, spare);
    }
    append_forced_prefix(m, prompt, forced);
    out.tokens = std::move(prompt);
    out.forced = forced;
    return out;
}

int64_t count_input_tokens(ServerState& st, ResponsesRequest req, const ApiKey* key) {
    return static_cast<int64_t>(response_prompt(st, req, key, nullptr).tokens.size());
}

PreparedResponse prepare_response(ServerState& st, ResponsesRequest req, const ApiKey* key, const ConnectionCache* cache) {
    PreparedResponse p;
    ResponsePrompt rp = response_prompt(st, req, key, cache);
    p.model = std::move(rp.model);
    ModelEntry& m = *p.model;
    const std::string& forced = rp.forced;
    std::vector<int32_t>& prompt = rp.tokens;
    if (static_cast<int>(prompt.size()) >= m.ctx) throw context_error(prompt.size(), m.ctx);
    if (prompt.empty()) throw bad_request("The input is empty and the model adds no BOS token: nothing to continue.", "input");
    p.gen.max_tokens = output_budget(m, prompt.size(), req.max_output_tokens);
    p.gen.prompt = std::move(prompt);
    set_sampling(p.gen, req.temperature, req.top_p, req.seed);
    if (req.include_logprobs) {
        p.gen.sampling.logprobs = true;
        p.gen.sampling.top_logprobs = req.top_logprobs;
    }
    p.gen.generate = req.generate;
    p.gen.json_schema = forced.empty() ? req.format : nullptr;  // a forced call is the answer: no content to constrain
    set_tool_calls(m, req.tool_choice, req.tools, req.parallel_tool_calls, forced, p.gen);
    p.gen.priority = req.service_tier == "flex" ? Priority::Background : Priority::Interactive;
    p.gen.prediction = prediction_tokens(m, req.prediction);
    p.rec.id = make_id("resp_");
    p.gen.tag = p.rec.id;
    p.rec.created_at = now_s();
    p.rec.model = m.name;
    p.rec.req = std::move(req);
    p.rec.req.model = m.name;
    p.rec.forced_prefix = forced;
    return p;
}

PreparedCompletion prepare_chat(ServerState& st, const ChatRequest& req, const ApiKey* key) {
    PreparedCompletion p;
    p.model = resolve_model(st, req.p.model, key);
    ModelEntry& m = *p.model;
    PromptParts parts{std::nullopt, req.messages, req.tools.is_array() ? &req.tools : nullptr};
    p.forced_prefix = forced_call_prefix(req.tool_choice, req.tools);
    p.gen.prompt = build_prompt(m, parts, nullptr);
    append_forced_prefix(m, p.gen.prompt, p.forced_prefix);
    if (static_cast<int>(p.gen.prompt.size()) >= m.ctx) throw context_error(p.gen.prompt.size(), m.ctx);
    p.gen.max_tokens = output_budget(m, p.gen.prompt.size(), req.p.max_tokens);
    set_sampling(p.gen, req.p.temperature, req.p.top_p, req.p.seed);
    p.gen.sampling.presence_penalty = static_cast<float>(req.p.presence_penalty.value_or(0));
    p.gen.sampling.frequency_penalty = static_cast<float>(req.p.frequency_penalty.value_or(0));
    p.gen.sampling.logprobs = req.p.logprobs;
    p.gen.sampling.top_logprobs = req.p.logprobs ? req.p.top_logprobs : 0;
    p.gen.stop = req.p.stop;
    p.gen.prediction = prediction_tokens(m, req.p.prediction);
    p.gen.json_schema = p.forced_prefix.empty() ? req.p.format : nullptr;  // (as in prepare_response)
    check_logit_bias(m, req.p.logit_bias);
    p.gen.sampling.logit_bias = req.p.logit_bias;
    set_tool_calls(m, req.tool_choice, req.tools, req.parallel_tool_calls, p.forced_prefix, p.gen);
    return p;
}

PreparedCompletion prepare_completion(ServerState& st, const CompletionRequest& req, const ApiKey* key) {
    PreparedCompletion p;
    p.model = resolve_model(st, req.p.model, key);
    ModelEntry& m = *p.model;
    const Tokenizer& tok = *m.tokenizer;
    if (req.prompt_tokens) {
        if (req.suffix) throw bad_request("'suffix' needs the prompt as text, not token ids.", "suffix");
        for (int32_t id : *req.prompt_tokens) require_in_vocab(m, id, "prompt", "prompt");
        p.gen.prompt = *req.prompt_tokens;
    } else if (req.suffix) {
        if (!has_fim(tok))
            throw bad_request("Model '" + m.name + "' has no fill-in-the-middle tokens; 'suffix' needs a FIM model.", "suffix",
                              "unsupported_parameter");
        // The last lines through the cursor's after <fim_middle> (a band of 0: plain PSM).
        const CursorSplit at = split_cursor_band(req.prompt, req.fim_band_lines.value_or(st.cfg.fim_band_lines));
        if (const char* repo = req.repo_field(); !repo) {
            p.gen.prompt = fim_tokens(tok, at.above, *req.suffix, at.band);
        } else {
            if (!has_repo_fim(tok))
                throw bad_request("Model '" + m.name + "' has no repo-level FIM tokens (<|repo_name|>, <|file_sep|>); '" +
                                      repo + "' needs a model that has them, e.g. Qwen2.5-Coder.",
                                  repo, "unsupported_parameter");
            p.gen.prompt = repo_fim_tokens(tok, req.repo_name.value_or(""), req.context_files, req.path.value_or(""),
                                           at.above, *req.suffix, at.band);
        }
    } else {
        p.gen.prompt = tok.encode(req.prompt, tok.add_bos(), false);
    }
    if (p.gen.prompt.empty()) throw bad_request("The prompt is empty and the model adds no BOS token.", "prompt");
    if (static_cast<int>(p.gen.prompt.size()) >= m.ctx) throw context_error(p.gen.prompt.size(), m.ctx);
    p.gen.max_tokens = output_budget(m, p.gen.prompt.size(), req.p.max_tokens);
    set_sampling(p.gen, req.p.temperature, req.p.top_p, req.p.seed);
    p.gen.sampling.presence_penalty = static_cast<float>(req.p.presence_penalty.value_or(0));
    p.gen.sampling.frequency_penalty = static_cast<float>(req.p.frequency_penalty.value_or(0));
    p.gen.stop = req.p.stop;
    check_logit_bias(m, req.p.logit_bias);
    p.gen.sampling.logit_bias = req.p.logit_bias;
    p.gen.prediction = prediction_tokens(m, req.p.prediction);
    return p;
}

void LiveRefresh::operator()(const ResponseEvents& events) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::milliseconds(100);
    st_.update_live(id_, events.partial());
}

void account(ServerState& st, const ApiKey* key, const Usage& u) {
    st.metrics.prompt_tokens += u.prompt_tokens;
    st.metrics.cached_tokens += u.cached_tokens;
    st.metrics.completion_tokens += u.completion_tokens;
    st.limits.charge_tokens(key ? key->key : "", u.prompt_tokens + u.completion_tokens);
}

std::string server_timing(const Timings& t, double parse_ms) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "parse;dur=%.3f, queue;dur=%.3f, prefill;dur=%.3f, ttft;dur=%.3f, decode;dur=%.3f, total;dur=%.3f",
                  parse_ms, t.queued_ms, t.prefill_ms, t.first_token_ms, t.decode_ms, t.total_ms);
    return buf;
}

}  // namespace flint::server
