// libFuzzer target for the GGUF reader: any input must either parse or throw flint::Error — never crash,
// hang or read out of bounds (built with ASan + UBSan). A file that parses is then read the way a loader
// and `flint inspect` would (every value printed, every tensor's bytes touched), copied through the writer
// when the writer accepts it, and the copy must parse to the same keys and tensors.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
    std::fprintf(stderr, "gguf_fuzz: property failed: %s\n", what);
    std::abort();  // libFuzzer reports it as a crash and saves the input that caused it
}

void read_everything(const flint::gguf::File& f) {
    volatile uint64_t sink = 0;
    for (const auto& [key, v] : f.metadata()) {
        sink = sink + v.to_string(1000).size() + key.size();
        if (f.find(key) != &v && f.find(key) == nullptr) property_failed("find misses a parsed key");
    }
    for (const auto& t : f.tensors()) {
        if (t.data < f.base() || t.data + t.n_bytes > f.base() + f.file_size()) property_failed("tensor outside file");
        if (t.n_bytes > 0) sink = sink + t.data[0] + t.data[t.n_bytes - 1];
        sink = sink + t.shape_string().size();
    }
    (void)sink;
}

void copy_and_compare(const flint::gguf::File& f) {
    std::vector<uint8_t> copy;
    try {
        flint::gguf::Writer w;
        w.copy_metadata(f);
        for (const auto& t : f.tensors()) w.add_tensor_view(t.name, t.type, t.dims, t.data, t.n_bytes);
        copy = w.write_buffer();
    } catch (const flint::Error&) {
        return;  // the writer is stricter (e.g. 0-D tensors, general.alignment not u32): nothing to compare
    }
    auto g = flint::gguf::File::parse(copy.data(), copy.size(), "copy");  // must not throw
    if (g->metadata().size() != f.metadata().size() || g->tensors().size() != f.tensors().size())
        property_failed("copy differs in counts");
    for (size_t k = 0; k < f.metadata().size(); ++k)
        if (g->metadata()[k].first != f.metadata()[k].first ||
            g->metadata()[k].second.to_string(1000) != f.metadata()[k].second.to_string(1000))
            property_failed("copy differs in metadata");
    for (size_t k = 0; k < f.tensors().size(); ++k) {
        const auto &a = f.tensors()[k], &b = g->tensors()[k];
        if (a.name != b.name || a.type != b.type || a.dims != b.dims || a.n_bytes != b.n_bytes ||
            std::memcmp(a.data, b.data, a.n_bytes) != 0)
            property_failed("copy differs in tensors");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::shared_ptr<flint::gguf::File> f;
    try {
        f = flint::gguf::File::parse(data, size, "fuzz");
    } catch (const flint::Error&) {
        return 0;
    }
    read_everything(*f);
    copy_and_compare(*f);
    return 0;
}
