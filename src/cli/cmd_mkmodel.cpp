// `flint mkmodel --shape NAME --type T -o OUT.gguf` — a random-weight GGUF of a real model's shape with a
// real tokenizer, for benchmarks (see model/random_model.h); `flint mkmodel --script TEXT -o OUT.gguf` — a
// model that answers every prompt with TEXT, for driving clients end to end (model/scripted_model.h).
#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "cli/commands.h"
#include "gguf/gguf_quantize.h"
#include "model/random_model.h"
#include "model/scripted_model.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct MkmodelArgs {
    std::string shape, type = "q8_0", out, script, then, marker;
    uint64_t seed = 42;
    uint32_t ctx = 0;
    int threads = 0;
    TokenizerFiles tok = default_tokenizer_files();
};

void mkmodel_scripted(const MkmodelArgs& a) {
    ScriptedModelOptions o;
    o.script = a.script;
    o.then = a.then;
    o.marker = a.marker;
    if (a.ctx) o.ctx = a.ctx;
    o.tokenizer = a.tok;
    ScriptedModelResult r = write_scripted_model(o, a.out);
    std::fprintf(stderr, "%s: scripted model, %zu tokens then token %d", a.out.c_str(), r.tokens.size(), r.end_token);
    if (r.marker >= 0) std::fprintf(stderr, "; after token %d, %zu tokens", r.marker, r.then_tokens.size());
    std::fprintf(stderr, "; vocab %u, width %u, context %u\n", r.n_vocab, r.n_embd, o.ctx);
}

void mkmodel(const MkmodelArgs& a) {
    const ModelShape* shape = find_model_shape(a.shape);
    if (!shape) fail("unknown shape '", a.shape, "' (valid: ", model_shape_names(), ")");
    RandomModelOptions o;
    o.shape = *shape;
    o.type = gguf::parse_quantize_target(a.type);
    o.seed = a.seed;
    o.ctx = a.ctx;
    o.threads = a.threads;
    o.tokenizer = a.tok;
    if (::isatty(2))
        o.on_tensor = [](size_t k, size_t n, const std::string& name) {
            std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", k + 1, n, name.c_str());
            std::fflush(stderr);
        };
    auto t0 = std::chrono::steady_clock::now();
    RandomModelResult r = write_random_model(o, a.out);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (::isatty(2)) std::fprintf(stderr, "\r\033[K");
    constexpr size_t kMaxNotes = 4;
    for (size_t k = 0; k < r.notes.size() && k < kMaxNotes; ++k) std::fprintf(stderr, "note: %s\n", r.notes[k].c_str());
    if (r.notes.size() > kMaxNotes) std::fprintf(stderr, "note: ... and %zu more\n", r.notes.size() - kMaxNotes);
    std::fprintf(stderr, "%s: %s, %s, %.1fM parameters, vocab %u, %.1f MiB of weights in %.1f s\n", a.out.c_str(),
                 std::string(shape->name).c_str(), a.type.c_str(), r.n_params / 1e6, r.n_vocab,
                 r.data_bytes / 1048576.0, secs);
}

}  // namespace

void register_mkmodel(CLI::App& app) {
    auto a = std::make_shared<MkmodelArgs>();
    CLI::App* cmd = app.add_subcommand(
        "mkmodel", "Write a GGUF with a real model's shape, random weights and a real tokenizer (for benchmarks), "
                   "or with --script a model that answers every prompt with a given text (for client tests)");
    CLI::Option* shape = cmd->add_option("--shape", a->shape, "Model shape: " + model_shape_names());
    CLI::Option* script = cmd->add_option(
        "--script", a->script,
        "Instead of a shape: a model that writes this text, then end-of-sequence, whatever the prompt (its tokens must be "
        "distinct; context 32768 unless --ctx)");
    shape->excludes(script);
    CLI::Option* then = cmd->add_option("--then", a->then, "With --script: the text the model writes instead once --marker is in its context");
    cmd->add_option("--marker", a->marker, "With --then: one token's text (e.g. _response, which Qwen's <tool_response> holds)")
        ->needs(then);
    then->needs(script);
    cmd->add_option("--type", a->type, "Weight type: q8_0, q6_k, q5_k, q5_1, q5_0, q4_k, q4_1, q4_0, iq4_xs, iq4_nl, q3_k, q2_k, f16, bf16, f32")
        ->capture_default_str();
    cmd->add_option("-o,--output", a->out, "Output GGUF file")->required();
    cmd->add_option("--seed", a->seed, "Random seed")->capture_default_str();
    cmd->add_option("--ctx", a->ctx, "context_length to record (default: the shape's)");
    cmd->add_option("-t,--threads", a->threads, "Worker threads (0: all cores)");
    CLI::Option* vocab = cmd->add_option("--vocab-json", a->tok.vocab_json, "Hugging Face vocab.json (token -> id)")
                             ->capture_default_str();
    cmd->add_option("--merges", a->tok.merges, "merges.txt")->capture_default_str();
    cmd->add_option("--added-tokens", a->tok.added_tokens, "added_tokens.json (marked as control tokens)")
        ->capture_default_str();
    cmd->add_option("--tokenizer-config", a->tok.tokenizer_config, "tokenizer_config.json (eos/pad/bos, template)")
        ->capture_default_str();
    cmd->add_option("--chat-template", a->tok.chat_template, "Chat template (.jinja)")->capture_default_str();
    cmd->add_option("--pre", a->tok.pre, "tokenizer.ggml.pre (pre-tokenizer name)")->capture_default_str();
    cmd->add_option("--vocab-from", a->tok.vocab_from, "Copy every tokenizer.* key from this GGUF instead");
    cmd->callback([a, cmd, vocab, shape, script] {
        if (shape->count() == 0 && script->count() == 0) throw CLI::RequiredError("--shape or --script");
        // Another tokenizer's vocab.json must not be paired with the default (Qwen2) companions: the optional
        // files default to none as soon as --vocab-json is given.
        if (vocab->count() > 0) {
            if (cmd->get_option("--added-tokens")->count() == 0) a->tok.added_tokens.clear();
            if (cmd->get_option("--tokenizer-config")->count() == 0) a->tok.tokenizer_config.clear();
            if (cmd->get_option("--chat-template")->count() == 0) a->tok.chat_template.clear();
            if (cmd->get_option("--merges")->count() == 0) a->tok.merges.clear();
        }
        if (script->count() > 0) mkmodel_scripted(*a);
        else mkmodel(*a);
    });
}

}  // namespace flint::cli
