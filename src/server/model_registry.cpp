#include "server/model_registry.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "model/model.h"
#include "gguf/gguf.h"
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

ModelEntry& ModelRegistry::load(const ModelSpec& spec, const RuntimeConfig& cfg, const std::string& chat_format_override,
                                bool progress) {
    for (auto& m : models_)
        if (m->name == spec.name) fail("model name '", spec.name, "' is given twice");
    auto t0 = std::chrono::steady_clock::now();
    if (progress) std::fprintf(stderr, "flint: loading model '%s' from %s …\n", spec.name.c_str(), spec.path.c_str());
    auto e = std::make_unique<ModelEntry>();
    e->name = spec.name;
    e->path = spec.path;
    std::shared_ptr<Model> model = Model::load(spec.path);
    e->model = model;
    e->tokenizer = Tokenizer::from_gguf(*model->file);
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
    }
    models_.push_back(std::move(e));
    return *models_.back();
}

ModelEntry* ModelRegistry::find(const std::string& name) {
    if (name.empty()) return models_.size() == 1 ? models_.front().get() : nullptr;
    for (auto& m : models_)
        if (m->name == name) return m.get();
    return nullptr;
}

void ModelRegistry::drain_all() {
    for (auto& m : models_) m->runtime->drain();
}

}  // namespace flint::server
