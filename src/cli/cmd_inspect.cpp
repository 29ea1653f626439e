// `flint inspect MODEL.gguf` — metadata and tensors of a GGUF file, like gguf-dump.
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "gguf/gguf.h"

namespace flint::cli {
namespace {

struct InspectOptions {
    std::string path;
    size_t max_items = 8;
    bool no_tensors = false;
    bool json = false;
};

std::string human_bytes(uint64_t b) {
    char buf[32];
    if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
    else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
    else if (b >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.2f KiB", b / double(1ull << 10));
    else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
    return buf;
}

// A numeric array element as JSON (integers exact, floats as double).
nlohmann::ordered_json element(const gguf::Value& v, uint64_t k) {
    const uint8_t* p = v.raw + k * gguf::value_type_size(v.elem);
    auto get = [p]<typename T>(T) { T x; std::memcpy(&x, p, sizeof x); return x; };
    switch (v.elem) {
        case gguf::ValueType::U8: return get(uint8_t{});
        case gguf::ValueType::I8: return get(int8_t{});
        case gguf::ValueType::U16: return get(uint16_t{});
        case gguf::ValueType::I16: return get(int16_t{});
        case gguf::ValueType::U32: return get(uint32_t{});
        case gguf::ValueType::I32: return get(int32_t{});
        case gguf::ValueType::U64: return get(uint64_t{});
        case gguf::ValueType::I64: return get(int64_t{});
        case gguf::ValueType::F32: return get(float{});
        case gguf::ValueType::F64: return get(double{});
        case gguf::ValueType::BOOL: return *p != 0;
        default: return nullptr;
    }
}

// {"type": …, "value": …} (ordered_json: keys stay in file order); arrays give their element type and count and at most max_items values.
nlohmann::ordered_json to_json(const gguf::Value& v, size_t max_items) {
    nlohmann::ordered_json j = {{"type", gguf::value_type_name(v.type)}};
    switch (v.type) {
        case gguf::ValueType::STRING: j["value"] = std::string(v.s); break;
        case gguf::ValueType::BOOL: j["value"] = v.u != 0; break;
        case gguf::ValueType::F32: case gguf::ValueType::F64: j["value"] = v.f; break;
        case gguf::ValueType::I8: case gguf::ValueType::I16: case gguf::ValueType::I32: case gguf::ValueType::I64:
            j["value"] = v.i;
            break;
        case gguf::ValueType::ARRAY: {
            j["elem"] = gguf::value_type_name(v.elem);
            j["count"] = v.count;
            nlohmann::ordered_json items = nlohmann::ordered_json::array();
            for (uint64_t k = 0; k < v.count && k < max_items; ++k) {
                if (v.elem == gguf::ValueType::STRING) items.push_back(std::string(v.strings[k]));
                else if (v.elem == gguf::ValueType::ARRAY) items.push_back(to_json(v.arrays[k], max_items));
                else items.push_back(element(v, k));
            }
            j["values"] = std::move(items);
            break;
        }
        default: j["value"] = v.u; break;
    }
    return j;
}

void inspect_json(const InspectOptions& o, const gguf::File& f) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, v] : f.metadata()) meta[key] = to_json(v, o.max_items);
    nlohmann::ordered_json j = {{"path", o.path},           {"version", f.version()},       {"alignment", f.alignment()},
                        {"data_offset", f.data_offset()}, {"file_size", f.file_size()}, {"metadata", std::move(meta)}};
    if (!o.no_tensors) {
        nlohmann::ordered_json ts = nlohmann::ordered_json::array();
        for (const auto& t : f.tensors())
            ts.push_back({{"name", t.name}, {"type", dtype_name(t.type)}, {"shape", t.dims}, {"offset", t.offset},
                          {"bytes", t.n_bytes}});
        j["tensors"] = std::move(ts);
    }
    // Token strings need not be valid UTF-8 (byte-level pieces): replace rather than throw.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

void inspect(const InspectOptions& o) {
    auto f = gguf::File::open(o.path);
    if (o.json) return inspect_json(o, *f);
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
    cmd->add_flag("--json", o->json, "Print JSON (arrays cut to --max-items values, with their full count)");
    cmd->callback([o] { inspect(*o); });
}

}  // namespace flint::cli
