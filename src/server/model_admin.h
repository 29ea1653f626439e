// flint/server/model_admin.h — loading and unloading models while serving (admin key):
//   POST   /v1/models        {"path": "file.gguf", "id": "name"}  → 201, the model object
//   DELETE /v1/models/{id}                                         → 200 {"id", "object": "model", "deleted": true}
// A load runs on the calling I/O thread (the weights are read: 0.6 s for the 0.5B Q8_0 model); other
// models keep serving. An unload ends the model's queued and running requests with a clear error
// ("model 'x' was unloaded") and returns once none is left. With ServerConfig::models_dir set, only files
// inside that directory can be loaded (relative paths are taken from there).
#pragma once
#include <string>

#include "server/router.h"

namespace flint::server {

Reply load_model(ServerState& st, const std::string& body, const ApiKey* key);
Reply unload_model(ServerState& st, const std::string& id, const ApiKey* key);

}  // namespace flint::server
