// flint/model/model.h — a loaded model: its file (in memory, see load), config and weights. Immutable once loaded and
// shared by every sequence and thread; per-sequence state (KV) and scratch buffers live elsewhere.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "util/mapped_file.h"

namespace flint {
namespace gguf { class File; }

struct Model {
    std::shared_ptr<gguf::File> file;
    ModelConfig config;
    ModelWeights weights;
    std::vector<std::vector<float>> owned;  // f32 copies of small vectors stored in other types
    int repacked = 0;  // matrices rewritten at load for this CPU's kernels (tensor/repack.h)

    // Loads and validates a GGUF model; throws flint::Error with the file, tensor and shapes on mismatch.
    // The bytes go onto huge pages by default (decode reads every weight per token: see
    // util/huge_pages.h) and, where this CPU has faster kernels for another layout, repacked in place
    // (tensor/repack.h); Residency::Map keeps them in the page cache, zero-copy, as the file has them.
    static std::shared_ptr<Model> load(const std::string& path, Residency residency = Residency::HugePages);
    static std::shared_ptr<Model> from_file(std::shared_ptr<gguf::File> file);
};

}  // namespace flint
