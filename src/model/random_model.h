// flint/model/random_model.h — a GGUF of a real model's shape (model/shapes.h) with random weights and a
// real tokenizer (what `flint mkmodel` runs). Tensor names and metadata keys are llama.cpp's, so other
// GGUF engines load the file too. Weights are drawn per row from a seeded generator (the file depends on
// the seed only, not on the thread count) and quantized on the fly while streaming to disk.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/shapes.h"
#include "tensor/dtype.h"

namespace flint {
namespace gguf { class Writer; }

// Where the tokenizer comes from: Hugging Face files (vocab.json + merges.txt, optional
// added_tokens.json, tokenizer_config.json, chat template), or every tokenizer.* key of an existing GGUF.
struct TokenizerFiles {
    std::string vocab_json = {};
    std::string merges = {};
    std::string added_tokens = {};      // optional: {"<|endoftext|>": 151643, …}, marked CONTROL
    std::string tokenizer_config = {};  // optional: eos/pad/bos tokens, chat_template when no template file
    std::string chat_template = {};     // optional: a .jinja file
    std::string pre = "qwen2";     // tokenizer.ggml.pre
    std::string vocab_from = {};        // a GGUF: when set, the fields above are ignored
};

// The defaults: ../shared/tokenizers/qwen2/* (beside the working directory or the source tree) when present.
TokenizerFiles default_tokenizer_files();

// Adds the tokenizer.* keys; returns the number of tokens. Tokens from vocab.json/added tokens are padded
// with "[PAD<id>]" UNUSED tokens up to `pad_to` (the real Qwen2.5 conversions do the same). Throws
// flint::Error naming the file on any problem.
uint32_t add_tokenizer(gguf::Writer& w, const TokenizerFiles& files, uint32_t pad_to);

struct RandomModelOptions {
    ModelShape shape;
    DType type = DType::Q8_0;     // the 2-D weights; norms and biases are F32
    uint64_t seed = 42;
    uint32_t ctx = 0;             // context_length to record; 0: the shape's
    int threads = 0;              // 0: all cores
    TokenizerFiles tokenizer = default_tokenizer_files();
    // Called as each tensor starts streaming: (index, count, name).
    std::function<void(size_t, size_t, const std::string&)> on_tensor = nullptr;
};

struct RandomModelResult {
    uint64_t n_params = 0;
    uint64_t data_bytes = 0;
    uint32_t n_vocab = 0;
    std::vector<std::string> notes;  // type fallbacks, vocab size changes
};

RandomModelResult write_random_model(const RandomModelOptions& o, const std::string& out_path);

}  // namespace flint
