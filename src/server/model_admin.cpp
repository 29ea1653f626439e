#include "server/model_admin.h"

#include <filesystem>

#include "server/errors.h"
#include "server/json_fields.h"
#include "server/state.h"

namespace flint::server {
namespace {

namespace fs = std::filesystem;

// The file to load: as given, or (with a models directory) resolved inside it and refused outside it.
std::string resolve_path(const ServerState& st, const std::string& path) {
    if (st.cfg.models_dir.empty()) return path;
    std::error_code ec;
    const fs::path root = fs::weakly_canonical(fs::path(st.cfg.models_dir), ec);
    const fs::path p = fs::weakly_canonical(root / fs::path(path), ec);  // an absolute `path` replaces root
    if (ec) throw bad_request("Invalid 'path': " + ec.message() + ".", "path", "invalid_value");
    auto rel = p.lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..")
        throw ApiError{403, "invalid_request_error", "forbidden", "path",
                       "Models can only be loaded from the server's models directory (--models-dir)."};
    return p.string();
}

}  // namespace

Reply load_model(ServerState& st, const std::string& body, const ApiKey* key) {
    st.auth.check_admin(key);
    const json j = parse_body(body);
    if (!j.is_object()) throw bad_request("The body must be a JSON object {\"path\": …, \"id\": …}.", "", "invalid_type");
    const auto path = opt_string(j, "path", "path");
    if (!path || path->empty()) throw bad_request("Missing required parameter: 'path'.", "path", "missing_required_parameter");
    ModelSpec spec{opt_string(j, "id", "id").value_or(""), resolve_path(st, *path)};
    if (spec.name.empty()) spec.name = fs::path(spec.path).stem().string();
    std::shared_ptr<ModelEntry> m;
    try {
        m = st.models.load(spec, !st.cfg.quiet);
    } catch (const ModelNameTaken& e) {
        throw ApiError{409, "invalid_request_error", "model_already_loaded", "id", e.what()};
    } catch (const InvalidModelName& e) {
        throw bad_request(e.what(), "id", "invalid_value");
    } catch (const ModelFileError& e) {
        throw bad_request(e.what(), "path", "invalid_model_file");
    }
    Reply rep;
    rep.status = 201;
    rep.body = {{"id", m->name}, {"object", "model"}, {"created", m->created}, {"owned_by", "flint"}};
    return rep;
}

Reply unload_model(ServerState& st, const std::string& id, const ApiKey* key) {
    st.auth.check_admin(key);
    if (!st.models.unload(id, "The model '" + id + "' was unloaded while this request was running."))
        throw not_found("The model '" + id + "' does not exist on this server (GET /v1/models lists them).", "model",
                        "model_not_found");
    Reply rep;
    rep.body = {{"id", id}, {"object", "model"}, {"deleted", true}};
    return rep;
}

}  // namespace flint::server
