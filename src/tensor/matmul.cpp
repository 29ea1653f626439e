// flint/tensor/matmul.cpp — instruction-set dispatch and the threading of matmul.
//
// matmul = (1) convert the activations once (Q8_0 / Q8_K / none, see kernels.h activation_type),
// (2) hand out chunks of output rows to the pool's threads. Batched calls walk a chunk in tiles of
// kTileRows rows, each dotted against every token of a token block, so each weight byte comes from
// memory once per call however many tokens there are; decode (and, where the kernel supports it, up to
// kStreamTokens tokens) hands kernels kDecodeRows rows at a time, which they stream one after another
// (see dot_avx512.cpp for why).
#include "tensor/matmul.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "tensor/kernels.h"
#include "tensor/quant.h"
#include "tensor/quant_internal.h"
#include "tensor/repack.h"
#include "tensor/thread_pool.h"
#include "util/error.h"

namespace flint {
namespace detail {
namespace {

struct Tables {
    KernelSet sets[3];  // indexed by Isa
    Isa best = Isa::Scalar;
    std::atomic<const KernelSet*> active{nullptr};

    Tables() {
        fill_scalar(sets[0]);
        sets[1] = sets[0];
        sets[2] = sets[0];
#if defined(__x86_64__)
        __builtin_cpu_init();
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
        const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                            __builtin_cpu_supports("avx512dq");
        if (avx2) {
            fill_avx2(sets[1]);
            sets[2] = sets[1];
            best = Isa::AVX2;
        }
        if (avx512) {
            fill_avx512(sets[2]);
            best = Isa::AVX512;
        }
#endif
        active.store(&sets[int(best)]);
    }
};

Tables& tables() {
    static Tables t;
    return t;
}

// Below this many multiply-adds a matmul runs on the calling thread. A parallel region costs a wake-up
// and a barrier (about a microsecond with spinning workers, a scheduler slice when the cores are
// oversubscribed); a 256x256 product takes ~4 us on one thread, and stories260K's (64..512 x 64..172)
// are all below the line. See BENCHMARKS.md, Kernels.
constexpr int64_t kMinParallelMacs = 64 * 1024;
// Tokens per block in the batched path: a block of quantized activations (e.g. 64 x 4864 Q8_0,
// 330 KB) stays in L2 while a chunk of weight rows streams past it.
constexpr int64_t kTokenBlock = 64;

}  // namespace

const KernelSet& active_kernels() {
    return *tables().active.load(std::memory_order_relaxed);
}

}  // namespace detail

using namespace detail;

Isa active_isa() {
    Tables& t = tables();
    return Isa(t.active.load() - &t.sets[0]);
}

Isa best_isa() { return tables().best; }

void set_isa(Isa isa) {
    Tables& t = tables();
    if (int(isa) > int(t.best)) fail("this CPU does not support ", isa_name(isa), " (best is ", isa_name(t.best), ")");
    t.active.store(&t.sets[int(isa)]);
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::AVX2: return "avx2";
        case Isa::AVX512: return "avx512";
    }
    return "?";
}

namespace {

void check_weight(const WeightView& w) {
    const auto tr = dtype_traits(uint32_t(w.type));
    if (!tr) fail("matmul: unknown weight type id ", uint32_t(w.type));
    if (!active_kernels().tile[int(w.type)]) fail("matmul: no kernel for weight type ", dtype_name(w.type));
    if (w.rows < 0 || w.cols <= 0 || w.cols % tr->block_elems != 0)
        fail("matmul: ", dtype_name(w.type), " weight [", w.rows, ", ", w.cols, "]: cols must be a positive multiple of ",
             tr->block_elems);
    if (!w.data && w.rows > 0) fail("matmul: weight has no data");
    if (const int g = interleaved_rows(w.type); w.rows % g != 0)
        fail("matmul: ", dtype_name(w.type), " weight [", w.rows, ", ", w.cols, "]: rows must be a multiple of ", g);
}

// Activation scratch, reused across calls (grows, never shrinks): no allocation per step.
std::vector<uint8_t>& act_scratch() {
    thread_local std::vector<uint8_t> buf;
    return buf;
}

}  // namespace

// Everything one call needs, so the closures handed to the pool capture a single pointer: a
// std::function then stores them in place (no allocation per call).
struct MatmulJob {
    const KernelSet* k;
    TileFn tile;
    DType act_type;
    const uint8_t* w;
    size_t w_stride;
    int64_t rows, cols, n_tokens;
    const float* x;
    uint8_t* q;  // quantized activations (when act_type != F32)
    const uint8_t* act;
    size_t a_stride;
    float* y;
    int64_t tile_rows, tiles_per_chunk, n_chunks;
    std::atomic<int64_t> next_chunk{0};

    void quantize_tokens(int64_t t0, int64_t t1) const {
        thread_local std::vector<BlockQ8_0> q8;  // Q8_0S: the Q8_0 row before widening
        for (int64_t t = t0; t < t1; ++t) {
            uint8_t* out = q + t * a_stride;
            if (act_type == DType::Q8_0) {
                k->quantize_q8_0(x + t * cols, reinterpret_cast<BlockQ8_0*>(out), cols);
            } else if (act_type == DType::Q8_0_S) {
                if (q8.size() < size_t(cols / QK)) q8.resize(size_t(cols / QK));
                k->quantize_q8_0(x + t * cols, q8.data(), cols);
                widen_q8_0s(q8.data(), reinterpret_cast<BlockQ8_0S*>(out), cols / QK);
            } else {
                k->quantize_q8_k(x + t * cols, reinterpret_cast<BlockQ8_K*>(out), cols);
            }
        }
    }

    // Claims chunks of rows until none are left; each chunk is walked token block by token block.
    void run_chunks() {
        for (int64_t c; (c = next_chunk.fetch_add(1, std::memory_order_relaxed)) < n_chunks;) {
            const int64_t r0 = c * tiles_per_chunk * tile_rows;
            const int64_t r1 = std::min(rows, r0 + tiles_per_chunk * tile_rows);
            for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenBlock) {
                const int nt = int(std::min(kTokenBlock, n_tokens - t0));
                for (int64_t r = r0; r < r1; r += tile_rows) {
                    const int nr = int(std::min<int64_t>(tile_rows, r1 - r));
                    tile(cols, w + size_t(r) * w_stride, w_stride, nr, act + size_t(t0) * a_stride, a_stride, nt,
                         y + t0 * rows + r, rows);
                }
            }
        }
    }
};

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
    check_weight(w);
    if (n_tokens <= 0 || w.rows == 0) return;
    MatmulJob job;
    job.k = &active_kernels();
    job.tile = job.k->tile[int(w.type)];
    job.act_type = activation_type(w.type);
    job.w = static_cast<const uint8_t*>(w.data);
    job.w_stride = row_bytes(w.type, size_t(w.cols));
    job.rows = w.rows;
    job.cols = w.cols;
    job.n_tokens = n_tokens;
    job.x = x;
    job.y = y;

    const int nth = pool ? pool->size() : 1;
    const bool parallel = nth > 1 && w.rows * w.cols * n_tokens >= kMinParallelMacs;

    // (1) activations, converted once for the whole call (decode: on this thread, it is ~1 µs).
    job.act = reinterpret_cast<const uint8_t*>(x);
    job.a_stride = size_t(w.cols) * sizeof(float);
    if (job.act_type != DType::F32) {
        job.a_stride = row_bytes(job.act_type, size_t(w.cols));
        std::vector<uint8_t>& buf = act_scratch();
        if (buf.size() < job.a_stride * size_t(n_tokens)) buf.resize(job.a_stride * size_t(n_tokens));
        job.q = buf.data();
        job.act = job.q;
        if (parallel && n_tokens > 1) pool->parallel_for(n_tokens, [j = &job](int64_t t0, int64_t t1) { j->quantize_tokens(t0, t1); });
        else job.quantize_tokens(0, n_tokens);
    }

    // (2) rows in chunks; a thread claims the next chunk when done (the cores are shared, so static
    // shares would leave the whole call waiting on whichever thread got preempted). Decode and small
    // batches use taller tiles where the kernel streams the rows of a tile one after another.
    const bool stream = n_tokens == 1 || n_tokens <= job.k->stream_tokens[int(w.type)];
    job.tile_rows = std::max<int64_t>(stream ? kDecodeRows : kTileRows, interleaved_rows(w.type));
    const int64_t n_tiles = (w.rows + job.tile_rows - 1) / job.tile_rows;
    job.tiles_per_chunk = std::max<int64_t>(1, n_tiles / (int64_t(nth) * 8));
    job.n_chunks = (n_tiles + job.tiles_per_chunk - 1) / job.tiles_per_chunk;
    if (parallel) pool->run([j = &job](int, int) { j->run_chunks(); });
    else job.run_chunks();
}

void get_row(const WeightView& w, int64_t row, float* out) {
    if (row < 0 || row >= w.rows) fail("get_row: row ", row, " out of range [0, ", w.rows, ")");
    dequantize_matrix_row(w.type, w.data, row, w.cols, out);
}

}  // namespace flint
