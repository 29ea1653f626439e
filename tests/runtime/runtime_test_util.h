// A runtime over stories260K and a blocking way to run one request through it.
#pragma once
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>

#include "gguf/gguf.h"
#include "model/model.h"
#include "runtime/runtime.h"
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

// Collects the events of one request.
struct Collector {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int32_t> tokens;
    std::string text;
    Event done;
    bool finished = false;

    Runtime::Callback callback() {
        return [this](const Event& e) {
            std::lock_guard lk(mu);
            text += e.text;
            if (e.done) {
                done = e;
                finished = true;
                cv.notify_all();
            } else {
                tokens.push_back(e.token);
            }
        };
    }
    void wait() {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return finished; });
    }
};

inline Event run_one(Runtime& rt, GenerationRequest req, std::string* text = nullptr) {
    Collector c;
    rt.submit(std::move(req), c.callback());
    c.wait();
    if (text) *text = c.text;
    return c.done;
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
