// flint/server/model_registry.h — the models a server serves: name → weights, tokenizer, engine.
//
// Each entry owns one Runtime (one engine thread). Names come from `-m name=path` or the file's stem.
// The chat format is resolved once at load: the model's own template, an override (--chat-format), or
// none — then chat endpoints use the plain-text fallback documented in README (conversation.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "runtime/runtime.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace flint::server {

struct ModelEntry {
    std::string name;
    std::string path;
    std::shared_ptr<const Model> model;
    std::shared_ptr<const Tokenizer> tokenizer;
    std::unique_ptr<Runtime> runtime;
    std::optional<ChatFormat> chat_format;  // nullopt: plain-text fallback
    std::string default_system;             // what the template inserts when there is no system message
    int64_t created = 0;                    // unix seconds when loaded
    int ctx = 0;
};

struct ModelSpec {
    std::string name;  // "" → the file's stem
    std::string path;
};
// "name=path" or "path".
ModelSpec parse_model_spec(const std::string& arg);

class ModelRegistry {
public:
    // Loads a model and starts its engine. `progress` prints a line per model while it loads.
    ModelEntry& load(const ModelSpec& spec, const RuntimeConfig& cfg, const std::string& chat_format_override, bool progress);
    // nullptr when unknown. An empty name picks the only model when exactly one is served.
    ModelEntry* find(const std::string& name);
    const std::vector<std::unique_ptr<ModelEntry>>& all() const { return models_; }
    void drain_all();  // cancels everything on every engine (shutdown)

private:
    std::vector<std::unique_ptr<ModelEntry>> models_;
};

}  // namespace flint::server
