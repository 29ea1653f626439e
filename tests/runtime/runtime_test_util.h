// A runtime over stories260K and a blocking way to run one request through it.
#pragma once
#include <memory>

#include "gguf/gguf.h"
#include "model/model.h"
#include "runtime/runtime.h"
#include "runtime/waiter.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace flint::test {

struct Loaded {
    std::shared_ptr<Model> model;
    std::shared_ptr<Tokenizer> tok;
};

inline Loaded load_stories() {
    Loaded l;
    l.model = Model::load(shared_path("models/stories260K.gguf"));
    l.tok = Tokenizer::from_gguf(*l.model->file);
    return l;
}

inline Event run_one(Runtime& rt, GenerationRequest req, std::string* text = nullptr) {
    return run_to_completion(rt, std::move(req), text);
}

inline GenerationRequest greedy_request(std::vector<int32_t> prompt, int max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

}  // namespace flint::test
