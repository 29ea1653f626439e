// flint/server/model_registry.h — the models a server serves: name → weights, tokenizer, engine.
//
// Each entry owns one Runtime (one engine thread). Names come from `-m name=path` or the file's stem.
// The chat format is resolved once at load: the model's own template, an override (--chat-format), or
// none — then chat endpoints use the plain-text fallback documented in README (conversation.h).
//
// Models can be loaded and unloaded while serving (POST/DELETE /v1/models, model_admin.cpp). Entries are
// shared: a request holds its model (PreparedResponse::model) until it is done, so an unload never pulls
// the engine from under a request; unload() ends the model's requests with a clear error and waits until
// none is running, and the engine thread is joined when the last holder lets go.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "runtime/runtime.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/mapped_file.h"

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

// load() refusals, so the admin endpoint can tell the client's mistake from the server's.
struct ModelNameTaken : Error { using Error::Error; };     // 409: a model of that name is served or loading
struct ModelFileError : Error { using Error::Error; };     // 400: no such file, not a GGUF model, unsupported
struct InvalidModelName : Error { using Error::Error; };   // 400: empty or with characters outside [A-Za-z0-9._:-]

class ModelRegistry {
public:
    // Loads a model and starts its engine (safe while serving: other models keep running). `progress`
    // prints a line per model while it loads. The settings become the defaults for load(spec) below.
    ModelEntry& load(const ModelSpec& spec, const RuntimeConfig& cfg, const std::string& chat_format_override, bool progress);
    // Loads with the settings of the last load() above (the command line's), for models added at run time.
    std::shared_ptr<ModelEntry> load(const ModelSpec& spec, bool progress = false);
    // Where models loaded from now on keep their weights: read onto huge pages (the default: fastest decode,
    // repacked for the kernels) or mapped from the file (`flint serve --mmap`: shared page cache with other
    // processes, the file's layout).
    void set_residency(Residency r) { residency_ = r; }
    // Takes the model out of service: new requests no longer find it, its queued and running requests end
    // with FinishReason::Error and `reason`, and this returns once none is running. False when unknown.
    bool unload(const std::string& name, const std::string& reason);

    // nullptr when unknown. An empty name picks the only model when exactly one is served.
    std::shared_ptr<ModelEntry> find(const std::string& name) const;
    std::vector<std::shared_ptr<ModelEntry>> all() const;  // a snapshot, in load order
    void drain_all();  // cancels everything on every engine (shutdown)

private:
    mutable std::mutex mu_;
    std::vector<std::shared_ptr<ModelEntry>> models_;
    std::set<std::string> loading_;  // names reserved by loads in progress
    RuntimeConfig defaults_;
    std::string chat_format_;
    Residency residency_ = Residency::HugePages;
};

}  // namespace flint::server
