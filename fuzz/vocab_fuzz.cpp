// libFuzzer target for the tokenizer a GGUF carries: stories260K's SentencePiece vocabulary, or a small
// byte-level BPE one cut from GPT-2's (its first 1000 tokens, the merges that make them, and a few chat and
// FIM control tokens), with its metadata edited the ways a corrupt or hand-made file would have it — a
// token's text, type or score changed, arrays cut short, grown or retyped, merges rewritten, special ids
// and flags set to anything, keys removed, another pre-tokenizer named. Then loaded, and when it loads,
// used as the server would: texts encoded with and without special tokens, as prompt parts and as a
// chat prompt, FIM prompts built, everything decoded and stream-decoded. Every input must either load
// and work (ids in range) or throw flint::Error; a crash, a sanitizer report or any other exception is a bug.
// Input: [base][text length][text bytes][ops…], each op [code][index lo][index hi][4-byte value][payload].
//   cmake -S . -B build-fuzz -DFLINT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ && cmake --build build-fuzz --target vocab_fuzz
//   build-fuzz/vocab_fuzz -max_len=512 corpus-vocab/     (FLINT_SHARED=DIR overrides ../shared)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/fim.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace flint;

namespace {

// A tokenizer's metadata as plain values, to edit and write back.
struct VocabMeta {
    std::vector<std::string> tokens, merges;
    std::vector<float> scores;
    std::vector<int32_t> types;
    std::map<std::string, gguf::MetaValue> scalars;  // every other tokenizer.* key
};

const char* const kSpecialNames[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>", "<|fim_suffix|>",
                                     "<|fim_middle|>", "<|repo_name|>", "<|file_sep|>", "<s>", "</s>", "<unk>", "<0x0A>",
                                     "<0xZZ>", "▁", "  ", "\xE2\x96", ""};
const char* const kIdKeys[] = {"bos_token_id", "eos_token_id", "eot_token_id", "eom_token_id", "unknown_token_id",
                               "padding_token_id", "fim_pre_token_id", "fim_suf_token_id", "fim_mid_token_id",
                               "fim_rep_token_id", "fim_sep_token_id", "prefix_token_id"};
const char* const kPres[] = {"", "default", "gpt-2", "qwen2", "llama3", "llama-bpe", "deepseek-coder", "falcon", "mpt",
                             "starcoder", "refact", "smollm", "nonsense"};
const char* const kTemplates[] = {"", "{{ '<|im_start|>' }}You are Qwen{{ '<|im_end|>' }}", "<|start_header_id|>",
                                  "[INST] <<SYS>>", "<|user|>", "You are", "'You are"};

VocabMeta read_meta(const gguf::File& f) {
    VocabMeta m;
    for (std::string_view s : f.get_strings("tokenizer.ggml.tokens")) m.tokens.emplace_back(s);
    for (std::string_view s : f.get_strings("tokenizer.ggml.merges")) m.merges.emplace_back(s);
    m.scores = f.get_f32_array("tokenizer.ggml.scores");
    for (int64_t t : f.get_int_array("tokenizer.ggml.token_type")) m.types.push_back(static_cast<int32_t>(t));
    for (const auto& [key, v] : f.metadata())
        if (key.rfind("tokenizer.", 0) == 0 && v.type != gguf::ValueType::ARRAY) m.scalars.emplace(key, gguf::MetaValue::from(v));
    return m;
}

// GPT-2's first 1000 tokens (the 256 byte tokens and the first merges' results), the merges among them,
// and control tokens for chat and FIM.
VocabMeta small_bpe(const gguf::File& gpt2) {
    VocabMeta full = read_meta(gpt2), m;
    m.tokens.assign(full.tokens.begin(), full.tokens.begin() + 1000);
    std::map<std::string, bool> kept;
    for (const auto& t : m.tokens) kept[t] = true;
    for (const auto& merge : full.merges) {
        const size_t sp = merge.find(' ');
        if (sp != std::string::npos && kept.count(merge.substr(0, sp) + merge.substr(sp + 1))) m.merges.push_back(merge);
    }
    m.types.assign(m.tokens.size(), 1);
    for (int k = 0; k < 8; ++k) {
        m.tokens.push_back(kSpecialNames[k]);
        m.types.push_back(3);
    }
    m.scalars["tokenizer.ggml.model"] = gguf::MetaValue::string("gpt2");
    m.scalars["tokenizer.ggml.pre"] = gguf::MetaValue::string("qwen2");
    m.scalars["tokenizer.ggml.eos_token_id"] = gguf::MetaValue::u32(1000);
    m.scalars["tokenizer.chat_template"] = gguf::MetaValue::string(kTemplates[1]);
    return m;
}

std::vector<VocabMeta> load_bases() {
    const char* env = std::getenv("FLINT_SHARED");
    const std::string dir = env && *env ? env : FLINT_SHARED_DIR;
    std::vector<VocabMeta> out;
    try {
        out.push_back(read_meta(*gguf::File::open(dir + "/models/stories260K.gguf")));
        out.push_back(small_bpe(*gguf::File::open(dir + "/tokenizers/vocab-tests/ggml-vocab-gpt-2.gguf")));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vocab_fuzz: %s (set FLINT_SHARED)\n", e.what());
        std::abort();
    }
    return out;
}

struct Input {
    const uint8_t* p;
    size_t n;
    bool empty() const { return n == 0; }
    uint8_t u8() { return n ? (--n, *p++) : 0; }
    uint32_t u32() {
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) v |= uint32_t(u8()) << (8 * k);
        return v;
    }
    std::string bytes(size_t len) {
        len = std::min(len, n);
        std::string s(reinterpret_cast<const char*>(p), len);
        p += len, n -= len;
        return s;
    }
};

template <typename T>
void resize_to(std::vector<T>& v, size_t n) {
    if (v.empty()) v.resize(n);
    for (size_t k = v.size(); k < n; ++k) v.push_back(v[k % v.size()]);
    v.resize(n);
}

void apply_op(VocabMeta& m, Input& in, std::map<std::string, gguf::MetaValue>& retyped, std::vector<std::string>& removed) {
    const uint8_t op = in.u8();
    const size_t index = in.u8() | (size_t(in.u8()) << 8);
    const uint32_t v = in.u32();
    auto pick = [&](size_t size) { return size ? index % size : 0; };
    switch (op % 12) {
        case 0:  // a token's text: bytes, or a name the loaders look for
            if (!m.tokens.empty())
                m.tokens[pick(m.tokens.size())] = v & 1 ? in.bytes(v >> 1 & 15) : kSpecialNames[(v >> 1) % std::size(kSpecialNames)];
            break;
        case 1: if (!m.types.empty()) m.types[pick(m.types.size())] = v & 0x100 ? int32_t(v) : int32_t(v & 7); break;
        case 2: {
            float f;
            std::memcpy(&f, &v, 4);
            if (!m.scores.empty()) m.scores[pick(m.scores.size())] = f;
            break;
        }
        case 3:  // a merge: bytes, or two tokens' texts with or without the space
            if (!m.merges.empty()) {
                std::string& merge = m.merges[pick(m.merges.size())];
                if (v & 1) merge = in.bytes(v >> 1 & 15);
                else if (!m.tokens.empty())
                    merge = m.tokens[(v >> 1) % m.tokens.size()] + (v & 2 ? " " : "") + m.tokens[(v >> 8) % m.tokens.size()];
            }
            break;
        case 4: resize_to(m.tokens, index % 1100 + (v & 1)); break;
        case 5:
            if (v % 3 == 0) resize_to(m.scores, index % 1100);
            else if (v % 3 == 1) resize_to(m.types, index % 1100);
            else resize_to(m.merges, index % 1100);
            break;
        case 6: {  // a special id, of any integer type or a string
            const std::string key = std::string("tokenizer.ggml.") + kIdKeys[pick(std::size(kIdKeys))];
            const uint32_t id = v & 0x80000000u ? v : v % 1100;
            switch (index >> 12 & 3) {
                case 0: m.scalars[key] = gguf::MetaValue::u32(id); break;
                case 1: m.scalars[key] = gguf::MetaValue::i32(int32_t(id)); break;
                case 2: m.scalars[key] = gguf::MetaValue::u64(uint64_t(id) << (v & 32)); break;
                case 3: m.scalars[key] = gguf::MetaValue::string(std::to_string(id)); break;
            }
            break;
        }
        case 7: {  // a key removed
            static const char* const keys[] = {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                                               "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.pre",
                                               "tokenizer.chat_template"};
            removed.push_back(keys[pick(std::size(keys))]);
            break;
        }
        case 8:
            m.scalars["tokenizer.ggml.pre"] =
                gguf::MetaValue::string(v & 1 ? in.bytes(v >> 1 & 15) : kPres[(v >> 1) % std::size(kPres)]);
            break;
        case 9: {  // a flag, as a bool or another type
            static const char* const flags[] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                                                "tokenizer.ggml.add_space_prefix"};
            const std::string key = flags[pick(std::size(flags))];
            m.scalars[key] = v & 2 ? gguf::MetaValue::u8(uint8_t(v >> 8)) : gguf::MetaValue::boolean(v & 1);
            break;
        }
        case 10: {  // an array of the wrong element type in place of the right one
            static const char* const arrays[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                                                 "tokenizer.ggml.token_type", "tokenizer.ggml.merges"};
            const std::string key = arrays[pick(std::size(arrays))];
            const std::vector<int32_t> ints(v % 1100, int32_t(v >> 16));
            if (v & 0x8000) retyped[key] = gguf::MetaValue::string_array(std::vector<std::string>(v % 1100, "1"));
            else if (v & 0x4000) retyped[key] = gguf::MetaValue::f32_array(std::vector<float>(v % 1100, 1.5f));
            else retyped[key] = gguf::MetaValue::i32_array(ints);
            break;
        }
        case 11:
            m.scalars["tokenizer.chat_template"] =
                gguf::MetaValue::string(v & 1 ? in.bytes(v >> 1 & 63) : kTemplates[(v >> 1) % std::size(kTemplates)]);
            break;
    }
}

std::vector<uint8_t> write(const VocabMeta& m, const std::map<std::string, gguf::MetaValue>& retyped,
                           const std::vector<std::string>& removed) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    for (const auto& [key, v] : m.scalars) w.set(key, v);
    w.set("tokenizer.ggml.tokens", gguf::MetaValue::string_array(m.tokens));
    if (!m.scores.empty()) w.set("tokenizer.ggml.scores", gguf::MetaValue::f32_array(m.scores));
    if (!m.types.empty()) w.set("tokenizer.ggml.token_type", gguf::MetaValue::i32_array(m.types));
    if (!m.merges.empty()) w.set("tokenizer.ggml.merges", gguf::MetaValue::string_array(m.merges));
    for (const auto& [key, v] : retyped) w.set(key, v);
    for (const auto& key : removed) w.remove(key);
    return w.write_buffer();
}

void check_ids(const Tokenizer& tok, const std::vector<TokenId>& ids, const char* what) {
    for (TokenId id : ids)
        if (id < 0 || id >= tok.n_vocab()) {
            std::fprintf(stderr, "vocab_fuzz: %s gave id %d of a %d-token vocabulary\n", what, id, tok.n_vocab());
            std::abort();
        }
}

// What the server does with a tokenizer: prompts with and without specials, as parts, chat and FIM.
void use(const Tokenizer& tok, const std::string& text) {
    for (const std::string& t : {text, std::string("Hello world <|im_end|>\n  def f():\n\treturn 1 <s></s>▁x")}) {
        for (bool special : {false, true}) {
            const auto ids = tok.encode(t, tok.add_bos(), special);
            check_ids(tok, ids, "encode");
            (void)tok.decode(ids);
            StreamDecoder sd(tok);
            for (TokenId id : ids) (void)sd.push(id);
            (void)sd.flush();
        }
        const TextPart parts[] = {{"<|im_start|>user\n", true}, {t, false}, {"<|im_end|>", true}};
        check_ids(tok, tok.encode(parts, tok.add_bos()), "encode(parts)");
    }
    for (TokenId id = 0; id < tok.n_vocab(); id += 37) (void)tok.token_to_piece(id), (void)tok.is_special(id);
    const std::string& tmpl = tok.chat_template();
    (void)chat_default_system(tmpl);
    const ChatFormat format = detect_chat_format(tmpl);
    if (format != ChatFormat::Unknown) {
        const ChatMessage msgs[] = {{"system", "Be brief."}, {"user", text}};
        check_ids(tok, tok.encode(render_chat(format, msgs, true), tok.add_bos()), "chat");
    }
    if (has_fim(tok)) check_ids(tok, fim_tokens(tok, text, "\nreturn x\n"), "fim");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<VocabMeta> bases = load_bases();
    Input in{data, size};
    VocabMeta m = bases[in.u8() % bases.size()];
    const std::string text = in.bytes(in.u8());
    std::map<std::string, gguf::MetaValue> retyped;
    std::vector<std::string> removed;
    for (int k = 0; !in.empty() && k < 32; ++k) apply_op(m, in, retyped, removed);
    try {
        const std::vector<uint8_t> bytes = write(m, retyped, removed);
        auto file = gguf::File::parse(bytes.data(), bytes.size(), "edited.gguf");
        auto tok = Tokenizer::from_gguf(*file);
        use(*tok, text);
    } catch (const Error&) {
        // refused with a message: what a bad file must get
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vocab_fuzz: an exception other than flint::Error escaped: %s\n", e.what());
        std::abort();
    }
    return 0;
}
