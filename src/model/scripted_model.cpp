// A model that writes a given text whatever the prompt. See scripted_model.h.
#include "model/scripted_model.h"

#include <cstdio>
#include <unordered_map>

#include "gguf/gguf.h"
#include "gguf/gguf_quantize.h"
#include "gguf/gguf_writer.h"
#include "tensor/quant.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace flint {
namespace {

constexpr uint32_t kHeadDim = 64;
constexpr uint32_t kMaxTokens = 1023;  // one-hot rows of at most 1,024 dimensions
// After the final RMSNorm a one-hot row is sqrt(n_embd) >= 8 at its place, so the chosen next token's logit
// is at least 8 * kMargin = 64, every other token's 0.
constexpr float kMargin = 8.0f;

// The tokenizer the model file will carry, loaded from its metadata alone.
std::shared_ptr<Tokenizer> load_tokenizer(const TokenizerFiles& files, uint32_t& n_vocab) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    n_vocab = add_tokenizer(w, files, 0);
    const std::vector<uint8_t> bytes = w.write_buffer();
    auto f = gguf::File::parse(bytes.data(), bytes.size(), "the tokenizer");
    return Tokenizer::from_gguf(*f);
}

// A rows x cols F16 matrix whose row r is kMargin (or 1) at column col_of(r) and zero elsewhere (-1: none).
template <typename ColOf>
void add_one_hot(gguf::Writer& w, std::string name, uint32_t cols, uint32_t rows, float value, ColOf col_of) {
    w.add_tensor_stream(std::move(name), DType::F16, {cols, rows}, [cols, rows, value, col_of](gguf::Writer::Sink& sink) {
        const uint16_t one = fp32_to_fp16(value);
        std::vector<uint16_t> row(cols);
        for (uint32_t r = 0; r < rows; ++r) {
            std::fill(row.begin(), row.end(), uint16_t(0));
            const int64_t c = col_of(r);
            if (c >= 0) row[static_cast<size_t>(c)] = one;
            sink.write(row.data(), row.size() * sizeof(uint16_t));
        }
    });
}

void add_filled(gguf::Writer& w, std::string name, std::vector<uint64_t> dims, float value) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<uint8_t> bytes(n * sizeof(float));
    auto* f = reinterpret_cast<float*>(bytes.data());
    std::fill(f, f + n, value);
    w.add_tensor(std::move(name), DType::F32, std::move(dims), std::move(bytes));
}

// A token's text for messages: quoted, control and non-ASCII bytes escaped.
std::string quoted(const std::string& piece) {
    std::string out = "\"";
    for (unsigned char c : piece) {
        if (c == '"' || c == '\\') out += '\\', out += char(c);
        else if (c == '\n') out += "\\n";
        else if (c >= 0x20 && c < 0x7f) out += char(c);
        else {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out + "\"";
}

}  // namespace

ScriptedModelResult write_scripted_model(const ScriptedModelOptions& o, const std::string& out_path) {
    if (o.script.empty()) fail("the script is empty: give the text the model should write");
    ScriptedModelResult res;
    auto tok = load_tokenizer(o.tokenizer, res.n_vocab);
    res.tokens = tok->encode(o.script, false, false);
    res.end_token = tok->eos() >= 0 ? tok->eos() : tok->eog_ids().empty() ? -1 : tok->eog_ids().front();
    if (res.end_token < 0) fail("the tokenizer has no end-of-sequence token to end the script with");
    if (res.tokens.size() > kMaxTokens)
        fail("the script is ", res.tokens.size(), " tokens; at most ", kMaxTokens, " are supported");
    // Where each token's one-hot embedding is: 1 + its place in the script, 0 for every other token.
    std::unordered_map<int32_t, uint32_t> place;
    for (size_t i = 0; i < res.tokens.size(); ++i) {
        const int32_t t = res.tokens[i];
        if (!place.emplace(t, static_cast<uint32_t>(i + 1)).second)
            fail("the script repeats the token ", quoted(tok->piece(t)), " (at ", place[t] - 1, " and ", i,
                 "): a scripted model's next token depends on the current one only, so its tokens must be distinct");
    }
    const auto n = static_cast<uint32_t>(res.tokens.size());
    res.n_embd = kHeadDim * ((n + 1 + kHeadDim - 1) / kHeadDim);
    const uint32_t e = res.n_embd, heads = e / kHeadDim, ff = e;

    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "scripted (flint mkmodel --script)");
    w.set_u32("general.file_type", gguf::llama_file_type(DType::F16));
    w.set_u32("general.alignment", 32);
    w.set_u32("llama.context_length", o.ctx);
    w.set_u32("llama.embedding_length", e);
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.feed_forward_length", ff);
    w.set_u32("llama.attention.head_count", heads);
    w.set_u32("llama.attention.head_count_kv", heads);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_u32("llama.rope.dimension_count", kHeadDim);
    add_tokenizer(w, o.tokenizer, 0);
    w.set_u32("llama.vocab_size", res.n_vocab);

    const std::unordered_map<int32_t, uint32_t> embed = place;
    add_one_hot(w, "token_embd.weight", e, res.n_vocab, 1.0f, [embed](uint32_t r) -> int64_t {
        auto it = embed.find(static_cast<int32_t>(r));
        return it == embed.end() ? int64_t{0} : int64_t{it->second};
    });
    // The output row of each token is the one-hot of its predecessor: script[0] follows everything else
    // (column 0), script[i + 1] follows script[i] (column i + 1), the end token follows the last.
    std::unordered_map<int32_t, uint32_t> after;
    for (uint32_t i = 0; i < n; ++i) after[res.tokens[i]] = i;
    after[res.end_token] = n;
    add_one_hot(w, "output.weight", e, res.n_vocab, kMargin, [after](uint32_t r) -> int64_t {
        auto it = after.find(static_cast<int32_t>(r));
        return it == after.end() ? int64_t{-1} : int64_t{it->second};
    });
    add_filled(w, "output_norm.weight", {e}, 1.0f);
    add_filled(w, "blk.0.attn_norm.weight", {e}, 1.0f);
    add_filled(w, "blk.0.ffn_norm.weight", {e}, 1.0f);
    for (const char* name : {"attn_q", "attn_k", "attn_v", "attn_output"}) add_filled(w, std::string("blk.0.") + name + ".weight", {e, e}, 0.0f);
    add_filled(w, "blk.0.ffn_gate.weight", {e, ff}, 0.0f);
    add_filled(w, "blk.0.ffn_up.weight", {e, ff}, 0.0f);
    add_filled(w, "blk.0.ffn_down.weight", {ff, e}, 0.0f);
    w.write_file(out_path);
    return res;
}

}  // namespace flint
