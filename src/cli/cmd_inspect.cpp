// `flint inspect MODEL.gguf` — metadata and tensors of a GGUF file, like gguf-dump.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"

namespace flint::cli {
namespace {

struct InspectOptions {
    std::string path;
    size_t max_items = 8;
    bool no_tensors = false;
};

std::string human_bytes(uint64_t b) {
    char buf[32];
    if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
    else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
    else if (b >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.2f KiB", b / double(1ull << 10));
    else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
    return buf;
}

void inspect(const InspectOptions& o) {
    auto f = gguf::File::open(o.path);
    std::printf("%s: GGUF v%u, %zu metadata keys, %zu tensors, alignment %u, data at offset %llu, file %s\n",
                o.path.c_str(), f->version(), f->metadata().size(), f->tensors().size(), f->alignment(),
                static_cast<unsigned long long>(f->data_offset()), human_bytes(f->file_size()).c_str());
    std::printf("\nmetadata:\n");
    for (const auto& [key, v] : f->metadata()) {
        std::string type(gguf::value_type_name(v.type));
        std::printf("  %-44s %-7s %s\n", key.c_str(), type.c_str(), v.to_string(o.max_items).c_str());
    }
    if (o.no_tensors) return;
    std::printf("\ntensors:\n  %-4s %-36s %-6s %-22s %12s %12s\n", "#", "name", "type", "shape", "elements", "bytes");
    uint64_t total = 0, total_elems = 0;
    for (size_t k = 0; k < f->tensors().size(); ++k) {
        const auto& t = f->tensors()[k];
        std::printf("  %-4zu %-36s %-6s %-22s %12llu %12s\n", k, t.name.c_str(), std::string(dtype_name(t.type)).c_str(),
                    t.shape_string().c_str(), static_cast<unsigned long long>(t.n_elements), human_bytes(t.n_bytes).c_str());
        total += t.n_bytes;
        total_elems += t.n_elements;
    }
    std::printf("\n  total: %llu parameters, %s of tensor data\n", static_cast<unsigned long long>(total_elems),
                human_bytes(total).c_str());
}

}  // namespace

void register_inspect(CLI::App& app) {
    auto o = std::make_shared<InspectOptions>();
    CLI::App* cmd = app.add_subcommand("inspect", "Print a GGUF file's metadata and tensors (name, type, shape, bytes)");
    cmd->add_option("model", o->path, "GGUF file")->required();
    cmd->add_option("--max-items", o->max_items, "Array elements to show per key (0: only type and length)");
    cmd->add_flag("--no-tensors", o->no_tensors, "Only print metadata");
    cmd->callback([o] { inspect(*o); });
}

}  // namespace flint::cli
