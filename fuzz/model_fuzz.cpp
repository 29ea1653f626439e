// libFuzzer target for model loading: stories260K's GGUF (or FLINT_FUZZ_MODEL's, e.g. a qwen2 model in
// Q4_0 from `flint mkmodel --shape tiny --vocab-from stories260K.gguf --type q4_0`) with its metadata and tensors changed the ways a
// corrupt, hand-edited or mis-converted file would be — a key set to another number or type, or removed;
// a tensor's shape or type changed (its bytes resized to match), or the tensor dropped — then loaded as a
// model (config, weights, tokenizer) and, when it loads, run for four tokens (a prompt of three, one
// decode step). Every input must either load and run, or throw flint::Error; a crash, a sanitizer report
// or any other exception is a bug.
// The input is a list of 10-byte edits: [op][index][8-byte value]; index picks the key or the tensor.
//   cmake -S . -B build-fuzz -DFLINT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ && cmake --build build-fuzz --target model_fuzz
//   build-fuzz/model_fuzz -max_len=200 corpus-model/     (FLINT_SHARED=DIR overrides ../shared)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "../tests/model/model_test_util.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "tensor/dtype.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace flint;

namespace {

struct Base {
    std::shared_ptr<gguf::File> file;
    std::vector<std::string> keys;  // scalar keys (the arrays hold the vocabulary; their types are checked elsewhere)
};

const Base& base() {
    static const Base b = [] {
        const char* env = std::getenv("FLINT_SHARED");
        const char* model = std::getenv("FLINT_FUZZ_MODEL");
        const std::string path =
            model && *model ? model : std::string(env && *env ? env : FLINT_SHARED_DIR) + "/models/stories260K.gguf";
        Base out;
        try {
            out.file = gguf::File::open(path, Residency::Map);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "model_fuzz: %s (set FLINT_SHARED)\n", e.what());
            std::abort();
        }
        for (const auto& [key, v] : out.file->metadata())
            if (v.type != gguf::ValueType::ARRAY) out.keys.push_back(key);
        const std::string arch = out.file->get_string("general.architecture", "llama") + ".";
        for (const char* optional : {"attention.key_length", "rope.dimension_count", "rope.scaling.type", "rope.scaling.factor",
                                     "rope.scaling.original_context_length", "vocab_size"})
            if (!out.file->has(arch + optional)) out.keys.push_back(arch + optional);
        return out;
    }();
    return b;
}

struct TensorEdit {
    DType type;
    std::vector<uint64_t> dims;
    bool dropped = false;
};

// The edited file as bytes, or empty when the writer refuses the edits (a shape the type cannot hold).
std::vector<uint8_t> edited(const uint8_t* data, size_t size) {
    const Base& b = base();
    const auto& tensors = b.file->tensors();
    gguf::Writer w;
    w.copy_metadata(*b.file);
    std::vector<TensorEdit> edits;
    for (const auto& t : tensors) edits.push_back({t.type, t.dims});
    for (; size >= 10; data += 10, size -= 10) {
        const uint8_t op = data[0], index = data[1];
        uint64_t v = 0;
        std::memcpy(&v, data + 2, 8);
        const std::string& key = b.keys[index % b.keys.size()];
        TensorEdit& t = edits[index % edits.size()];
        switch (op % 9) {
            case 0: w.set(key, gguf::MetaValue::u32(uint32_t(v))); break;
            case 1: w.set(key, gguf::MetaValue::u64(v)); break;
            case 2: w.set(key, gguf::MetaValue::i32(int32_t(v))); break;
            case 3: {
                float f;
                const uint32_t bits = uint32_t(v);
                std::memcpy(&f, &bits, 4);
                w.set(key, gguf::MetaValue::f32(f));
                break;
            }
            case 4: w.set(key, gguf::MetaValue::string(v % 2 ? "yarn" : std::string(reinterpret_cast<const char*>(data + 2), 8))); break;
            case 5: w.remove(key); break;
            case 6: t.dims[(v >> 32) % t.dims.size()] = 1 + v % 600; break;  // small enough to stay quick
            case 7: t.type = DType(uint32_t(v % 32)); break;
            case 8: t.dropped = true; break;
        }
    }
    try {
        for (size_t i = 0; i < tensors.size(); ++i) {
            const TensorEdit& e = edits[i];
            if (e.dropped) continue;
            const auto& src = tensors[i];
            if (e.type == src.type && e.dims == src.dims) {
                w.add_tensor_view(src.name, src.type, src.dims, src.data, src.n_bytes);
                continue;
            }
            const uint64_t n = gguf::Writer::tensor_bytes(src.name, e.type, e.dims);
            if (n > (uint64_t(16) << 20)) return {};
            std::vector<uint8_t> bytes(n);
            for (uint64_t k = 0; k < n; ++k) bytes[k] = src.data[k % src.n_bytes];  // the old bytes, repeated
            w.add_tensor(src.name, e.type, e.dims, std::move(bytes));
        }
        return w.write_buffer();
    } catch (const Error&) {
        return {};
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<uint8_t> bytes = edited(data, size);
    if (bytes.empty()) return 0;
    try {
        auto file = gguf::File::parse(bytes.data(), bytes.size(), "edited.gguf");
        auto model = Model::from_file(file);
        auto tok = Tokenizer::from_gguf(*file);
        test::Runner r(model, 8);
        const int32_t n_vocab = model->config.n_vocab;
        const std::vector<float> prompt = r.run({1 % n_vocab, 2 % n_vocab, 3 % n_vocab}, 0, Logits::Last);
        const std::vector<float> next = r.run({4 % n_vocab}, 3, Logits::Last);
        volatile float sink = prompt.back() + next.back();
        (void)sink;
    } catch (const Error&) {
        // refused with a message: what a bad file must get
    } catch (const std::exception& e) {
        std::fprintf(stderr, "model_fuzz: an exception other than flint::Error escaped: %s\n", e.what());
        std::abort();
    }
    return 0;
}
