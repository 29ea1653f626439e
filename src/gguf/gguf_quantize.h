// flint/gguf/gguf_quantize.h — converting a GGUF file's F32/F16/BF16 weights to another type
// (what `flint quantize` runs).
//
// Rules, as llama.cpp applies them:
//  - 1-D tensors (norm weights, biases) stay F32: they are tiny and precision-sensitive.
//  - every other tensor, the token embedding included, becomes the target type;
//  - a tensor whose rows are not a multiple of the target's block size falls back, with a note, to a
//    32-block type of similar size when its rows are a multiple of 32 (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0,
//    Q2_K, Q3_K, IQ4_XS → IQ4_NL, as llama.cpp does), else to F16 (BF16 kept as is);
//  - metadata is copied; general.file_type is set to llama.cpp's LLAMA_FTYPE for the target, and
//    general.quantization_version to 2 for block types.
// Conversion is streamed tensor by tensor (in chunks of rows across threads), so memory stays small.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/dtype.h"

namespace flint::gguf {

// Targets `flint quantize` accepts (those quant.h can produce), in the order shown to users.
std::vector<DType> quantize_targets();
// llama.cpp's LLAMA_FTYPE for a file whose weights are mostly `t` (e.g. Q8_0 → 7, Q4_K → 15).
uint32_t llama_file_type(DType t);
// Parses a TYPE argument; throws flint::Error listing the valid names when unknown or unsupported.
DType parse_quantize_target(const std::string& name);

// The 32-block type used for rows a K-quant (256-block) cannot hold.
DType block_fallback(DType k_quant);
// The type tensor `t` gets when the file is converted to `target`; `note` explains a fallback.
DType choose_tensor_type(const TensorInfo& t, DType target, std::string* note);

struct QuantizeOptions {
    DType target = DType::Q8_0;
    int threads = 0;  // 0: hardware concurrency
    // Called before each tensor is converted: (index, count, tensor, its new type).
    std::function<void(size_t, size_t, const TensorInfo&, DType)> on_tensor = nullptr;
};

struct QuantizeResult {
    size_t n_tensors = 0;
    size_t n_converted = 0;        // tensors whose type changed
    uint64_t in_bytes = 0;         // tensor data read
    uint64_t out_bytes = 0;        // tensor data written
    std::vector<std::string> notes;  // one per fallback
};

// Runs fn(begin, end) over [0, n) split into contiguous ranges on up to `threads` std::threads (0: hardware
// concurrency), the caller taking the first range; rethrows the first exception a range threw. Threads are
// created per call: callers give it chunks of milliseconds or more, where that cost is noise.
void parallel_ranges(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn);

// Reads `in`, writes `out`. Throws flint::Error naming the file or tensor on any problem (missing input,
// a quantized source tensor that would need converting, unwritable output).
QuantizeResult quantize_file(const std::string& in, const std::string& out, const QuantizeOptions& opts);

}  // namespace flint::gguf
