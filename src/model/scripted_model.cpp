// A model that writes a given text whatever the prompt, or a second text once a marker token is in its
// context. See scripted_model.h.
#include "model/scripted_model.h"

#include <cmath>
#include <tuple>
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
constexpr uint32_t kMaxPlaces = 1021;  // one-hot places (and two flag dimensions) within 1,024 dimensions

// Output-row weights. A one-hot row of n_embd dimensions is sqrt(n_embd) >= 8 at its place after the final
// RMSNorm (sqrt(n_embd / 2) with the flag also set), so the logits below are at least 8x (5.7x) these:
// the chosen token leads every other by >= 32 logits in each case scripted_model.h lists.
constexpr float kChain = 16;     // script[i] -> script[i + 1]
constexpr float kStartA = 8;     // any other token -> the first script's first token (without the flag)
constexpr float kStartB = 4;     //                 -> the second script's first token (plus kFlag with it)
constexpr float kFlag = 8;       // the flag's pull towards the second script's start
// ... and away from the first's, past zero: with the flag the first script's start is 4x below every token
// the scripts do not place (>= 22 logits), not tied with them. A tie would leave a constrained decoder
// (say, JSON that must fit a schema, where neither script's start fits but both that and "{" may) to
// choose between them on the last bit of the flag's rounding, which differs between kernels.
constexpr float kFlagAway = kStartA + 4;
// The flag head: a constant query meets a key only the marker has (dimension 2 of head 0, past the two
// rotated dimensions, so position plays no part): score 9 n_embd / (8 sqrt 2) >= 50 over every other
// position, so the head reads the marker's value alone, wherever it is in the context.
constexpr float kQuery = 3, kKey = 3;

// The tokenizer the model file will carry, loaded from its metadata alone.
std::shared_ptr<Tokenizer> load_tokenizer(const TokenizerFiles& files, uint32_t& n_vocab) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    n_vocab = add_tokenizer(w, files, 0);
    const std::vector<uint8_t> bytes = w.write_buffer();
    auto f = gguf::File::parse(bytes.data(), bytes.size(), "the tokenizer");
    return Tokenizer::from_gguf(*f);
}

using SparseRow = std::vector<std::pair<uint32_t, float>>;  // (column, value)

// A rows x cols F16 matrix: row r has the entries rows_of[r], or `fallback`'s; zero elsewhere.
void add_sparse(gguf::Writer& w, std::string name, uint32_t cols, uint32_t rows, std::unordered_map<int32_t, SparseRow> rows_of,
                SparseRow fallback = {}) {
    w.add_tensor_stream(std::move(name), DType::F16, {cols, rows},
                        [cols, rows, rows_of = std::move(rows_of), fallback = std::move(fallback)](gguf::Writer::Sink& sink) {
        std::vector<uint16_t> row(cols);
        for (uint32_t r = 0; r < rows; ++r) {
            std::fill(row.begin(), row.end(), uint16_t(0));
            auto it = rows_of.find(static_cast<int32_t>(r));
            for (auto [c, v] : it != rows_of.end() ? it->second : fallback) row[c] = fp32_to_fp16(v);
            sink.write(row.data(), row.size() * sizeof(uint16_t));
        }
    });
}

// An F32 tensor of the given dims, `value` everywhere but for (row, column) entries of a 2-D one.
void add_f32(gguf::Writer& w, std::string name, std::vector<uint64_t> dims, float value,
             std::vector<std::tuple<uint32_t, uint32_t, float>> entries = {}) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<uint8_t> bytes(n * sizeof(float));
    auto* f = reinterpret_cast<float*>(bytes.data());
    std::fill(f, f + n, value);
    for (auto [r, c, v] : entries) f[uint64_t(r) * dims[0] + c] = v;
    w.add_tensor(std::move(name), DType::F32, std::move(dims), std::move(bytes));
}

}  // namespace

ScriptedModelResult write_scripted_model(const ScriptedModelOptions& o, const std::string& out_path) {
    if (o.script.empty()) fail("the script is empty: give the text the model should write");
    if (o.then.empty() != o.marker.empty()) fail("a second script needs both its text and the marker that starts it");
    ScriptedModelResult res;
    auto tok = load_tokenizer(o.tokenizer, res.n_vocab);
    res.end_token = tok->eos() >= 0 ? tok->eos() : tok->eog_ids().empty() ? -1 : tok->eog_ids().front();
    if (res.end_token < 0) fail("the tokenizer has no end-of-sequence token to end the script with");
    res.tokens = tok->encode(o.script, false, true);
    if (!o.then.empty()) {
        res.then_tokens = tok->encode(o.then, false, true);
        const std::vector<int32_t> m = tok->encode(o.marker, false, true);
        if (m.size() != 1) fail("the marker ", quoted(o.marker), " is ", m.size(), " tokens; it must be one");
        res.marker = m[0];
    }
    // Each script token's one-hot place: 1 + its index in the first script, then the second's; 0 for every
    // other token (the marker too).
    std::unordered_map<int32_t, uint32_t> place;
    uint32_t n_places = 1;
    for (const auto* script : {&res.tokens, &res.then_tokens})
        for (size_t i = 0; i < script->size(); ++i) {
            const int32_t t = (*script)[i];
            if (t == res.end_token || t == res.marker)
                fail("a script contains the ", t == res.marker ? "marker" : "end-of-sequence", " token ", quoted(tok->piece(t)));
            if (!place.emplace(t, n_places++).second)
                fail("the token ", quoted(tok->piece(t)), " occurs twice in the scripts (at place ", place[t], " and ", n_places - 1,
                     "): a scripted model's next token depends on the current one only, so their tokens must be distinct");
        }
    if (n_places > kMaxPlaces) fail("the scripts are ", n_places - 1, " tokens; at most ", kMaxPlaces - 1, " are supported");
    const bool two = res.marker >= 0;
    const uint32_t flag = n_places, key = n_places + 1;  // dimensions: "the marker was seen", "I am the marker"
    res.n_embd = kHeadDim * ((n_places + (two ? 2 : 0) + kHeadDim - 1) / kHeadDim);
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
    w.set_u32("llama.rope.dimension_count", 2);  // only dimensions 0-1 of a head rotate; the flag head uses 2-3
    add_tokenizer(w, o.tokenizer, 0);
    w.set_u32("llama.vocab_size", res.n_vocab);

    std::unordered_map<int32_t, SparseRow> embed;
    for (auto [t, p] : place) embed[t] = {{p, 1.0f}};
    std::unordered_map<int32_t, SparseRow> out;
    auto chain = [&](const std::vector<int32_t>& s, float start, float flag_pull) {
        if (s.empty()) return;
        out[s[0]] = {{0, start}};
        if (two) out[s[0]].push_back({flag, flag_pull});
        for (size_t i = 0; i + 1 < s.size(); ++i) out[s[i + 1]] = {{place[s[i]], kChain}};
        out[res.end_token].push_back({place[s.back()], kChain});
    };
    chain(res.tokens, kStartA, -kFlagAway);
    chain(res.then_tokens, kStartB, kFlag);
    // Every token the scripts do not place is "other" (column 0); the marker also sets its key dimension.
    if (two) embed[res.marker] = {{0, 1.0f}, {key, 1.0f}};
    add_sparse(w, "token_embd.weight", e, res.n_vocab, std::move(embed), {{0, 1.0f}});
    add_sparse(w, "output.weight", e, res.n_vocab, std::move(out));
    add_f32(w, "output_norm.weight", {e}, 1.0f);
    add_f32(w, "blk.0.attn_norm.weight", {e}, 1.0f);
    add_f32(w, "blk.0.ffn_norm.weight", {e}, 1.0f);
    // The flag head (head 0): query dimension 2 from every place, key dimension 2 and value dimension 3 from
    // the marker's own dimension, and the value written back into the flag dimension at about 1.
    std::vector<std::tuple<uint32_t, uint32_t, float>> q, k, v, wo;
    if (two) {
        for (uint32_t p = 0; p < n_places; ++p) q.emplace_back(2, p, kQuery);
        k.emplace_back(2, key, kKey);
        v.emplace_back(3, key, 1.0f);
        wo.emplace_back(flag, 3, 1.0f / std::sqrt(e / 2.0f));  // the marker's normalised value is sqrt(e / 2)
    }
    add_f32(w, "blk.0.attn_q.weight", {e, e}, 0.0f, q);
    add_f32(w, "blk.0.attn_k.weight", {e, e}, 0.0f, k);
    add_f32(w, "blk.0.attn_v.weight", {e, e}, 0.0f, v);
    add_f32(w, "blk.0.attn_output.weight", {e, e}, 0.0f, wo);
    add_f32(w, "blk.0.ffn_gate.weight", {e, ff}, 0.0f);
    add_f32(w, "blk.0.ffn_up.weight", {e, ff}, 0.0f);
    add_f32(w, "blk.0.ffn_down.weight", {ff, e}, 0.0f);
    w.write_file(out_path);
    return res;
}

}  // namespace flint
