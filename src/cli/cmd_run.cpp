// `flint run` — one prompt in, streamed text out; timing stats on stderr.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "model/forward.h"
#include "runtime/stop_matcher.h"
#include "sample/sampler.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/fim.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct RunOptions {
    ModelOptions model;
    std::string prompt;
    std::string prompt_file;
    int n_predict = 128;
    SamplingParams sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
    bool seed_set = false;
    bool chat = false;
    std::string system;
    std::string chat_format;
    std::string fim_prefix, fim_suffix, fim_middle;
    bool fim = false;
    bool no_special = false;
    bool no_bos = false;
    bool echo = false;
    bool ignore_eos = false;
    std::vector<std::string> stops;
    std::string dump_file;
};

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::vector<int32_t> build_prompt(const RunOptions& o, const Tokenizer& tok) {
    if (o.fim) return fim_tokens(tok, o.fim_prefix, o.fim_suffix, o.fim_middle);
    std::string text = o.prompt;
    if (!o.prompt_file.empty()) {
        std::ifstream in(o.prompt_file, std::ios::binary);
        if (!in) fail(o.prompt_file, ": cannot read the prompt file");
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    if (o.chat) {
        const ChatFormat fmt = resolve_chat_format(tok.chat_template(), o.chat_format);
        std::vector<ChatMessage> msgs;
        if (!o.system.empty()) msgs.push_back({"system", o.system});
        msgs.push_back({"user", text});
        // The prompt is plain text inside the format's markup: a "<|im_end|>" in it stays text.
        return tok.encode(render_chat(fmt, msgs, true, chat_default_system(tok.chat_template())), tok.add_bos() && !o.no_bos);
    }
    return tok.encode(text, tok.add_bos() && !o.no_bos, !o.no_special);
}

void run(RunOptions& o) {
    if (o.prompt.empty() && o.prompt_file.empty() && !o.fim) o.prompt = "";
    if (!o.seed_set) o.sampling.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    LoadedModel lm = load_model(o.model, true);
    const Model& m = *lm.model;
    auto tok = Tokenizer::from_gguf(*m.file);
    std::vector<int32_t> tokens = build_prompt(o, *tok);
    if (tokens.empty()) fail("the prompt is empty (and the model adds no BOS): nothing to continue from");
    if (static_cast<int>(tokens.size()) >= lm.ctx)
        fail("the prompt is ", tokens.size(), " tokens but the context is ", lm.ctx, " (raise --ctx)");
    const int V = m.config.n_vocab;
    Sampler sampler(o.sampling, V);
    StreamDecoder decoder(*tok);
    StopMatcher stops(o.stops);
    ForwardScratch scratch;
    std::vector<float> logits(V);

    std::ofstream dump_out;
    ActivationDump dump;
    if (!o.dump_file.empty()) {
        dump_out.open(o.dump_file);
        if (!dump_out) fail(o.dump_file, ": cannot write the activation dump");
        dump = [&](std::string_view name, int layer, const float* data, int64_t rows, int64_t cols) {
            dump_out << name << (layer >= 0 ? "-" + std::to_string(layer) : "") << " [" << rows << ", " << cols << "]";
            for (int64_t i = 0; i < rows * cols; ++i) dump_out << (i % cols == 0 ? "\n " : " ") << data[i];
            dump_out << "\n";
        };
    }

    if (o.echo) {
        std::fputs(tok->decode(tokens).c_str(), stdout);
        std::fflush(stdout);
    }
    auto t0 = Clock::now();
    // Prefill in chunks so scratch stays bounded; only the last chunk's last row needs logits.
    const int64_t chunk = 512;
    for (size_t p = 0; p < tokens.size(); p += chunk) {
        size_t n = std::min<size_t>(chunk, tokens.size() - p);
        bool last = p + n == tokens.size();
        SeqBatch sb{std::span<const int32_t>(tokens).subspan(p, n), static_cast<int>(p), lm.blocks,
                    last ? Logits::Last : Logits::None};
        forward(m, {&sb, 1}, *lm.kv, scratch, lm.pool.get(), logits.data(), dump ? &dump : nullptr);
    }
    auto t1 = Clock::now();
    const size_t n_prompt = tokens.size();
    int n_gen = 0, n_steps = 0;  // tokens generated; forward passes after the prompt (the first token needs none)
    std::string reason = "length";
    while (n_gen < o.n_predict) {
        Sampled s = sampler.sample(logits.data(), tokens);
        if (tok->is_eog(s.token) && !o.ignore_eos) {
            reason = "eos";
            break;
        }
        tokens.push_back(s.token);
        ++n_gen;
        std::string text = stops.push(decoder.push(s.token));
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        if (stops.stopped()) {
            reason = "stop";
            break;
        }
        if (static_cast<int>(tokens.size()) >= lm.ctx) {
            reason = "context full";
            break;
        }
        if (n_gen == o.n_predict) break;
        SeqBatch sb{std::span<const int32_t>(&tokens.back(), 1), static_cast<int>(tokens.size() - 1), lm.blocks,
                    Logits::Last};
        forward(m, {&sb, 1}, *lm.kv, scratch, lm.pool.get(), logits.data(), dump ? &dump : nullptr);
        ++n_steps;
    }
    std::string rest = decoder.flush();
    rest = stops.push(rest) + stops.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fflush(stdout);
    auto t2 = Clock::now();
    const double pre_s = seconds(t0, t1), dec_s = seconds(t1, t2);
    // Rates per decode step: the first generated token comes from the prompt's logits, so n tokens take
    // n - 1 forward passes (counting n would overstate the rate, and report nonsense for one token).
    std::fprintf(stderr, "\nflint: prompt %zu tokens in %.3f s (%.1f tok/s) | ", n_prompt, pre_s, n_prompt / pre_s);
    if (n_steps > 0) {
        const double step_tps = n_steps / dec_s;
        std::fprintf(stderr, "decode %d tokens, %d steps in %.3f s (%.1f tok/s, %.3f ms/token, %.2f GB/s of weights)", n_gen,
                     n_steps, dec_s, step_tps, 1e3 * dec_s / n_steps, step_tps * m.weights.matrix_bytes / 1e9);
    } else {
        std::fprintf(stderr, "decode %d token%s from the prompt's logits (no decode step)", n_gen, n_gen == 1 ? "" : "s");
    }
    std::fprintf(stderr, " | stop: %s\n", reason.c_str());
}

}  // namespace

void register_run(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streaming it to stdout (stats on stderr)");
    add_model_options(*cmd, o->model);
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text (special tokens like <|im_start|> are recognised unless --no-special; with --chat it is the user message, plain text)");
    cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
    cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate at most")->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--temp", o->sampling.temperature, "Temperature; 0 = greedy (default 0.8)")->check(CLI::Range(0.0, 100.0));
    cmd->add_option("--top-k", o->sampling.top_k, "Top-k (0: off; default 40)")->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--top-p", o->sampling.top_p, "Top-p nucleus (1: off; default 0.95)")->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--min-p", o->sampling.min_p, "Min-p (0: off; default 0.05)")->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1: off)");
    cmd->add_option("--presence-penalty", o->sampling.presence_penalty, "Presence penalty");
    cmd->add_option("--frequency-penalty", o->sampling.frequency_penalty, "Frequency penalty");
    cmd->add_option("--seed", o->sampling.seed, "RNG seed (default: from the clock)")->each([o](const std::string&) { o->seed_set = true; });
    cmd->add_option("--stop", o->stops, "Stop sequence (repeatable); not printed");
    cmd->add_flag("--chat", o->chat, "Wrap the prompt as a user message in the model's chat template");
    cmd->add_option("--system", o->system, "System message for --chat");
    cmd->add_option("--chat-format", o->chat_format, "Override the chat format: chatml, llama3, llama2, zephyr");
    cmd->add_option("--fim-prefix", o->fim_prefix, "Fill-in-the-middle: code before the cursor")->each([o](const std::string&) { o->fim = true; });
    cmd->add_option("--fim-suffix", o->fim_suffix, "Fill-in-the-middle: code after the cursor")->each([o](const std::string&) { o->fim = true; });
    cmd->add_option("--fim-middle", o->fim_middle,
                    "Fill-in-the-middle: text the middle starts with, after <fim_middle> (flint serve puts the last lines "
                    "before the cursor there: see fim_band_lines in the README)")
        ->each([o](const std::string&) { o->fim = true; });
    cmd->add_flag("--no-special", o->no_special, "Treat special-token text in the prompt as plain text");
    cmd->add_flag("--no-bos", o->no_bos, "Do not add the BOS token");
    cmd->add_flag("--echo", o->echo, "Print the prompt before the generated text");
    cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating past end-of-generation tokens");
    cmd->add_option("--dump-activations", o->dump_file, "Write every named intermediate activation to this file (debug)");
    cmd->callback([o] { run(*o); });
}

}  // namespace flint::cli
