#include "model/model.h"

#include "gguf/gguf.h"

namespace flint {

std::shared_ptr<Model> Model::from_file(std::shared_ptr<gguf::File> file) {
    auto m = std::make_shared<Model>();
    m->file = std::move(file);
    m->config = read_config(*m->file);
    m->weights = bind_weights(*m->file, m->config, m->owned);
    return m;
}

std::shared_ptr<Model> Model::load(const std::string& path, Residency residency) {
    auto m = from_file(gguf::File::open(path, residency));
    m->file->mapping().modify([&](uint8_t*) { m->repacked = repack_matrices(m->weights); });
    return m;
}

}  // namespace flint
