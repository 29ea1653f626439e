#include "server/model_registry.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "gguf/gguf.h"
#include "model/attention.h"
#include "model/model.h"
#include "util/error.h"

namespace flint::server {

ModelSpec parse_model_spec(const std::string& arg) {
    ModelSpec s;
    auto eq = arg.find('=');
    // A path may itself contain '=', but a name never contains '/': only split when the left side is a name.
    if (eq != std::string::npos && arg.substr(0, eq).find('/') == std::string::npos && eq > 0) {
        s.name = arg.substr(0, eq);
        s.path = arg.substr(eq + 1);
    } else {
        s.path = arg;
    }
    if (s.name.empty()) s.name = std::filesystem::path(s.path).stem().string();
    return s;
}

namespace {

void check_name(const std::string& name) {
    if (name.empty() || name.size() > 128) throw InvalidModelName("model name must be 1 to 128 characters");
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' && c != '-')
            throw InvalidModelName("model name '" + name + "' may only contain letters, digits, '.', '_', ':' and '-'");
}

}  // namespace

ModelEntry& ModelRegistry::load(const ModelSpec& spec, const RuntimeConfig& cfg, const std::string& chat_format_override,
                                bool progress) {
    {
        std::lock_guard lk(mu_);
        defaults_ = cfg;
        chat_format_ = chat_format_override;
    }
    return *load(spec, progress);
}

std::shared_ptr<ModelEntry> ModelRegistry::load(const ModelSpec& spec, bool progress) {
    check_name(spec.name);
    RuntimeConfig cfg;
    std::string chat_format_override;
    {
        std::lock_guard lk(mu_);
        for (auto& m : models_)
            if (m->name == spec.name) throw ModelNameTaken("a model named '" + spec.name + "' is already loaded");
        if (!loading_.insert(spec.name).second) throw ModelNameTaken("a model named '" + spec.name + "' is being loaded");
        cfg = defaults_;
        chat_format_override = chat_format_;
    }
    struct Release {  // the name is reserved until the entry is published or the load failed
        ModelRegistry& r;
        const std::string& name;
        ~Release() {
            std::lock_guard lk(r.mu_);
            r.loading_.erase(name);
        }
    } release{*this, spec.name};

    auto t0 = std::chrono::steady_clock::now();
    if (progress) std::fprintf(stderr, "flint: loading model '%s' from %s …\n", spec.name.c_str(), spec.path.c_str());
    std::error_code ec;
    if (!std::filesystem::is_regular_file(spec.path, ec))
        throw ModelFileError("model file '" + spec.path + "' " +
                             (std::filesystem::exists(spec.path, ec) ? "is not a regular file" : "does not exist"));
    auto e = std::make_shared<ModelEntry>();
    e->name = spec.name;
    e->path = spec.path;
    std::shared_ptr<Model> model;
    try {
        model = Model::load(spec.path, residency_);
        e->tokenizer = Tokenizer::from_gguf(*model->file);
    } catch (const Error& err) {
        throw ModelFileError("cannot load model '" + spec.path + "': " + err.what());
    }
    e->model = model;
    RuntimeConfig rc = cfg;
    if (rc.ctx <= 0) rc.ctx = std::min(model->config.ctx_train > 0 ? model->config.ctx_train : 4096, 4096);
    e->ctx = rc.ctx;
    const std::string& tmpl = e->tokenizer->chat_template();
    if (!chat_format_override.empty() || detect_chat_format(tmpl) != ChatFormat::Unknown)
        e->chat_format = resolve_chat_format(tmpl, chat_format_override);
    e->default_system = chat_default_system(tmpl);
    e->runtime = std::make_unique<Runtime>(e->model, e->tokenizer, rc);
    e->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (progress) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "flint: model '%s' ready: %s, ctx %d, chat format %s, %.2f s\n", e->name.c_str(),
                     describe(model->config).c_str(), rc.ctx,
                     e->chat_format ? std::string(chat_format_name(*e->chat_format)).c_str() : "none (plain text)", s);
        if (const std::string w = attention_fallback_warning(model->config.head_dim, rc.block_size); !w.empty())
            std::fprintf(stderr, "flint: warning: model '%s': %s\n", e->name.c_str(), w.c_str());
    }
    std::lock_guard lk(mu_);
    models_.push_back(e);
    return e;
}

bool ModelRegistry::unload(const std::string& name, const std::string& reason) {
    std::shared_ptr<ModelEntry> e;
    {
        std::lock_guard lk(mu_);
        auto it = std::find_if(models_.begin(), models_.end(), [&](const auto& m) { return m->name == name; });
        if (it == models_.end()) return false;
        e = *it;
        models_.erase(it);
    }
    // Outside the lock: other models keep serving while this one's requests end.
    e->runtime->close(reason);
    return true;
}

std::shared_ptr<ModelEntry> ModelRegistry::find(const std::string& name) const {
    std::lock_guard lk(mu_);
    if (name.empty()) return models_.size() == 1 ? models_.front() : nullptr;
    for (auto& m : models_)
        if (m->name == name) return m;
    return nullptr;
}

std::vector<std::shared_ptr<ModelEntry>> ModelRegistry::all() const {
    std::lock_guard lk(mu_);
    return models_;
}

void ModelRegistry::drain_all() {
    for (auto& m : all()) m->runtime->drain();
}

}  // namespace flint::server
