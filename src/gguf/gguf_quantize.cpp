// Converting a GGUF file's weights to another type. See gguf_quantize.h.
#include "gguf/gguf_quantize.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "gguf/gguf_writer.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace flint::gguf {
namespace {

// Output bytes converted per chunk: big enough to keep every thread busy, small enough that memory
// stays flat on multi-GB models.
constexpr uint64_t kChunkBytes = 32ull << 20;

bool is_float_source(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::string target_names() {
    std::string s;
    for (DType t : quantize_targets()) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
    return s;
}

// Converts `n_rows` rows of `row_len` elements from `src_type` to `dst_type`, in parallel.
void convert_rows(DType src_type, const uint8_t* src, DType dst_type, uint8_t* dst, int64_t n_rows, int64_t row_len,
                  int threads) {
    const size_t in_row = row_bytes(src_type, row_len), out_row = row_bytes(dst_type, row_len);
    if (n_rows * row_len < (1 << 16)) threads = 1;  // smaller than a thread start is worth
    parallel_ranges(n_rows, threads, [&](int64_t begin, int64_t end) {
        std::vector<float> scratch(src_type == DType::F32 ? 0 : row_len);
        for (int64_t r = begin; r < end; ++r) {
            const float* x = reinterpret_cast<const float*>(src + r * in_row);  // F32 rows: used in place
            if (src_type != DType::F32) {
                dequantize_row_ref(src_type, src + r * in_row, scratch.data(), row_len);
                x = scratch.data();
            }
            quantize_row_ref(dst_type, x, dst + r * out_row, row_len);
        }
    });
}

}  // namespace

DType block_fallback(DType k_quant) {
    // llama.cpp's choices for rows that K-quants cannot hold (Qwen2.5-0.5B's 896-wide rows): a 32-block
    // type of about the same bits, so a "q4_k" file keeps roughly its size and quality.
    DType t = k_quant == DType::Q6_K   ? DType::Q8_0
              : k_quant == DType::Q5_K ? DType::Q5_1
              : k_quant == DType::Q4_K ? DType::Q5_0
                                       : DType::IQ4_NL;
    return can_quantize(t) ? t : DType::Q8_0;
}

void parallel_ranges(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int64_t parts = std::min<int64_t>(threads, n);
    std::exception_ptr first;
    std::mutex mu;
    auto run = [&](int64_t k) {
        try {
            fn(n * k / parts, n * (k + 1) / parts);
        } catch (...) {
            std::lock_guard lock(mu);
            if (!first) first = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(parts - 1);
    for (int64_t k = 1; k < parts; ++k) pool.emplace_back(run, k);
    run(0);
    for (std::thread& t : pool) t.join();
    if (first) std::rethrow_exception(first);
}

std::vector<DType> quantize_targets() {
    std::vector<DType> out;
    for (DType t : {DType::Q8_0, DType::Q6_K, DType::Q5_K, DType::Q5_1, DType::Q5_0, DType::Q4_K, DType::Q4_1,
                    DType::Q4_0, DType::IQ4_XS, DType::IQ4_NL, DType::Q3_K, DType::Q2_K, DType::F16, DType::BF16, DType::F32})
        if (can_quantize(t)) out.push_back(t);
    return out;
}

uint32_t llama_file_type(DType t) {
    switch (t) {
        case DType::F32: return 0;    // LLAMA_FTYPE_ALL_F32
        case DType::F16: return 1;    // MOSTLY_F16
        case DType::Q4_0: return 2;   // MOSTLY_Q4_0
        case DType::Q4_1: return 3;   // MOSTLY_Q4_1
        case DType::Q8_0: return 7;   // MOSTLY_Q8_0
        case DType::Q5_0: return 8;   // MOSTLY_Q5_0
        case DType::Q5_1: return 9;   // MOSTLY_Q5_1
        case DType::Q2_K: return 10;  // MOSTLY_Q2_K
        case DType::IQ4_NL: return 25;  // MOSTLY_IQ4_NL
        case DType::IQ4_XS: return 30;  // MOSTLY_IQ4_XS
        case DType::Q3_K: return 11;  // MOSTLY_Q3_K_S: Q3_K throughout (the _M and _L mixes keep some tensors wider)
        case DType::Q4_K: return 15;  // MOSTLY_Q4_K_M: the usual name for a mostly-Q4_K file
        case DType::Q5_K: return 17;  // MOSTLY_Q5_K_M
        case DType::Q6_K: return 18;  // MOSTLY_Q6_K
        case DType::BF16: return 32;  // MOSTLY_BF16
        default: fail("no llama.cpp file type for ", dtype_name(t));
    }
}

DType parse_quantize_target(const std::string& name) {
    auto t = dtype_from_name(name);
    auto targets = quantize_targets();
    if (!t || std::find(targets.begin(), targets.end(), *t) == targets.end())
        fail("unknown quantization type '", name, "' (valid: ", target_names(), ")");
    return *t;
}

DType choose_tensor_type(const TensorInfo& t, DType target, std::string* note) {
    if (t.dims.size() <= 1) return DType::F32;
    const uint64_t row = t.dim(0);
    const uint32_t block = traits(target).block_elems;
    if (row % block == 0) return target;
    DType fallback = DType::F16;
    if (row % QK == 0 && traits(target).block_elems == QK_K) fallback = block_fallback(target);
    else if (t.type == DType::BF16) fallback = DType::BF16;  // already 16-bit: no reason to round again
    if (note)
        *note = "tensor '" + t.name + "': row length " + std::to_string(row) + " is not a multiple of the " +
                std::string(dtype_name(target)) + " block size " + std::to_string(block) + "; using " +
                std::string(dtype_name(fallback));
    return fallback;
}

QuantizeResult quantize_file(const std::string& in, const std::string& out, const QuantizeOptions& opts) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec))
        fail(out, ": the output is the input file; write the quantized model to a new path");
    auto src = File::open(in);
    QuantizeResult res;
    res.n_tensors = src->tensors().size();

    // Decide every tensor's type first, so an unconvertible source fails before any output is written.
    std::vector<DType> types;
    for (const TensorInfo& t : src->tensors()) {
        std::string note;
        DType dt = choose_tensor_type(t, opts.target, &note);
        if (dt != t.type && !is_float_source(t.type))
            fail(in, ": tensor '", t.name, "' is ", dtype_name(t.type), "; flint converts only f32, f16 and bf16 ",
                 "weights (re-quantizing ", dtype_name(t.type), " to ", dtype_name(dt), " would compound the error)");
        if (!note.empty()) res.notes.push_back(note);
        types.push_back(dt);
    }

    Writer w;
    w.copy_metadata(*src);
    w.set_u32("general.file_type", llama_file_type(opts.target));
    if (traits(opts.target).block_elems > 1) w.set_u32("general.quantization_version", 2);
    else w.remove("general.quantization_version");

    for (size_t k = 0; k < src->tensors().size(); ++k) {
        const TensorInfo& t = src->tensors()[k];
        const DType dt = types[k];
        res.in_bytes += t.n_bytes;
        res.out_bytes += Writer::tensor_bytes(t.name, dt, t.dims);
        if (dt != t.type) ++res.n_converted;
        w.add_tensor_stream(t.name, dt, t.dims, [&, k, dt](Writer::Sink& sink) {
            if (opts.on_tensor) opts.on_tensor(k, src->tensors().size(), t, dt);
            if (dt == t.type) {
                sink.write(t.data, t.n_bytes);
                return;
            }
            const int64_t row_len = static_cast<int64_t>(t.dim(0));
            const int64_t n_rows = static_cast<int64_t>(t.n_elements / t.dim(0));
            const size_t in_row = row_bytes(t.type, row_len), out_row = row_bytes(dt, row_len);
            const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / out_row));
            std::vector<uint8_t> buf(std::min(chunk, n_rows) * out_row);
            for (int64_t r = 0; r < n_rows; r += chunk) {
                int64_t n = std::min(chunk, n_rows - r);
                convert_rows(t.type, t.data + r * in_row, dt, buf.data(), n, row_len, opts.threads);
                sink.write(buf.data(), n * out_row);
            }
        });
    }
    w.write_file(out);
    return res;
}

}  // namespace flint::gguf
