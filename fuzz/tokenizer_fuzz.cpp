// libFuzzer target for the tokenizers: any bytes — broken UTF-8, special-token spellings, long runs — go
// through every real vocabulary in ../shared (SPM and byte-level BPE with each pre-tokenizer family), and
// these properties must hold:
//   - every id is in the vocabulary, and encoding the same text twice gives the same ids (the BPE piece
//     cache carries over from input to input, so a stale or mis-keyed entry shows up here);
//   - decode(encode(text), strip the space prefix) == text, for text the vocabulary can spell (some BPE
//     vocabs have no symbol for a few bytes, which encode drops as llama.cpp does; SPM decodes a U+2581
//     written in the text as a space);
//   - the text cut in two plain parts encodes as the whole (encode(parts) joins text between specials);
//   - the stream decoder gives out valid UTF-8 only, and altogether the raw decode, sanitized;
//   - with parse_special, the ids are in the vocabulary and a BPE vocab still decodes to the text.
// A broken property aborts with the tokenizer's name and the text's bytes, so libFuzzer saves the input.
// Byte 0 picks the vocabulary, byte 1 where the text is cut; the rest is the text.
//   cmake -S . -B build-fuzz -DFLINT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ && cmake --build build-fuzz --target tokenizer_fuzz
//   build-fuzz/tokenizer_fuzz -max_len=4096 corpus-tok/     (FLINT_SHARED=DIR overrides ../shared)
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

using namespace flint;

namespace {

struct Vocabulary {
    std::string name;
    std::shared_ptr<Tokenizer> tok;
    std::array<bool, 256> spellable{};  // a byte alone comes back from decode(encode(byte))
};

const char* const kFiles[] = {
    "models/stories260K.gguf",          "models/tiny-qwen2-f32.gguf",
    "models/flint-tiny-code.gguf",      "tokenizers/vocab-tests/ggml-vocab-llama-spm.gguf",
    "tokenizers/vocab-tests/ggml-vocab-phi-3.gguf", "tokenizers/vocab-tests/ggml-vocab-gpt-2.gguf",
    "tokenizers/vocab-tests/ggml-vocab-falcon.gguf", "tokenizers/vocab-tests/ggml-vocab-mpt.gguf",
    "tokenizers/vocab-tests/ggml-vocab-starcoder.gguf", "tokenizers/vocab-tests/ggml-vocab-refact.gguf",
    "tokenizers/vocab-tests/ggml-vocab-deepseek-coder.gguf",
};

std::vector<Vocabulary> load_all() {
    const char* env = std::getenv("FLINT_SHARED");
    const std::string dir = env && *env ? env : FLINT_SHARED_DIR;
    std::vector<Vocabulary> out;
    for (const char* rel : kFiles) {
        Vocabulary v;
        v.name = rel;
        try {
            auto f = gguf::File::open(dir + "/" + rel);
            v.tok = Tokenizer::from_gguf(*f);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "tokenizer_fuzz: skipping %s: %s\n", rel, e.what());
            continue;
        }
        for (int b = 0; b < 256; ++b) {
            const std::string one(1, static_cast<char>(b));
            v.spellable[size_t(b)] = v.tok->decode(v.tok->encode(one, false, false), true) == one;
        }
        out.push_back(std::move(v));
    }
    if (out.empty()) {
        std::fprintf(stderr, "tokenizer_fuzz: no vocabulary found under %s (set FLINT_SHARED)\n", dir.c_str());
        std::abort();
    }
    return out;
}

std::string escaped(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        char buf[8];
        if (c >= 0x20 && c < 0x7f && c != '\\') out += char(c);
        else std::snprintf(buf, sizeof buf, "\\x%02x", c), out += buf;
    }
    return out;
}

[[noreturn]] void broken(const Vocabulary& v, std::string_view text, const char* what, const std::string& detail = {}) {
    std::fprintf(stderr, "tokenizer_fuzz: %s: %s\n  text: \"%s\"\n%s%s", v.name.c_str(), what, escaped(text).c_str(),
                 detail.empty() ? "" : "  ", detail.empty() ? "" : (detail + "\n").c_str());
    std::abort();
}

std::string ids_text(const std::vector<TokenId>& ids) {
    std::string s;
    for (TokenId id : ids) s += std::to_string(id) + " ";
    return s;
}

void check_ids(const Vocabulary& v, std::string_view text, const std::vector<TokenId>& ids) {
    for (TokenId id : ids)
        if (id < 0 || id >= v.tok->n_vocab()) broken(v, text, "an id outside the vocabulary", ids_text(ids));
}

void check(const Vocabulary& v, std::string_view text, size_t cut) {
    const Tokenizer& tok = *v.tok;
    const std::vector<TokenId> ids = tok.encode(text, false, false);
    check_ids(v, text, ids);
    if (tok.encode(text, false, false) != ids) broken(v, text, "a second encode differs", ids_text(ids));

    bool spellable = true;
    for (unsigned char c : text) spellable &= v.spellable[c];
    if (spellable) {
        // SentencePiece spells a space as U+2581 and decodes every U+2581 as a space, the one written in
        // the text too (as the reference engine does).
        const bool spm = tok.model_kind() == "llama";
        std::string expected;
        for (size_t i = 0; i < text.size();)
            if (spm && text.compare(i, 3, "\xE2\x96\x81") == 0) {
                expected += ' ';
                i += 3;
            } else {
                expected += text[i++];
            }
        const std::string back = tok.decode(ids, true);
        if (back != expected) broken(v, text, "decode(encode(text)) differs", "back: \"" + escaped(back) + "\"");
    }

    const TextPart parts[2] = {{std::string(text.substr(0, cut)), false}, {std::string(text.substr(cut)), false}};
    if (tok.encode(parts, false) != ids) broken(v, text, "two plain parts encode differently from the whole", "cut at " + std::to_string(cut));

    StreamDecoder stream(tok);
    std::string streamed;
    for (TokenId id : ids) {
        const std::string delta = stream.push(id);
        if (!utf8::is_valid(delta)) broken(v, text, "the stream decoder gave out invalid UTF-8", escaped(delta));
        streamed += delta;
    }
    const std::string rest = stream.flush();
    if (!utf8::is_valid(rest)) broken(v, text, "the stream decoder's flush gave out invalid UTF-8", escaped(rest));
    streamed += rest;
    if (streamed != utf8::sanitize(tok.decode(ids, false)))
        broken(v, text, "streamed text differs from the sanitized decode", "streamed: \"" + escaped(streamed) + "\"");

    const std::vector<TokenId> special = tok.encode(text, true, true);
    check_ids(v, text, special);
    if (spellable && tok.model_kind() == "gpt2") {
        const size_t skip = !special.empty() && tok.bos() >= 0 && special.front() == tok.bos() ? 1 : 0;
        const std::string back = tok.decode(std::span(special).subspan(skip));
        if (back != text) broken(v, text, "with parse_special, decode(encode(text)) differs", "back: \"" + escaped(back) + "\"");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<Vocabulary> vocabs = load_all();
    if (size < 2) return 0;
    const Vocabulary& v = vocabs[data[0] % vocabs.size()];
    const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
    check(v, text, text.empty() ? 0 : data[1] % (text.size() + 1));
    return 0;
}
