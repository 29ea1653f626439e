// Random-weight GGUFs of real model shapes. See random_model.h.
#include "model/random_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "gguf/gguf_quantize.h"
#include "gguf/gguf_writer.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace flint {
namespace {

using gguf::MetaValue;
using Json = nlohmann::json;

// llama.cpp's token types (llama_token_type).
constexpr int32_t kTokenNormal = 1, kTokenControl = 3, kTokenUnused = 5;
constexpr float kWeightStd = 0.02f;         // the usual initializer_range of these models
constexpr uint64_t kChunkBytes = 32ull << 20;  // output bytes generated per parallel step

std::string read_text(const std::string& path, std::string_view what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, ": cannot read the ", what);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Json read_json(const std::string& path, std::string_view what) {
    try {
        return Json::parse(read_text(path, what));
    } catch (const Json::exception& e) {
        fail(path, ": the ", what, " is not valid JSON: ", e.what());
    }
}

// {"token": id, …} → id → token; checks the ids.
void read_token_ids(const std::string& path, std::string_view what, std::vector<std::string>& tokens,
                    std::vector<int32_t>& types, int32_t type) {
    Json j = read_json(path, what);
    if (!j.is_object()) fail(path, ": the ", what, " must be an object of token → id");
    for (const auto& [tok, id] : j.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > (1 << 24))
            fail(path, ": token ", Json(tok).dump(), ": id ", id.dump(), " (expected an integer in 0..16777216)");
        size_t k = id.get<size_t>();
        if (k >= tokens.size()) tokens.resize(k + 1), types.resize(k + 1, 0);
        if (types[k] != 0 && tokens[k] != tok)
            fail(path, ": id ", k, " is both ", Json(tokens[k]).dump(), " and ", Json(tok).dump());
        tokens[k] = tok;
        types[k] = type;
    }
}

std::vector<std::string> read_merges(const std::string& path) {
    std::vector<std::string> merges;
    std::istringstream in(read_text(path, "merges file"));
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (first && line.starts_with("#version")) continue;  // the header some merges.txt files carry
        first = false;
        if (line.empty()) continue;
        if (line.find(' ') == std::string::npos) fail(path, ": merge ", Json(line).dump(), " has no space between its parts");
        merges.push_back(std::move(line));
    }
    return merges;
}

// tokenizer_config.json names special tokens as a string, as {"content": …}, or null.
std::string special_token(const Json& cfg, const char* key) {
    if (!cfg.contains(key) || cfg[key].is_null()) return {};
    const Json& v = cfg[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return {};
}

void copy_tokenizer(gguf::Writer& w, const std::string& path, uint32_t& n_tokens) {
    auto f = gguf::File::open(path);
    for (const auto& [k, v] : f->metadata())
        if (k.starts_with("tokenizer.")) w.set(k, MetaValue::from(v));
    n_tokens = static_cast<uint32_t>(f->get_strings("tokenizer.ggml.tokens").size());
    if (n_tokens == 0) fail(path, ": has no tokenizer.ggml.tokens to copy");
}

// splitmix64: a fast, well-mixed generator; one per row, seeded from (seed, tensor, row).
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Approximately N(0, 1): the sum of four 16-bit uniforms from one draw (Irwin–Hall, n = 4) — plenty
    // normal for random weights, and several times faster than Box–Muller.
    float normal() {
        uint64_t r = next();
        uint32_t s4 = uint32_t(r & 0xffff) + uint32_t((r >> 16) & 0xffff) + uint32_t((r >> 32) & 0xffff) + uint32_t(r >> 48);
        return (float(s4) - 131070.0f) * (1.0f / (65536.0f * 0.57735027f));
    }
};

enum class Init { Normal, Ones, SmallNormal };

struct TensorPlan {
    std::string name;
    std::vector<uint64_t> dims;
    DType type;
    Init init;
};

std::vector<TensorPlan> plan_tensors(const ModelShape& s, uint32_t n_vocab, DType target, std::vector<std::string>& notes) {
    const uint64_t e = s.n_embd, kv = uint64_t(s.n_kv_heads) * s.head_dim(), ff = s.n_ff;
    std::vector<TensorPlan> plan;
    auto weight = [&](std::string name, uint64_t cols, uint64_t rows) {
        gguf::TensorInfo ti;
        ti.name = name;
        ti.dims = {cols, rows};
        std::string note;
        DType t = gguf::choose_tensor_type(ti, target, &note);
        if (!note.empty()) notes.push_back(note);
        plan.push_back({std::move(name), {cols, rows}, t, Init::Normal});
    };
    auto vec = [&](std::string name, uint64_t n, Init init) { plan.push_back({std::move(name), {n}, DType::F32, init}); };
    weight("token_embd.weight", e, n_vocab);
    for (uint32_t l = 0; l < s.n_layers; ++l) {
        std::string b = "blk." + std::to_string(l) + ".";
        vec(b + "attn_norm.weight", e, Init::Ones);
        weight(b + "attn_q.weight", e, e);
        weight(b + "attn_k.weight", e, kv);
        weight(b + "attn_v.weight", e, kv);
        weight(b + "attn_output.weight", e, e);
        vec(b + "ffn_norm.weight", e, Init::Ones);
        weight(b + "ffn_gate.weight", e, ff);
        weight(b + "ffn_up.weight", e, ff);
        weight(b + "ffn_down.weight", ff, e);
        if (s.qkv_bias) {
            vec(b + "attn_q.bias", e, Init::SmallNormal);
            vec(b + "attn_k.bias", kv, Init::SmallNormal);
            vec(b + "attn_v.bias", kv, Init::SmallNormal);
        }
    }
    vec("output_norm.weight", e, Init::Ones);
    if (!s.tied_embeddings) weight("output.weight", e, n_vocab);
    return plan;
}

void fill_row(Init init, Rng& rng, float* x, int64_t n) {
    switch (init) {
        case Init::Ones: std::fill(x, x + n, 1.0f); break;
        case Init::Normal: for (int64_t k = 0; k < n; ++k) x[k] = kWeightStd * rng.normal(); break;
        case Init::SmallNormal: for (int64_t k = 0; k < n; ++k) x[k] = 0.1f * kWeightStd * rng.normal(); break;
    }
}

}  // namespace

TokenizerFiles default_tokenizer_files() {
    TokenizerFiles f;
    for (std::string dir : {std::string("../shared/tokenizers/qwen2"), std::string(FLINT_SOURCE_DIR) + "/../shared/tokenizers/qwen2"}) {
        if (!std::filesystem::exists(dir + "/vocab.json")) continue;
        auto opt = [&](const char* name) {
            std::string p = dir + "/" + name;
            return std::filesystem::exists(p) ? p : std::string();
        };
        f.vocab_json = opt("vocab.json");
        f.merges = opt("merges.txt");
        f.added_tokens = opt("added_tokens.json");
        f.tokenizer_config = opt("tokenizer_config.json");
        f.chat_template = opt("chat_template.jinja");
        break;
    }
    return f;
}

uint32_t add_tokenizer(gguf::Writer& w, const TokenizerFiles& files, uint32_t pad_to) {
    uint32_t n_tokens = 0;
    if (!files.vocab_from.empty()) {
        copy_tokenizer(w, files.vocab_from, n_tokens);
        return n_tokens;
    }
    if (files.vocab_json.empty() && files.merges.empty())
        fail("no tokenizer: give --vocab-json and --merges, or --vocab-from a GGUF (../shared/tokenizers/qwen2 "
             "was not found for the defaults)");
    if (files.vocab_json.empty() || files.merges.empty())
        fail("a BPE tokenizer needs both a vocab.json and a merges.txt (got only ",
             files.vocab_json.empty() ? files.merges : files.vocab_json, ")");
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    read_token_ids(files.vocab_json, "vocab", tokens, types, kTokenNormal);
    if (!files.added_tokens.empty()) read_token_ids(files.added_tokens, "added tokens", tokens, types, kTokenControl);
    if (tokens.size() < pad_to) tokens.resize(pad_to), types.resize(pad_to, 0);
    std::unordered_map<std::string, int32_t> ids;
    for (size_t k = 0; k < tokens.size(); ++k) {
        if (types[k] == 0) {  // an id no file names: padding, as the real conversions write it
            tokens[k] = "[PAD" + std::to_string(k) + "]";
            types[k] = kTokenUnused;
        }
        ids.emplace(tokens[k], static_cast<int32_t>(k));
    }

    std::string chat_template, eos, pad, bos;
    bool add_bos = false;
    if (!files.tokenizer_config.empty()) {
        Json cfg = read_json(files.tokenizer_config, "tokenizer config");
        eos = special_token(cfg, "eos_token");
        pad = special_token(cfg, "pad_token");
        bos = special_token(cfg, "bos_token");
        if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) add_bos = cfg["add_bos_token"].get<bool>();
        if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) chat_template = cfg["chat_template"];
    }
    if (!files.chat_template.empty()) chat_template = read_text(files.chat_template, "chat template");
    if (bos.empty()) bos = pad;  // Qwen2.5 has no BOS; its config.json names <|endoftext|> (the pad token)
    auto id_of = [&](const std::string& tok, const char* role) -> int64_t {
        if (tok.empty()) return -1;
        auto it = ids.find(tok);
        if (it == ids.end()) fail(files.tokenizer_config, ": ", role, " token ", Json(tok).dump(), " is not in the vocabulary");
        return it->second;
    };
    int64_t eos_id = id_of(eos, "eos"), bos_id = id_of(bos, "bos"), pad_id = id_of(pad, "pad");

    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", files.pre);
    w.set("tokenizer.ggml.tokens", MetaValue::string_array(std::move(tokens)));
    w.set("tokenizer.ggml.token_type", MetaValue::i32_array(types));
    w.set("tokenizer.ggml.merges", MetaValue::string_array(read_merges(files.merges)));
    if (eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(eos_id));
    if (bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(bos_id));
    if (pad_id >= 0) w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(pad_id));
    w.set_bool("tokenizer.ggml.add_bos_token", add_bos);
    if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
    return static_cast<uint32_t>(types.size());
}

RandomModelResult write_random_model(const RandomModelOptions& o, const std::string& out_path) {
    const ModelShape& s = o.shape;
    if (s.n_heads == 0 || s.n_embd % s.n_heads != 0 || s.n_kv_heads == 0 || s.n_heads % s.n_kv_heads != 0)
        fail("shape ", s.name, ": ", s.n_embd, " wide with ", s.n_heads, " heads and ", s.n_kv_heads,
             " KV heads (expected heads dividing the width and KV heads dividing the heads)");
    const std::string arch(s.arch);
    RandomModelResult res;

    gguf::Writer w;
    w.set_string("general.architecture", arch);
    w.set_string("general.name", std::string(s.name) + " (random weights, flint mkmodel)");
    w.set_u32("general.file_type", gguf::llama_file_type(o.type));
    if (traits(o.type).block_elems > 1) w.set_u32("general.quantization_version", 2);
    w.set_u32("general.alignment", 32);
    w.set_u32(arch + ".context_length", o.ctx ? o.ctx : s.context);
    w.set_u32(arch + ".embedding_length", s.n_embd);
    w.set_u32(arch + ".block_count", s.n_layers);
    w.set_u32(arch + ".feed_forward_length", s.n_ff);
    w.set_u32(arch + ".attention.head_count", s.n_heads);
    w.set_u32(arch + ".attention.head_count_kv", s.n_kv_heads);
    w.set_f32(arch + ".rope.freq_base", s.rope_theta);
    w.set_f32(arch + ".attention.layer_norm_rms_epsilon", s.rms_eps);
    if (arch == "llama") w.set_u32(arch + ".rope.dimension_count", s.head_dim());

    res.n_vocab = add_tokenizer(w, o.tokenizer, s.n_vocab);
    if (res.n_vocab != s.n_vocab)
        res.notes.push_back("the tokenizer has " + std::to_string(res.n_vocab) + " tokens; " + std::string(s.name) +
                            " has " + std::to_string(s.n_vocab) + ": the embedding follows the tokenizer");
    if (arch == "llama") w.set_u32(arch + ".vocab_size", res.n_vocab);

    std::vector<TensorPlan> plan = plan_tensors(s, res.n_vocab, o.type, res.notes);
    for (size_t k = 0; k < plan.size(); ++k) {
        const TensorPlan& p = plan[k];
        uint64_t n = 1;
        for (uint64_t d : p.dims) n *= d;
        res.n_params += n;
        res.data_bytes += gguf::Writer::tensor_bytes(p.name, p.type, p.dims);
        w.add_tensor_stream(p.name, p.type, p.dims, [&o, &p, k, n_tensors = plan.size()](gguf::Writer::Sink& sink) {
            if (o.on_tensor) o.on_tensor(k, n_tensors, p.name);
            const int64_t row_len = static_cast<int64_t>(p.dims[0]);
            const int64_t n_rows = static_cast<int64_t>(p.dims.size() > 1 ? p.dims[1] : 1);
            const size_t out_row = row_bytes(p.type, row_len);
            const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / out_row));
            std::vector<uint8_t> buf(std::min(chunk, n_rows) * out_row);
            for (int64_t r0 = 0; r0 < n_rows; r0 += chunk) {
                const int64_t rows = std::min(chunk, n_rows - r0);
                gguf::parallel_ranges(rows, n_rows * row_len < (1 << 16) ? 1 : o.threads, [&](int64_t a, int64_t b) {
                    std::vector<float> x(row_len);
                    for (int64_t r = a; r < b; ++r) {
                        // Seeded by (seed, tensor, row): the same file whatever the thread count.
                        Rng rng{o.seed * 0x2545f4914f6cdd1dull ^ (uint64_t(k) << 40) ^ uint64_t(r0 + r)};
                        rng.s = rng.next();  // mix once so neighbouring rows' streams share nothing
                        fill_row(p.init, rng, x.data(), row_len);
                        quantize_row_ref(p.type, x.data(), buf.data() + r * out_row, row_len);
                    }
                });
                sink.write(buf.data(), rows * out_row);
            }
        });
    }
    w.write_file(out_path);
    return res;
}

}  // namespace flint
