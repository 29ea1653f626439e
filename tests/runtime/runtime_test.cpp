// The runtime: prefix reuse, multi-turn, eviction, cancel, batching, priorities, admission control.
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"
#include "model/forward.h"
#include "runtime_test_util.h"
#include "sample/json_schema.h"

using namespace flint;
using namespace flint::test;

namespace {

std::vector<int32_t> story_prompt(const Tokenizer& tok, const std::string& text) { return tok.encode(text, true, false); }

RuntimeConfig small_config() {
    RuntimeConfig c;
    c.threads = 1;
    c.ctx = 512;
    c.kv_type = DType::F32;
    c.speculative = false;
    return c;
}

}  // namespace

// Same tokens, same positions, same chunking: KV taken from the prefix cache must give the very same logits,
// for every cache type (Q8_0: its keys' scales are copied with a partial block too).
TEST(PrefixReuse, LogitsBitIdenticalToColdRun) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    for (DType kv_type : {DType::F32, DType::F16, DType::Q8_0}) {
        SCOPED_TRACE(dtype_name(kv_type));
        auto prompt = story_prompt(*l.tok, "Once upon a time, there was a little dog named Max. He liked to run in the park.");
        ASSERT_GT(prompt.size(), 20u);
        const int split = 19;  // not a block boundary: exercises the copy-on-write of a partial block
        const int V = l.model->config.n_vocab;
        auto run = [&](KVCache& kv, std::vector<int32_t>& blocks, int pos0, int n, std::vector<float>& out) {
            ForwardScratch s;
            SeqBatch sb{std::span<const int32_t>(prompt).subspan(pos0, n), pos0, blocks, Logits::Last};
            out.resize(V);
            forward(*l.model, {&sb, 1}, kv, s, nullptr, out.data());
        };
        KVConfig kc{l.model->config.n_layers, l.model->config.kv_dim(), 16, kv_type, 16};
        const int n = static_cast<int>(prompt.size());
        // Cold: one sequence, two chunks.
        std::vector<float> cold, warm, scratch;
        {
            KVCache kv(kc);
            std::vector<int32_t> blocks;
            for (int i = 0; i < 8; ++i) blocks.push_back(kv.alloc());
            run(kv, blocks, 0, split, scratch);
            run(kv, blocks, split, n - split, cold);
        }
        // Warm: a first sequence computes the prefix and retires into the cache; a second one reuses it.
        KVCache kv(kc);
        PrefixCache cache(kv);
        {
            std::vector<int32_t> blocks;
            for (int i = 0; i < 2; ++i) blocks.push_back(kv.alloc());
            run(kv, blocks, 0, split, scratch);
            cache.insert(prompt, split, blocks);
        }
        PrefixCache::Match m = cache.acquire(prompt, n - 1);
        ASSERT_EQ(m.n_tokens, split);
        while (static_cast<int>(m.blocks.size()) * 16 < n) m.blocks.push_back(kv.alloc());
        run(kv, m.blocks, split, n - split, warm);
        ASSERT_EQ(cold.size(), warm.size());
        EXPECT_EQ(0, std::memcmp(cold.data(), warm.data(), cold.size() * sizeof(float))) << "logits differ";
    }
}

TEST(Runtime, SecondTurnPrefillsOnlyTheNewTokens) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime rt(l.model, l.tok, small_config());
    auto p1 = story_prompt(*l.tok, "Once upon a time, there was a girl named Lily.");
    Event e1 = run_one(rt, greedy_request(p1, 20));
    ASSERT_EQ(e1.output.size(), 20u);
    EXPECT_EQ(e1.usage.cached_tokens, 0);
    // Turn two: everything so far, plus new text.
    std::vector<int32_t> p2 = p1;
    p2.insert(p2.end(), e1.output.begin(), e1.output.end());
    auto extra = l.tok->encode(" She was happy.", false, false);
    p2.insert(p2.end(), extra.begin(), extra.end());
    Event e2 = run_one(rt, greedy_request(p2, 5));
    // The last output token was sampled but never fed, so its KV is the only old one missing.
    const int reused = static_cast<int>(p1.size() + e1.output.size()) - 1;
    EXPECT_EQ(e2.usage.cached_tokens, reused);
    EXPECT_EQ(e2.usage.prompt_tokens - e2.usage.cached_tokens, static_cast<int>(extra.size()) + 1);
    // And the result equals a cold run of the same prompt.
    Runtime cold(l.model, l.tok, small_config());
    Event e3 = run_one(cold, greedy_request(p2, 5));
    EXPECT_EQ(e3.usage.cached_tokens, 0);
    EXPECT_EQ(e2.output, e3.output);
}

TEST(Runtime, EvictionUnderMemoryPressureKeepsInFlightSequencesCorrect) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    auto long_prompt = story_prompt(*l.tok, "Once upon a time, there was a big bear.");
    Event alone = run_one(*std::make_unique<Runtime>(l.model, l.tok, small_config()), greedy_request(long_prompt, 120));

    RuntimeConfig c = small_config();
    c.ctx = 256;
    // Room for ~20 blocks of 16: the long sequence needs 10, the churn fills the rest and forces eviction.
    c.kv_memory_bytes = static_cast<int64_t>(KVCache::bytes_per_token(l.model->config.n_layers, l.model->config.kv_dim(),
                                                                      DType::F32)) * 16 * 20;
    Runtime rt(l.model, l.tok, c);
    Waiter main;
    rt.submit(greedy_request(long_prompt, 120), main.callback());
    for (int i = 0; i < 12; ++i) {
        auto p = story_prompt(*l.tok, "Tom had " + std::to_string(i) + " red apples and a small green hat.");
        Event e = run_one(rt, greedy_request(p, 12));
        EXPECT_NE(e.finish, FinishReason::Error) << e.error;
    }
    main.wait();
    EXPECT_EQ(main.final_event().finish, FinishReason::Length) << main.final_event().error;
    EXPECT_EQ(main.final_event().output, alone.output);
    EXPECT_LE(rt.stats().kv_blocks_used, rt.stats().kv_blocks_total);
}

TEST(Runtime, CancelStopsWithinOneStepAndKeepsThePartialKvUsable) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime rt(l.model, l.tok, small_config());
    auto p = story_prompt(*l.tok, "Once upon a time");
    Waiter c;
    std::atomic<uint64_t> id{0};
    std::atomic<int> seen{0};
    id = rt.submit(greedy_request(p, 200), c.callback([&](const Event&) {
        if (++seen != 3) return;
        // The engine may get here before submit() has returned the id to this thread.
        while (id.load() == 0) std::this_thread::yield();
        rt.cancel(id);  // on the engine thread, between two tokens
    }));
    const Event done = c.wait();
    EXPECT_EQ(done.finish, FinishReason::Cancelled);
    EXPECT_EQ(done.output.size(), 3u) << "one token per step without drafts: nothing after the cancel";
    // Redirect: continue from the partial output.
    std::vector<int32_t> p2 = p;
    p2.insert(p2.end(), done.output.begin(), done.output.end());
    Event e2 = run_one(rt, greedy_request(p2, 10));
    EXPECT_EQ(e2.usage.cached_tokens, static_cast<int>(p.size()) + 2);
    Runtime cold(l.model, l.tok, small_config());
    EXPECT_EQ(e2.output, run_one(cold, greedy_request(p2, 10)).output);
    EXPECT_FALSE(rt.cancel(id)) << "finished requests are not live";
}

TEST(Runtime, BatchedDecodeMatchesEachSequenceAlone) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    std::vector<std::string> texts = {"Once upon a time", "The cat sat on", "Lily and Tom went", "One day, a bird",
                                      "Max was a big dog"};
    std::vector<std::vector<int32_t>> alone;
    {
        Runtime rt(l.model, l.tok, small_config());
        for (auto& t : texts) alone.push_back(run_one(rt, greedy_request(story_prompt(*l.tok, t), 40)).output);
    }
    RuntimeConfig c = small_config();
    c.threads = 2;
    Runtime rt(l.model, l.tok, c);
    std::atomic<size_t> max_batch{0};
    rt.on_step = [&](const std::vector<uint64_t>& ids) { max_batch = std::max(max_batch.load(), ids.size()); };
    std::vector<std::unique_ptr<Waiter>> cs;
    for (auto& t : texts) {
        cs.push_back(std::make_unique<Waiter>());
        rt.submit(greedy_request(story_prompt(*l.tok, t), 40), cs.back()->callback());
    }
    for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(cs[i]->wait().output, alone[i]) << texts[i];
    }
    EXPECT_GT(max_batch.load(), 1u) << "the sequences were never batched together";
}

TEST(Runtime, InteractiveRequestsAreScheduledBeforeBackgroundOnes) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.max_running = 1;
    c.aging_ms = 1e9;
    Runtime rt(l.model, l.tok, c);
    auto p = story_prompt(*l.tok, "Once upon a time");
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> order;
    auto tagged = [&](const std::string& tag) {
        return [&, tag](const Event& e) {
            if (e.done) {
                std::lock_guard lk(mu);
                EXPECT_NE(e.finish, FinishReason::Cancelled) << tag;
                order.push_back(tag);
                cv.notify_all();
            }
        };
    };
    // The first request occupies the only slot; its first token's callback (on the engine thread) holds the
    // engine until the other three are queued, so they are all waiting when the slot frees.
    Waiter first;
    std::promise<void> queued;
    std::shared_future<void> all_queued = queued.get_future().share();
    std::atomic<bool> once{false};
    auto fcb = first.callback();
    rt.submit(greedy_request(p, 5), [&, all_queued](const Event& e) {
        fcb(e);
        if (!once.exchange(true)) all_queued.wait();
    });
    GenerationRequest bg = greedy_request(p, 2);
    bg.priority = Priority::Background;
    GenerationRequest fg = greedy_request(p, 2);
    rt.submit(bg, tagged("background-1"));
    rt.submit(bg, tagged("background-2"));
    rt.submit(fg, tagged("interactive"));
    queued.set_value();
    first.wait();
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return order.size() == 3; });
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order[0], "interactive");
}

TEST(Runtime, BackgroundWorkAgesIntoInteractive) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.max_running = 1;
    c.aging_ms = 0;  // every background request counts as interactive at once: plain FIFO
    Runtime rt(l.model, l.tok, c);
    auto p = story_prompt(*l.tok, "Once upon a time");
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int> order;
    auto record = [&](int tag) {
        return [&, tag](const Event& e) {
            if (!e.done) return;
            std::lock_guard lk(mu);
            order.push_back(tag);
            cv.notify_all();
        };
    };
    Waiter first;
    rt.submit(greedy_request(p, 30), first.callback());
    GenerationRequest bg = greedy_request(p, 1);
    bg.priority = Priority::Background;
    rt.submit(bg, record(1));
    rt.submit(greedy_request(p, 1), record(2));
    first.wait();
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return order.size() == 2; });
    EXPECT_EQ(order[0], 1);
}

TEST(Runtime, OverloadIsRefusedCleanlyAndServingContinues) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.max_running = 1;
    c.max_queued = 2;
    Runtime rt(l.model, l.tok, c);
    auto p = story_prompt(*l.tok, "Once upon a time");
    std::vector<std::unique_ptr<Waiter>> cs;
    int refused = 0;
    for (int i = 0; i < 8; ++i) {
        cs.push_back(std::make_unique<Waiter>());
        try {
            rt.submit(greedy_request(p, 50), cs.back()->callback());
        } catch (const OverloadedError& e) {
            ++refused;
            EXPECT_NE(std::string(e.what()).find("overloaded"), std::string::npos);
            cs.pop_back();
        }
    }
    EXPECT_GT(refused, 0);
    for (auto& x : cs) x->wait();
    Event after = run_one(rt, greedy_request(p, 3));
    EXPECT_EQ(after.output.size(), 3u);
}

// Cancelled requests give their queue slots back at once, before the engine gets round to them: with the
// engine held inside a step, two queued requests fill a queue of two, and once they are cancelled a third is
// accepted. The cancelled ones still end (as cancelled) when the engine goes on.
TEST(Runtime, CancelledRequestsFreeTheirQueueSlotsAtOnce) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.max_running = 1;
    c.max_queued = 2;
    Runtime rt(l.model, l.tok, c);
    std::mutex mu;
    std::condition_variable cv;
    bool in_step = false, release = false;
    rt.on_step = [&](const std::vector<uint64_t>&) {
        std::unique_lock lk(mu);
        in_step = true;
        cv.notify_all();
        cv.wait(lk, [&] { return release; });
    };
    auto p = story_prompt(*l.tok, "Once upon a time");
    Waiter running, b, c2, d;
    rt.submit(greedy_request(p, 4), running.callback());
    {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return in_step; });  // the engine is inside its first step, holding the first request
    }
    const uint64_t id_b = rt.submit(greedy_request(p, 4), b.callback());
    const uint64_t id_c = rt.submit(greedy_request(p, 4), c2.callback());
    EXPECT_EQ(rt.stats().queued, 2);
    EXPECT_THROW(rt.submit(greedy_request(p, 4), d.callback()), OverloadedError) << "the queue of two is full";
    EXPECT_TRUE(rt.cancel(id_b));
    EXPECT_TRUE(rt.cancel(id_c));
    EXPECT_EQ(rt.stats().queued, 0);
    rt.submit(greedy_request(p, 4), d.callback());  // accepted while the engine is still held
    {
        std::lock_guard lk(mu);
        release = true;
    }
    cv.notify_all();
    running.wait();
    b.wait();
    c2.wait();
    d.wait();
    EXPECT_EQ(b.final_event().finish, FinishReason::Cancelled);
    EXPECT_EQ(c2.final_event().finish, FinishReason::Cancelled);
    EXPECT_EQ(d.final_event().output.size(), 4u);
    EXPECT_EQ(rt.stats().queued, 0);
}

// When drain() returns, the engine holds nothing of the requests' callbacks any more: a server frees what
// they point into (its I/O contexts) right after. The callback here owns an object whose destructor takes a
// while; drain() must not return before it has run (it did: the request left the live set before its
// sequence, which held the callback, was destroyed, and AddressSanitizer caught a server's timer freed
// under it).
TEST(Runtime, DrainReturnsOnlyOnceTheCallbacksAreGone) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime rt(l.model, l.tok, small_config());
    struct SlowToDie {
        std::atomic<bool>* gone;
        explicit SlowToDie(std::atomic<bool>* g) : gone(g) {}
        ~SlowToDie() {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            gone->store(true);
        }
    };
    std::atomic<bool> gone{false}, started{false};
    auto held = std::make_shared<SlowToDie>(&gone);
    rt.submit(greedy_request(story_prompt(*l.tok, "Once upon a time"), 200), [held, &started](const Event&) { started = true; });
    held.reset();
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rt.drain();
    EXPECT_TRUE(gone.load()) << "drain() returned while the engine still held the callback";
}

// A schema built by hand (the server compiles requests' schemas to the same nodes): {"name": string,
// "size": integer, "tags": up to 3 strings}, all required, nothing else.
std::shared_ptr<const JsonSchema> record_schema() {
    using Kind = JsonSchemaNode::Kind;
    auto s = std::make_shared<JsonSchema>();
    const int str = s->add({.kind = Kind::String});
    const int integer = s->add({.kind = Kind::Integer});
    const int tags = s->add({.kind = Kind::Array, .items = str, .max_items = 3});
    s->root = s->add({.kind = Kind::Object, .names = {"name", "size", "tags"}, .props = {str, integer, tags}, .required = 7,
                      .allow_additional = false});
    return s;
}

// json_object and json_schema: whatever the model and the sampling, the output is a prefix of JSON the
// format accepts, and an answer that ends on its own (Stop) is complete. The code model, greedy and sampled
// with several seeds, and stories260K (whose text is nothing like JSON); with speculation on, which these
// requests skip.
TEST(Runtime, JsonOutputFitsItsFormatAndStopsWhenTheValueIsComplete) {
    FLINT_REQUIRE_SHARED("models/flint-tiny-code.gguf");
    auto stories = load_stories();
    Loaded code;
    code.model = Model::load(shared_path("models/flint-tiny-code.gguf"));
    code.tok = Tokenizer::from_gguf(*code.model->file);
    RuntimeConfig cfg;
    cfg.threads = 1;
    cfg.ctx = 512;
    for (const auto& schema : {JsonSchema::any_object(), record_schema()}) {
        int completed = 0;
        for (const Loaded* l : {&code, &stories}) {
            Runtime rt(l->model, l->tok, cfg);
            for (int seed = 0; seed < 6; ++seed) {
                GenerationRequest r = greedy_request(l->tok->encode("config = ", true, false), 120);
                r.ignore_eos = false;
                r.json_schema = schema;
                if (seed > 0) r.sampling = {.temperature = 1.0f, .seed = uint64_t(seed)};
                std::string text;
                Event e = run_one(rt, r, &text);
                SCOPED_TRACE(text);
                ASSERT_NE(e.finish, FinishReason::Error) << e.error;
                JsonSchemaPrefix j(schema);
                EXPECT_TRUE(j.feed(text));
                EXPECT_EQ(text.substr(0, 1), "{");
                if (e.finish == FinishReason::Stop) {
                    EXPECT_TRUE(j.complete());
                    const nlohmann::json v = nlohmann::json::parse(text);  // throws (fails) if not JSON
                    if (schema != JsonSchema::any_object()) {
                        EXPECT_EQ(v.size(), 3u);
                        EXPECT_TRUE(v["name"].is_string() && v["size"].is_number_integer() && v["tags"].is_array());
                        EXPECT_LE(v["tags"].size(), 3u);
                    }
                    ++completed;
                } else {
                    EXPECT_EQ(e.finish, FinishReason::Length);
                }
            }
        }
        EXPECT_GT(completed, 0) << "some answers end with a complete value";
    }
}

// A tool call's schema by hand (the server builds it from the tools, server/output_format.h): {"name":
// "get_weather", "arguments": {"days": integer, "hot": boolean}}, all required, nothing else. (No strings:
// a random model rarely closes one.)
std::shared_ptr<const JsonSchema> weather_call_schema() {
    using Kind = JsonSchemaNode::Kind;
    auto s = std::make_shared<JsonSchema>();
    const int name = s->add({.kind = Kind::Enum, .values = {"\"get_weather\""}});
    const int days = s->add({.kind = Kind::Integer});
    const int hot = s->add({.kind = Kind::Boolean});
    const int args = s->add({.kind = Kind::Object, .names = {"days", "hot"}, .props = {days, hot}, .required = 3, .allow_additional = false});
    s->root = s->add({.kind = Kind::Object, .names = {"name", "arguments"}, .props = {name, args}, .required = 3, .allow_additional = false});
    return s;
}

// How much of `text` (after leading whitespace) is a call's JSON: every byte fits the schema up to the
// point where the value is complete (returned as its end), or to the end of the text (npos: incomplete).
size_t call_json_end(const std::shared_ptr<const JsonSchema>& schema, const std::string& text, size_t from) {
    JsonSchemaPrefix j(schema);
    size_t i = text.find_first_not_of(" \n\r\t", from);
    for (; i != std::string::npos && i < text.size(); ++i) {
        EXPECT_TRUE(j.feed(text.substr(i, 1))) << "byte " << i << " of " << text << " does not fit the call's schema";
        if (j.complete()) return i + 1;
    }
    return std::string::npos;
}

// After a complete call's JSON: whitespace, then the closing tag (unless the output ended before it).
void expect_closed(const std::string& rest) {
    const size_t at = rest.find_first_not_of(" \n\r\t");
    if (at != std::string::npos) {
        EXPECT_EQ(rest.substr(at, 12), "</tool_call>") << "after the call: " << rest;
    }
}

void expect_weather_call(const std::string& call_json) {
    const nlohmann::json v = nlohmann::json::parse(call_json);  // throws (fails) if not JSON
    EXPECT_EQ(v["name"], "get_weather");
    EXPECT_EQ(v["arguments"].size(), 2u);
    EXPECT_TRUE(v["arguments"]["days"].is_number_integer() && v["arguments"]["hot"].is_boolean()) << call_json;
}

// Tool calls: once <tool_call> is out (or the prompt ends inside a call, as a forced tool_choice leaves it),
// the call's JSON fits the tools' schema whatever the model — tiny-qwen2 has random weights — and when it is
// complete, sampling is free again: here a bias makes the model open call after call, each constrained, with
// prompt lookup proposing drafts in between (a draft that opens a call ends the verification there).
TEST(Runtime, ToolCallJsonFitsTheToolsSchemaAndSamplingIsFreeAfterIt) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    Loaded q;
    q.model = Model::load(shared_path("models/tiny-qwen2-f32.gguf"));
    q.tok = Tokenizer::from_gguf(*q.model->file);
    const std::optional<int32_t> open = q.tok->find_token("<tool_call>"), close = q.tok->find_token("</tool_call>");
    ASSERT_TRUE(open.has_value() && close.has_value());
    const auto schema = weather_call_schema();
    RuntimeConfig cfg;
    cfg.threads = 1;
    cfg.ctx = 1024;
    Runtime rt(q.model, q.tok, cfg);
    const std::vector<int32_t> prompt = q.tok->encode("What is the weather in Oslo for the next days?", false, false);

    // Forced: the prompt ends with the start of the call, the output continues it.
    int completed = 0;
    for (int seed = 0; seed < 3; ++seed) {
        GenerationRequest r = greedy_request(prompt, 80);
        if (seed > 0) r.sampling = {.temperature = 1.0f, .seed = uint64_t(seed)};
        r.call_schema = schema;
        r.call_open = *open;
        r.call_close = *close;
        r.call_prefix = "\n{\"name\": \"";
        std::string text;
        Event e = run_one(rt, r, &text);
        ASSERT_NE(e.finish, FinishReason::Error) << e.error;
        const std::string call = "{\"name\": \"" + text;
        SCOPED_TRACE(call);
        if (const size_t end = call_json_end(schema, call, 0); end != std::string::npos) {
            expect_weather_call(call.substr(0, end));
            expect_closed(call.substr(end));
            ++completed;
        }
    }
    EXPECT_GT(completed, 0) << "some calls are complete";

    // Opened by the model: every call after a <tool_call> tag fits and is closed. (Sampled: greedy, this
    // model repeats itself.)
    int most_calls = 0;
    for (int seed = 1; seed <= 2; ++seed) {
        GenerationRequest r = greedy_request(prompt, 200);
        r.sampling = {.temperature = 1.0f, .seed = uint64_t(seed)};
        r.sampling.logit_bias = {{*open, 40.0f}};
        r.call_schema = schema;
        r.call_open = *open;
        r.call_close = *close;
        std::string text;
        Event e = run_one(rt, r, &text);
        ASSERT_NE(e.finish, FinishReason::Error) << e.error;
        SCOPED_TRACE(text);
        const std::string tag = "<tool_call>";
        ASSERT_EQ(text.rfind(tag, 0), 0u) << "the bias makes the first token a call";
        int calls = 0;
        for (size_t at = 0; at != std::string::npos;) {
            const size_t next = text.find(tag, at + tag.size());
            const std::string segment = text.substr(at + tag.size(), next == std::string::npos ? std::string::npos : next - at - tag.size());
            const size_t end = call_json_end(schema, segment, 0);
            if (next != std::string::npos) {
                ASSERT_NE(end, std::string::npos) << "a call was left before its JSON was complete";
            }
            if (end != std::string::npos) {
                expect_weather_call(segment.substr(segment.find('{'), end - segment.find('{')));
                expect_closed(segment.substr(end));
                if (next != std::string::npos) {
                    EXPECT_NE(segment.find("</tool_call>", end), std::string::npos);
                }
                ++calls;
            }
            at = next;
        }
        most_calls = std::max(most_calls, calls);

        // one_call (parallel_tool_calls false): the same draws, ended (Stop) by the first call's closing tag.
        r.one_call = true;
        std::string first;
        Event one = run_one(rt, r, &first);
        const size_t closed = text.find("</tool_call>");
        if (closed == std::string::npos) {
            EXPECT_EQ(first, text);
        } else {
            EXPECT_EQ(first, text.substr(0, closed + 12));
            EXPECT_EQ(one.finish, FinishReason::Stop);
        }
    }
    EXPECT_GE(most_calls, 2) << "after a complete call, the model was free to open another";
}

// Constrained output takes drafts too: a draft is kept only if the draw it matches fits, and a draw that
// does not fit is drawn again from the same row as without drafts, on the same RNG — so the text is the same
// with speculation on and off. Prompt lookup drafts from the repeated calls (and the code model's JSON).
TEST(Runtime, ConstrainedOutputIsTheSameWithAndWithoutDrafts) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("models/flint-tiny-code.gguf");
    Loaded q, code;
    q.model = Model::load(shared_path("models/tiny-qwen2-f32.gguf"));
    q.tok = Tokenizer::from_gguf(*q.model->file);
    code.model = Model::load(shared_path("models/flint-tiny-code.gguf"));
    code.tok = Tokenizer::from_gguf(*code.model->file);
    const int32_t open = q.tok->find_token("<tool_call>").value_or(-1), close = q.tok->find_token("</tool_call>").value_or(-1);
    ASSERT_GE(open, 0);
    RuntimeConfig on, off;
    on.threads = 2;  // the verify rows prepared on the pool, as well as drawn one by one (off)
    off.threads = 1;
    on.ctx = off.ctx = 1024;
    off.speculative = false;
    for (const Loaded* l : {&q, &code}) {
        Runtime spec(l->model, l->tok, on), plain(l->model, l->tok, off);
        for (int seed = 0; seed < 2; ++seed) {
            GenerationRequest r = greedy_request(l->tok->encode("config = ", l == &code, false), 120);
            if (seed > 0) r.sampling = {.temperature = 1.0f, .seed = uint64_t(seed)};
            if (l == &q) {  // calls, opened by a bias, one after another
                r.sampling.logit_bias = {{open, 40.0f}};
                r.call_schema = weather_call_schema();
                r.call_open = open;
                r.call_close = close;
            } else {
                r.json_schema = record_schema();
            }
            std::string with, without;
            Event a = run_one(spec, r, &with), b = run_one(plain, r, &without);
            ASSERT_NE(a.finish, FinishReason::Error) << a.error;
            EXPECT_EQ(with, without) << "seed " << seed;
            EXPECT_EQ(a.finish, b.finish);
        }
        EXPECT_GT(spec.stats().drafted_lookup_total, 0u) << "the constrained output was drafted";
        EXPECT_GT(spec.stats().accepted_lookup_total, 0u);
        EXPECT_EQ(plain.stats().drafted_lookup_total, 0u);
    }
}

TEST(Runtime, ContextLimitsAndBadRequestsAreClearErrors) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.ctx = 64;
    Runtime rt(l.model, l.tok, c);
    std::vector<int32_t> too_long(64, 300);
    try {
        rt.submit(greedy_request(too_long, 1), nullptr);
        FAIL() << "expected context_length_exceeded";
    } catch (const ContextLengthError& e) {
        EXPECT_NE(std::string(e.what()).find("64 tokens but the context is 64 tokens (the model takes up to 2048: a longer "
                                             "context can be configured"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(rt.submit(greedy_request({}, 1), nullptr), InvalidRequestError);
    EXPECT_THROW(rt.submit(greedy_request({1, 99999}, 1), nullptr), InvalidRequestError);
    GenerationRequest bad = greedy_request({1, 2}, 1);
    bad.sampling.top_p = 2;
    EXPECT_THROW(rt.submit(bad, nullptr), InvalidRequestError);
    // Generation stops at the context length.
    Event e = run_one(rt, greedy_request(std::vector<int32_t>(60, 300), 100));
    EXPECT_EQ(e.finish, FinishReason::ContextFull);
    EXPECT_EQ(e.output.size(), 4u);
}

TEST(Runtime, WarmUpPrefillsWithoutGeneratingAndAChainedTurnReusesIt) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    Runtime rt(l.model, l.tok, small_config());
    auto p = story_prompt(*l.tok, "Once upon a time, in a small town, there lived a kind old man.");
    GenerationRequest warm = greedy_request(p, 10);
    warm.generate = false;
    Event w = run_one(rt, warm);
    EXPECT_EQ(w.finish, FinishReason::Prefilled);
    EXPECT_TRUE(w.output.empty());
    auto p2 = p;
    auto more = l.tok->encode(" He", false, false);
    p2.insert(p2.end(), more.begin(), more.end());
    Event e = run_one(rt, greedy_request(p2, 4));
    EXPECT_EQ(e.usage.cached_tokens, static_cast<int>(p.size())) << "the warm-up prefilled the whole prompt";
}

// A long background prefill that has been running longer than aging_ms must not outrank interactive
// requests: each step gives the interactive prompt its chunk, so it answers within a couple of steps,
// long before the background prompt is done. (Aging counted from submit used to make the background
// prefill "interactive" after aging_ms and starve every request behind it until its prompt was done.)
TEST(Runtime, InteractiveRequestIsServedWithinAFewStepsDuringALongBackgroundPrefill) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.prefill_chunk = 8;
    c.aging_ms = 100;
    Runtime rt(l.model, l.tok, c);
    std::atomic<int> steps{0};
    rt.on_step = [&](const std::vector<uint64_t>&) {
        ++steps;
        std::this_thread::sleep_for(std::chrono::milliseconds(4));  // ~50 steps of background prefill: ~200 ms
    };
    GenerationRequest bg = greedy_request(std::vector<int32_t>(400, 300), 1);
    bg.priority = Priority::Background;
    Waiter bgw;
    rt.submit(bg, bgw.callback());
    while (steps < 35) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // past aging_ms since submit
    const int at_submit = steps;
    Waiter fg;
    rt.submit(greedy_request(story_prompt(*l.tok, "Once upon"), 1), fg.callback());
    const Event done = fg.wait();
    EXPECT_EQ(done.finish, FinishReason::Length);
    EXPECT_LE(steps - at_submit, 3) << "the interactive prompt waited behind background chunks";
    EXPECT_FALSE(bgw.finished());
    const Event b = bgw.wait();
    EXPECT_EQ(b.finish, FinishReason::Length);
    EXPECT_EQ(b.usage.prompt_tokens, 400);
}

// A background prefill still advances while interactive prompts keep every chunk busy: once it has gone
// aging_ms without a chunk it gets one.
TEST(Runtime, BackgroundPrefillAdvancesUnderContinuousInteractivePrefill) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.prefill_chunk = 8;
    c.aging_ms = 20;
    Runtime rt(l.model, l.tok, c);
    rt.on_step = [](const std::vector<uint64_t>&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    // 8 interactive prompts of 200 tokens: 200 steps of interactive prefill at 8 tokens a step (>= 400 ms).
    std::vector<std::unique_ptr<Waiter>> fg;
    for (int i = 0; i < 8; ++i) {
        fg.push_back(std::make_unique<Waiter>());
        rt.submit(greedy_request(std::vector<int32_t>(200, 400 + i), 1), fg.back()->callback());
    }
    GenerationRequest bg = greedy_request(std::vector<int32_t>(16, 300), 1);
    bg.priority = Priority::Background;
    Waiter bgw;
    rt.submit(bg, bgw.callback());
    const Event b = bgw.wait();
    EXPECT_EQ(b.finish, FinishReason::Length);
    auto last = Waiter::TimePoint::min();
    for (auto& w : fg) {
        w->wait();
        last = std::max(last, w->done_at());
    }
    EXPECT_LT(bgw.done_at(), last) << "the background prompt waited for every interactive prefill";
}

// With background_step_ms and interactive traffic, background chunks shrink to what fits the time at the
// measured cost per token; interactive prompts keep the full chunk; without interactive traffic (or with the
// option off) background chunks are full-size.
TEST(Runtime, BackgroundStepTimeBoundsBackgroundChunksWhileInteractiveTrafficLasts) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.prefill_chunk = 64;
    c.background_step_ms = 1e-9;  // nothing fits: one token a step
    c.interactive_window_ms = 1e9;
    GenerationRequest bg = greedy_request(std::vector<int32_t>(40, 300), 1);
    bg.priority = Priority::Background;
    {
        Runtime rt(l.model, l.tok, c);
        EXPECT_EQ(run_one(rt, bg).timings.steps, 1) << "no interactive request seen yet: full chunks";
    }
    {
        Runtime rt(l.model, l.tok, c);
        Event fg = run_one(rt, greedy_request(std::vector<int32_t>(40, 301), 1));
        EXPECT_EQ(fg.timings.steps, 1) << "interactive prompts are not limited";
        Event b = run_one(rt, bg);
        EXPECT_EQ(b.finish, FinishReason::Length);
        EXPECT_EQ(b.timings.steps, 40);
    }
    for (double window : {1e9, 0.0}) {
        RuntimeConfig d = c;
        if (window > 0) d.background_step_ms = 0;  // off
        else d.interactive_window_ms = 0;          // the interactive request is long gone
        Runtime rt(l.model, l.tok, d);
        run_one(rt, greedy_request(std::vector<int32_t>(40, 301), 1));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        EXPECT_EQ(run_one(rt, bg).timings.steps, 1) << window;
    }
}

// close(): queued and running requests end with the given error, new ones are refused, nothing hangs.
TEST(Runtime, CloseEndsEveryRequestWithTheReasonAndRefusesNewOnes) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto l = load_stories();
    RuntimeConfig c = small_config();
    c.max_running = 1;
    Runtime rt(l.model, l.tok, c);
    rt.on_step = [](const std::vector<uint64_t>&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    auto p = story_prompt(*l.tok, "Once upon a time");
    Waiter running, queued;
    std::atomic<int> seen{0};
    rt.submit(greedy_request(p, 400), running.callback([&](const Event&) { ++seen; }));
    rt.submit(greedy_request(p, 400), queued.callback());
    while (seen < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    rt.close("model 'm' was unloaded");
    ASSERT_TRUE(running.finished() && queued.finished()) << "close() returns once nothing is left";
    for (Waiter* w : {&running, &queued}) {
        EXPECT_EQ(w->final_event().finish, FinishReason::Error);
        EXPECT_EQ(w->final_event().error, "model 'm' was unloaded");
    }
    EXPECT_GE(running.final_event().output.size(), 3u);
    EXPECT_LT(running.final_event().output.size(), 400u);
    try {
        rt.submit(greedy_request(p, 1), nullptr);
        FAIL() << "submit after close";
    } catch (const OverloadedError& e) {
        EXPECT_NE(std::string(e.what()).find("unloaded"), std::string::npos) << e.what();
    }
    rt.close("again");  // idempotent
}
