// flint/tensor/matmul.cpp — instruction-set dispatch and the threading of matmul.
//
// matmul = (1) convert the activations once (Q8_0 / Q8_K / none, see kernels.h activation_type),
// (2) hand out chunks of output rows to the pool's threads. Batched calls walk a chunk in tiles of
// kTileRows rows, each dotted against every token of a token block, so each weight byte comes from
// memory once per call however many tokens there are; decode (and, where the kernel supports it, up to
// kStreamTokens tokens) hands kernels kDecodeRows rows at a time, which they stream one after another
// (see dot_avx512.cpp for why). A wide repacked matrix is stored and multiplied as column panels
// (tensor/repack.h), their products summed after the region.
#include "tensor/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <utility>
#include <vector>

#include "tensor/kernels.h"
#include "tensor/quant.h"
#include "tensor/repack.h"
#include "tensor/shares.h"
#include "tensor/thread_pool.h"
#include "tensor/vec.h"
#include "util/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace flint {
namespace detail {
namespace {

#if defined(__x86_64__)
// F16C and BMI2 straight from CPUID: GCC's __builtin_cpu_supports knows them, clang 14's does not (and the
// fuzz build compiles this file with clang).
bool cpu_has_f16c_and_bmi2() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & bit_BMI2) != 0;
}

// The one-token weight prefetch's default (isa.h DecodePrefetch): on for Intel and for AMD from Zen 5 (CPU
// family 26), off for Zen 4 (25), as measured on each (dot_r16_avx512.cpp, kPrefetchPass).
bool cpu_wants_decode_prefetch() {
    if (__builtin_cpu_is("intel")) return true;
    if (!__builtin_cpu_is("amd")) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const unsigned base = (a >> 8) & 0xf, family = base == 0xf ? base + ((a >> 20) & 0xff) : base;
    return family >= 26;
}
#endif

struct Tables {
    // Indexed by Isa; [3] is the AVX-512 table with the one-token weight prefetch (matmul.h DecodePrefetch).
    KernelSet sets[4];
    Isa best = Isa::Scalar;
    bool prefetch_auto = false;  // the CPU's choice
    std::atomic<bool> prefetch{false};
    std::atomic<const KernelSet*> active{nullptr};

    const KernelSet* table(Isa isa) const { return &sets[isa == Isa::AVX512 && prefetch.load() ? 3 : int(isa)]; }

    Tables() {
        fill_scalar(sets[0]);
        sets[1] = sets[0];
        sets[2] = sets[0];
#if defined(__x86_64__)
        __builtin_cpu_init();
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c_and_bmi2();
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
            sets[3] = sets[2];
            set_r16_decode_prefetch(sets[3], true);
            best = Isa::AVX512;
        }
        // One core streams a token's weights fast enough on Zen 4's hardware prefetcher alone, not on Intel's
        // (an Emerald Rapids guest; BENCHMARKS.md, Twenty-sixth session) nor, for the K-quants, on Zen 5's
        // (Twentieth). Only the AVX-512 table has the choice.
        prefetch_auto = avx512 && cpu_wants_decode_prefetch();
#endif
        prefetch.store(prefetch_auto);
        active.store(table(best));
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

bool has_matmul_kernel(DType t) {
    const uint32_t id = static_cast<uint32_t>(t);
    return is_file_type(t) && id < kMaxDTypeId && tables().sets[0].tile[id] != nullptr;
}

Isa active_isa() {
    Tables& t = tables();
    return Isa(std::min<ptrdiff_t>(t.active.load() - &t.sets[0], int(Isa::AVX512)));
}

Isa best_isa() { return tables().best; }

void set_isa(Isa isa) {
    Tables& t = tables();
    if (int(isa) > int(t.best)) fail("this CPU does not support ", isa_name(isa), " (best is ", isa_name(t.best), ")");
    t.active.store(t.table(isa));
}

void set_decode_prefetch(DecodePrefetch p) {
    Tables& t = tables();
    const Isa isa = active_isa();
    t.prefetch.store(p == DecodePrefetch::Auto ? t.prefetch_auto : p == DecodePrefetch::On);
    t.active.store(t.table(isa));
}

bool decode_prefetch() { return tables().prefetch.load(); }

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::AVX2: return "avx2";
        case Isa::AVX512: return "avx512";
    }
    return "?";
}

std::string kernel_path_name(Isa isa, bool decode_prefetch) {
    return std::string(isa_name(isa)) + (decode_prefetch ? "+prefetch" : "");
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

// One matrix of a call, or one column panel of it: its rows, where they and their activations come from
// and where their products go.
// No initializers: a call sets every field of the segments it uses (it has room for 24).
struct Segment {
    const uint8_t* w;
    float* y;
    int64_t rows;
    int64_t cols;
    size_t w_stride;      // bytes per row (of the panel)
    size_t a_off;         // the panel's first activation byte in a token's row
    int64_t first_chunk;  // concatenated calls: this segment's chunks start here
};

// Everything one call needs, so the closures handed to the pool capture a single pointer: a
// std::function then stores them in place (no allocation per call). A call multiplies one input by one
// or more matrices of the same type and width (Q, K and V; gate and up): the activations are converted
// once and all the rows are shared out in one parallel region. Segments are either concatenated (chunk
// c belongs to one of them) or paired (chunk c covers the same rows of every segment, then `epilogue`
// runs on those rows while they are hot: SwiGLU).
struct MatmulJob {
    static constexpr int kMaxSegments = 3;
    static constexpr int kMaxPanels = 8;  // repack.cpp's limit
    const KernelSet* k;
    TileFn tile;
    DType act_type;
    int64_t cols, n_tokens;
    const float* x;
    uint8_t* q;  // quantized activations (when act_type != F32)
    const uint8_t* act;
    size_t a_stride;
    Segment seg[kMaxSegments * kMaxPanels];
    int n_seg = 0;
    bool paired = false;
    void (*epilogue)(const MatmulJob&, int64_t r0, int64_t r1) = nullptr;
    int64_t tile_rows, tiles_per_chunk, n_chunks;
    Share* shares = nullptr;  // the chunks' shares, one per thread (n_threads; tensor/shares.h)
    int n_threads = 1;

    void quantize_tokens(int64_t t0, int64_t t1) const {
        for (int64_t t = t0; t < t1; ++t) {
            uint8_t* out = q + t * a_stride;
            if (act_type == DType::Q8_0) {
                k->quantize_q8_0(x + t * cols, reinterpret_cast<BlockQ8_0*>(out), cols);
            } else if (act_type == DType::Q8_0_S) {
                k->quantize_q8_0s(x + t * cols, reinterpret_cast<BlockQ8_0S*>(out), cols);
            } else {
                k->quantize_q8_k(x + t * cols, reinterpret_cast<BlockQ8_K*>(out), cols);
            }
        }
    }

    int64_t chunks_of(int64_t rows) const {
        const int64_t n_tiles = (rows + tile_rows - 1) / tile_rows;
        return (n_tiles + tiles_per_chunk - 1) / tiles_per_chunk;
    }

    // Rows [r0, r1) of one segment, token block by token block.
    void rows_of(const Segment& s, int64_t r0, int64_t r1) const {
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenBlock) {
            const int nt = int(std::min(kTokenBlock, n_tokens - t0));
            for (int64_t r = r0; r < r1; r += tile_rows) {
                const int nr = int(std::min<int64_t>(tile_rows, r1 - r));
                tile(s.cols, s.w + size_t(r) * s.w_stride, s.w_stride, nr, act + s.a_off + size_t(t0) * a_stride, a_stride,
                     nt, s.y + t0 * s.rows + r, s.rows);
            }
        }
    }

    // Thread `self` claims chunks from its own share, then from the others', until none are left.
    void run_chunks(int self) {
        claim_shares(shares, n_threads, self, [this](int64_t c) { run_chunk(c); });
    }

    void run_chunk(int64_t c) const {
        const int64_t chunk_rows = tiles_per_chunk * tile_rows;
        if (paired) {
            const int64_t r0 = c * chunk_rows, r1 = std::min(seg[0].rows, r0 + chunk_rows);
            for (int i = 0; i < n_seg; ++i) rows_of(seg[i], r0, r1);
            epilogue(*this, r0, r1);
            return;
        }
        int i = n_seg - 1;
        while (seg[i].first_chunk > c) --i;
        const int64_t r0 = (c - seg[i].first_chunk) * chunk_rows;
        rows_of(seg[i], r0, std::min(seg[i].rows, r0 + chunk_rows));
    }
};

namespace {

// The shared part of every call: checks, activation conversion, chunking, the parallel region.
// outs are (weight, output) pairs of one type and width; paired calls need equal row counts too.
void run_matmul(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool* pool,
                void (*epilogue)(const MatmulJob&, int64_t, int64_t)) {
    const WeightView& w0 = outs[0].w;
    int64_t total_rows = 0;
    for (const MatmulOut& o : outs) {
        check_weight(o.w);
        total_rows += o.w.rows;
    }
    if (n_tokens <= 0 || total_rows == 0) return;
    MatmulJob job;
    job.k = &active_kernels();
    job.tile = job.k->tile[int(w0.type)];
    job.act_type = activation_type(w0.type);
    job.cols = w0.cols;
    job.n_tokens = n_tokens;
    job.x = x;
    job.paired = epilogue != nullptr;
    job.epilogue = epilogue;
    // Each matrix as its column panels (tensor/repack.h; one unless it is wide, and then never paired, see
    // matmul_swiglu): panel 0's products go to the caller's output, the others' to scratch, summed below.
    const int n_panels = layout_panels(w0.type, w0.cols);
    if (n_panels > MatmulJob::kMaxPanels || (job.paired && n_panels > 1))
        fail("matmul: ", n_panels, " column panels", job.paired ? " in a paired call" : "");
    float* scratch = nullptr;
    if (n_panels > 1) {
        thread_local std::vector<float> partials;
        size_t floats = 0;
        for (const MatmulOut& o : outs) floats += size_t(n_panels - 1) * size_t(n_tokens) * size_t(o.w.rows);
        if (partials.size() < floats) partials.resize(floats);
        scratch = partials.data();
    }
    job.n_seg = 0;
    for (const MatmulOut& o : outs) {
        for (int p = 0; p < n_panels; ++p) {
            Segment& sg = job.seg[job.n_seg++];
            sg.rows = o.w.rows;
            sg.first_chunk = 0;
            if (n_panels == 1) {  // the usual case, without the panel arithmetic (stories260K: ~30 calls a token)
                sg.w = static_cast<const uint8_t*>(o.w.data);
                sg.y = o.y;
                sg.cols = w0.cols;
                sg.w_stride = row_bytes(w0.type, size_t(w0.cols));
                sg.a_off = 0;
                continue;
            }
            const Panel q = layout_panel(w0.type, o.w.rows, w0.cols, p);
            sg.w = static_cast<const uint8_t*>(o.w.data) + q.offset;
            sg.y = p == 0 ? o.y : std::exchange(scratch, scratch + size_t(n_tokens) * size_t(o.w.rows));
            sg.cols = q.c1 - q.c0;
            sg.w_stride = row_bytes(w0.type, size_t(sg.cols));
            sg.a_off = job.act_type == DType::F32 ? size_t(q.c0) * sizeof(float) : row_bytes(job.act_type, size_t(q.c0));
        }
    }

    const int nth = pool ? pool->size() : 1;
    const bool parallel = nth > 1 && total_rows * w0.cols * n_tokens >= kMinParallelMacs;

    // (1) activations, converted once for the whole call (decode: on this thread, it is ~1 µs).
    job.act = reinterpret_cast<const uint8_t*>(x);
    job.a_stride = size_t(w0.cols) * sizeof(float);
    if (job.act_type != DType::F32) {
        job.a_stride = row_bytes(job.act_type, size_t(w0.cols));
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
    const bool stream = n_tokens == 1 || n_tokens <= job.k->stream_tokens[int(w0.type)];
    job.tile_rows = std::max<int64_t>(stream ? kDecodeRows : kTileRows, interleaved_rows(w0.type));
    const int64_t n_tiles = (total_rows * n_panels + job.tile_rows - 1) / job.tile_rows;
    // Decode's chunks are finer (32 a thread): the wait for the last one at a region's end fell from
    // 2.5-3.2% of decode's perf samples to 1.6-2.1% (0.5B Q8_0 and Q4_0, Zen 3, BENCHMARKS.md).
    job.tiles_per_chunk = std::max<int64_t>(1, n_tiles / (int64_t(nth) * (n_tokens == 1 ? 32 : 8)));
    if (job.paired) {  // a chunk covers its rows in every segment: the same work per chunk as concatenated
        job.tiles_per_chunk = std::max<int64_t>(1, job.tiles_per_chunk / job.n_seg);
        job.n_chunks = job.chunks_of(w0.rows);
    } else {
        job.n_chunks = 0;
        for (int i = 0; i < job.n_seg; ++i) {
            job.seg[i].first_chunk = job.n_chunks;
            job.n_chunks += job.chunks_of(job.seg[i].rows);
        }
    }
    // Contiguous shares: each thread streams its own stretch of memory.
    job.n_threads = parallel ? nth : 1;
    thread_local std::vector<Share> shares;
    if (shares.size() < size_t(job.n_threads)) shares = std::vector<Share>(size_t(job.n_threads));
    job.shares = shares.data();
    split_shares(job.shares, job.n_threads, job.n_chunks);
    if (parallel) pool->run([j = &job](int i, int) { j->run_chunks(i); });
    else job.run_chunks(0);
    // (y0 + y1) + y2 ...: axpy with a = 1 adds exactly as a plain sum does, vectorized.
    if (n_panels > 1)
        for (int i = 0; i < job.n_seg; i += n_panels)
            for (int p = 1; p < n_panels; ++p) axpy_f32(1.0f, job.seg[i + p].y, job.seg[i].y, n_tokens * job.seg[i].rows);
}

// Paired gate/up: segment 0's rows become silu(gate) * up, in place.
void swiglu_rows(const MatmulJob& j, int64_t r0, int64_t r1) {
    const int64_t rows = j.seg[0].rows;
    for (int64_t t = 0; t < j.n_tokens; ++t) {
        j.k->silu_mul(j.seg[0].y + t * rows + r0, j.seg[1].y + t * rows + r0, r1 - r0);
    }
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
    const MatmulOut one{w, y};
    run_matmul({&one, 1}, x, n_tokens, pool, nullptr);
}

void matmul_many(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool* pool) {
    // One region per run of neighbours that share a type and width (a Q4_K_M file: Q and K together, V,
    // which is Q6_K there, on its own).
    for (size_t i = 0; i < outs.size();) {
        size_t j = i + 1;
        while (j < outs.size() && j - i < size_t(MatmulJob::kMaxSegments) && outs[j].w.type == outs[i].w.type &&
               outs[j].w.cols == outs[i].w.cols)
            ++j;
        run_matmul(outs.subspan(i, j - i), x, n_tokens, pool, nullptr);
        i = j;
    }
}

void matmul_swiglu(const WeightView& gate, const WeightView& up, const float* x, int64_t n_tokens, float* h,
                   float* up_out, ThreadPool* pool) {
    if (gate.rows != up.rows || gate.cols != up.cols)
        fail("matmul_swiglu: gate [", gate.rows, ", ", gate.cols, "] and up [", up.rows, ", ", up.cols, "] differ");
    const MatmulOut outs[2] = {{gate, h}, {up, up_out}};
    // A batch: paired chunks, SwiGLU on each chunk's rows while they are hot. One token (decode): gate's and
    // up's rows concatenated, so each thread streams one matrix, and SwiGLU after the region on this thread
    // (4864 values, ~1 µs). Paired chunks make a thread alternate between two weight streams every 32 KB;
    // a 0.5B decode step was 4-6% slower with them (BENCHMARKS.md, Twenty-second session). Wide matrices
    // (column panels) are never paired.
    if (gate.type == up.type && n_tokens > 1 && layout_panels(gate.type, gate.cols) == 1) {
        run_matmul(outs, x, n_tokens, pool, swiglu_rows);
        return;
    }
    matmul_many(outs, x, n_tokens, pool);
    active_kernels().silu_mul(h, up_out, n_tokens * gate.rows);
}

void get_row(const WeightView& w, int64_t row, float* out) {
    if (row < 0 || row >= w.rows) fail("get_row: row ", row, " out of range [0, ", w.rows, ")");
    dequantize_matrix_row(w.type, w.data, w.rows, row, w.cols, out);
}

}  // namespace flint
