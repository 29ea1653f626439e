// flint_kernels_bench — micro-benchmarks of the tensor kernels (Google Benchmark).
//
//   build-kern/flint_kernels_bench --benchmark_filter=Decode --benchmark_repetitions=5
//       (add --benchmark_report_aggregates_only=true for medians only)
//
// Counters: GB/s = weight bytes streamed per second (1e9), GFLOP/s = 2*rows*cols*tokens per second;
// for decode also read_GB/s = a plain multi-threaded read of the same bytes done right after each
// call, and bw% = median over iterations of (read time / matmul time): the share of the achievable
// read bandwidth the kernel reaches, robust to the (shared, noisy) machine's load changing.
// Shapes are Qwen2.5-Coder-0.5B's (hidden 896, FFN 4864, vocab 151936, 24 layers, 2 KV heads x 64).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"
#include "model/attention.h"
#include "sample/sampler.h"
#include "tensor/bandwidth.h"
#include "tensor/matmul.h"
#include "tensor/quant.h"
#include "tensor/repack.h"
#include "tensor/thread_pool.h"
#include "util/huge_pages.h"

namespace flint {
namespace {

constexpr int kThreads = 2;

ThreadPool& pool() {
    static ThreadPool p(kThreads);
    return p;
}

// Selects the kernel path a benchmark asks for (its caller restores best_isa()), or marks the benchmark
// skipped on a CPU without it.
bool use_isa(benchmark::State& state, Isa isa) {
    if (int(isa) > int(best_isa())) {
        state.SkipWithError("isa not supported");
        return false;
    }
    set_isa(isa);
    return true;
}

// Random quantized weights; the content does not change the speed, only the type does. Quantizing
// 136M elements with the reference K-quant search is slow, so one random row is quantized and
// copied (the bytes are streamed all the same).
struct Weights {
    HugeBuffer bytes;  // like a loaded model's weights (2 MiB pages)
    WeightView view;
};

Weights make_weights(DType t, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0, 0.02f);
    const size_t rb = row_bytes(t, size_t(cols));
    Weights w;
    w.bytes = HugeBuffer(rb * size_t(rows));
    constexpr int kDistinct = 16;
    std::vector<float> row(static_cast<size_t>(cols));
    for (int i = 0; i < kDistinct && i < rows; ++i) {
        for (float& f : row) f = nd(rng);
        quantize_row_ref(t, row.data(), w.bytes.data() + size_t(i) * rb, cols);
    }
    for (int64_t r = kDistinct; r < rows; ++r)
        std::memcpy(w.bytes.data() + size_t(r) * rb, w.bytes.data() + size_t(r % kDistinct) * rb, rb);
    w.view = WeightView{t, w.bytes.data(), rows, cols};
    // As Model::load does: the layout the active kernels read fastest (tensor/repack.h).
    if (auto to = repack_target(t, rows, cols)) {
        repack_rows(t, *to, w.bytes.data(), rows, cols);
        w.view.type = *to;
    }
    return w;
}

std::vector<float> make_acts(int64_t n) {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& f : x) f = nd(rng);
    return x;
}

const DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K,
                        DType::Q6_K, DType::F16, DType::BF16, DType::F32};

// state.range: 0 = type index, 1 = rows, 2 = cols, 3 = tokens, 4 = isa, 5 = threads
void BM_Matmul(benchmark::State& state) {
    const DType t = kTypes[state.range(0)];
    const int64_t rows = state.range(1), cols = state.range(2), nt = state.range(3);
    const Isa isa = Isa(state.range(4));
    if (!use_isa(state, isa)) return;
    const Weights w = make_weights(t, rows, cols, 1);
    const auto x = make_acts(nt * cols);
    std::vector<float> y(size_t(rows * nt));
    ThreadPool* p = state.range(5) > 1 ? &pool() : nullptr;
    // Decode also reads the same weight bytes plainly after every call (see BM_ModelDecode).
    std::vector<double> ratio;
    double mm_s = 0, read_s = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        matmul(w.view, x.data(), nt, y.data(), p);
        const double mm = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        benchmark::DoNotOptimize(y.data());
        state.SetIterationTime(mm);
        mm_s += mm;
        if (nt == 1) {
            const double rd = stream_read_seconds(p, w.bytes.data(), w.bytes.size());
            ratio.push_back(rd / mm);
            read_s += rd;
        }
    }
    const double bytes = double(w.bytes.size()), flops = 2.0 * double(rows * cols * nt);
    const double iters = double(state.iterations());
    state.counters["GB/s"] = bytes * iters / mm_s / 1e9;
    state.counters["GFLOP/s"] = flops * iters / mm_s / 1e9;
    if (!ratio.empty()) {
        std::sort(ratio.begin(), ratio.end());
        state.counters["read_GB/s"] = bytes * iters / read_s / 1e9;
        state.counters["bw%"] = 100 * ratio[ratio.size() / 2];
    }
    state.SetLabel(std::string(dtype_name(w.view.type)) + " " + isa_name(isa));
    set_isa(best_isa());
}

// One-token calls on matrices fresh from DRAM, as a decode step meets each layer's: every call takes the next
// of many copies (256 MB in all, beyond any cache), and each is paired with a plain read, also cold, of
// another copy the same size. range: 0 = type index, 1 = rows, 2 = cols (two threads, best ISA).
// GB/s against rows shows each region's fixed cost (a 0.5 MB Q/K/V-sized call streams far slower than a 5 MB
// gate/up call); read_GB/s shows how much of it any walk of the same sizes pays; bw% is the kernel's share.
void BM_MatmulCold(benchmark::State& state) {
    const DType t = kTypes[state.range(0)];
    const int64_t rows = state.range(1), cols = state.range(2);
    const size_t one = row_bytes(t, size_t(cols)) * size_t(rows);
    const int copies = int(std::max<size_t>(4, (size_t(256) << 20) / one));
    std::vector<Weights> ws;
    for (int i = 0; i < copies; ++i) ws.push_back(make_weights(t, rows, cols, uint32_t(i)));
    const auto x = make_acts(cols);
    std::vector<float> y(static_cast<size_t>(rows));
    std::vector<double> ratio;
    double mm_s = 0, read_s = 0;
    int next = 0;
    for (auto _ : state) {
        const Weights& w = ws[size_t(next)];
        const Weights& r = ws[size_t(next + 1) % ws.size()];
        next = (next + 2) % copies;
        const auto t0 = std::chrono::steady_clock::now();
        matmul(w.view, x.data(), 1, y.data(), &pool());
        const double mm = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        benchmark::DoNotOptimize(y.data());
        const double rd = stream_read_seconds(&pool(), r.bytes.data(), r.bytes.size());
        state.SetIterationTime(mm);
        ratio.push_back(rd / mm);
        mm_s += mm;
        read_s += rd;
    }
    std::sort(ratio.begin(), ratio.end());
    const double iters = double(state.iterations());
    state.counters["GB/s"] = double(one) * iters / mm_s / 1e9;
    state.counters["read_GB/s"] = double(one) * iters / read_s / 1e9;
    state.counters["bw%"] = 100 * ratio[ratio.size() / 2];
    state.counters["MB"] = double(one) / 1e6;
    state.SetLabel(std::string(dtype_name(ws[0].view.type)));
}

// One thread, rates per CPU-second (Google Benchmark's default clock is the thread's CPU time):
// what a core can do when it has the CPU, which the shared build machine rarely grants in full.
// range: as BM_Matmul (threads ignored).
void BM_MatmulCpu(benchmark::State& state) {
    const DType t = kTypes[state.range(0)];
    const int64_t rows = state.range(1), cols = state.range(2), nt = state.range(3);
    const Isa isa = Isa(state.range(4));
    if (!use_isa(state, isa)) return;
    const Weights w = make_weights(t, rows, cols, 1);
    const auto x = make_acts(nt * cols);
    std::vector<float> y(size_t(rows * nt));
    for (auto _ : state) {
        matmul(w.view, x.data(), nt, y.data(), nullptr);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GB/s"] = benchmark::Counter(double(w.bytes.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(rows * cols * nt), benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::string(dtype_name(w.view.type)) + " " + isa_name(isa));
    set_isa(best_isa());
}

// The one-thread, per-CPU-second reference for Cpu1T: a plain read of a 36 MB buffer (the size of
// the 40000x896 Q8_0 matrix, past the 32 MB L3).
void BM_ReadCpu(benchmark::State& state) {
    HugeBuffer buf(size_t(40000) * 952);
    std::memset(buf.data(), 1, buf.size());
    for (auto _ : state) benchmark::DoNotOptimize(stream_read_seconds(nullptr, buf.data(), buf.size()));
    state.counters["GB/s"] = benchmark::Counter(double(buf.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// A whole 0.5B decode step's matmuls (24 layers of q/k/v/o/gate/up/down + the tied 151936x896 head):
// the number that decides decode tok/s. range: 0 = type index, 1 = isa, 2 = tokens per step (1 = decode;
// 2..17 = a batch of sequences or a block of drafts, which should cost little more than one token).
void BM_ModelDecode(benchmark::State& state) {
    const DType t = kTypes[state.range(0)];
    const Isa isa = Isa(state.range(1));
    if (!use_isa(state, isa)) return;
    struct Shape { int64_t rows, cols; };
    const Shape layer[] = {{896, 896}, {128, 896}, {128, 896}, {896, 896}, {4864, 896}, {4864, 896}, {896, 4864}};
    std::vector<Weights> ws;
    for (int l = 0; l < 24; ++l)
        for (const Shape& s : layer) ws.push_back(make_weights(t, s.rows, s.cols, uint32_t(l)));
    // The head stays Q8_0/Q6_K-ish in real files; here it has the same type as the layers.
    ws.push_back(make_weights(t, 151936, 896, 99));
    const int64_t nt = state.range(2);
    const auto x = make_acts(4864 * nt);
    std::vector<float> y(size_t(151936 * nt));
    double bytes = 0;
    for (const Weights& w : ws) bytes += double(w.bytes.size());
    // Each iteration: one decode step's matmuls, then a plain multi-threaded read of the same
    // tensors (one pool call each, like the matmuls), then one read of as many bytes in one buffer (one
    // pool call: what flint bench's probe does, over 1 GiB). The ratios, iteration by iteration, are
    // robust to the machine's load changing during the run; their product splits the step's distance
    // from the probe into the kernels' part (bw%) and the part any per-tensor walk pays (reads%).
    HugeBuffer one{size_t(bytes)};
    std::memset(one.data(), 1, one.size());
    std::vector<double> ratio, reads_ratio;
    double read_s = 0, mm_s = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (const Weights& w : ws) matmul(w.view, x.data(), nt, y.data(), &pool());
        const double mm = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        benchmark::DoNotOptimize(y.data());
        double rd = 0;
        for (const Weights& w : ws) rd += stream_read_seconds(&pool(), w.bytes.data(), w.bytes.size());
        const double whole = stream_read_seconds(&pool(), one.data(), one.size());
        state.SetIterationTime(mm);
        ratio.push_back(rd / mm);
        reads_ratio.push_back(whole / rd);
        read_s += rd;
        mm_s += mm;
    }
    std::sort(ratio.begin(), ratio.end());
    std::sort(reads_ratio.begin(), reads_ratio.end());
    state.counters["GB/s"] = bytes * double(state.iterations()) / mm_s / 1e9;
    state.counters["read_GB/s"] = bytes * double(state.iterations()) / read_s / 1e9;
    state.counters["bw%"] = 100 * ratio[ratio.size() / 2];  // median of per-iteration ratios
    state.counters["reads%"] = 100 * reads_ratio[reads_ratio.size() / 2];  // per-tensor reads vs one buffer
    state.counters["tok/s"] = double(state.iterations() * nt) / mm_s;
    state.counters["MB"] = bytes / 1e6;
    state.SetLabel(std::string(dtype_name(ws[0].view.type)) + " " + isa_name(isa) + " x" + std::to_string(nt));
    set_isa(best_isa());
}

// stories260K's decode-step matmuls (dim 64, 8 heads / 4 KV heads of 8, FFN 172, 5 layers, vocab 512,
// F32): all below the single-thread threshold, so this is the kernel floor under its >= 10k tok/s goal.
void BM_Stories260KStep(benchmark::State& state) {
    struct Shape { int64_t rows, cols; };
    const Shape layer[] = {{64, 64}, {32, 64}, {32, 64}, {64, 64}, {172, 64}, {172, 64}, {64, 172}};
    std::vector<Weights> ws;
    for (int l = 0; l < 5; ++l)
        for (const Shape& s : layer) ws.push_back(make_weights(DType::F32, s.rows, s.cols, uint32_t(l)));
    ws.push_back(make_weights(DType::F32, 512, 64, 9));
    const auto x = make_acts(172);
    std::vector<float> y(512);
    for (auto _ : state) {
        for (const Weights& w : ws) matmul(w.view, x.data(), 1, y.data(), &pool());
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["steps/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["matmuls"] = double(ws.size());
}

// Random keys and values (uniform in [-1, 1), Q8_0 with scale 1/64) in blocks [0, n_blocks) of every layer.
void fill_attention_cache(KVCache& kv, int n_layers, int n_blocks) {
    const DType type = kv.config().type;
    const int bs = kv.config().block_size, kv_dim = kv.config().kv_dim;
    const size_t half = kv.row_bytes() * bs;  // one layer's K (or V) bytes per block
    uint64_t x = 0x9e3779b97f4a7c15ull;
    auto next = [&x] {  // xorshift64: fast enough for the ~200 M values of a long cache
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        return uint32_t(x >> 32);
    };
    auto uniform = [&] { return float(int32_t(next())) * (1.0f / 2147483648.0f); };
    for (int b = 0; b < n_blocks; ++b)
        for (int l = 0; l < n_layers; ++l)
            for (uint8_t* p : {kv.k(b, l), kv.v(b, l)}) {
                if (type == DType::F32) for (size_t i = 0; i < half / 4; ++i) reinterpret_cast<float*>(p)[i] = uniform();
                else if (type == DType::F16) for (size_t i = 0; i < half / 2; ++i) reinterpret_cast<uint16_t*>(p)[i] = fp32_to_fp16(uniform());
                else for (size_t i = 0; i < half; ++i) p[i] = uint8_t(next());  // levels; scales below
            }
    if (type != DType::Q8_0) return;
    for (int b = 0; b < n_blocks; ++b)
        for (int l = 0; l < n_layers; ++l) {
            for (int i = 0; i < bs * kv_dim / QK; ++i) kv.k_scales(b, l)[i] = fp32_to_fp16(1.0f / 64);
            for (int j = 0; j < bs; ++j)
                for (int c = 0; c < kv_dim / QK; ++c)
                    reinterpret_cast<BlockQ8_0*>(kv.v(b, l) + size_t(j) * kv.row_bytes())[c].d = fp32_to_fp16(1.0f / 64);
        }
}

// One attention unit as forward() runs it (tests/model/attention_test.cpp checks the results): the query
// heads of one KV head for a few consecutive tokens, over n_pos cached positions of the 0.5B shape
// (head dim 64, block 16). range: 0 = queries (7 heads x tokens; 63 = a draft block's tile of 9 tokens;
// 1 = a decode token of a model with one query head per KV head), 1 = positions, 2 = cache type (0 f32,
// 1 f16, 2 q8_0), 3 = isa, 4 = head dim (48: TinyStories 15M). One thread; the cache (~0.4 MB at 1.5k)
// stays in L2, as it does for the layer being attended. GFLOP/s counts 4 * head_dim per (query, position).
void BM_Attention(benchmark::State& state) {
    const Isa isa = Isa(state.range(3));
    if (!use_isa(state, isa)) return;
    const int nq = int(state.range(0)), n_pos = int(state.range(1));
    const DType type = state.range(2) == 0 ? DType::F32 : state.range(2) == 1 ? DType::F16 : DType::Q8_0;
    const int hd = int(state.range(4)), kv_dim = 2 * hd, bs = 16;
    const int n_blocks = (n_pos + bs - 1) / bs;
    KVCache kv({.n_layers = 1, .kv_dim = kv_dim, .block_size = bs, .type = type, .n_blocks = n_blocks});
    std::vector<int32_t> table;
    for (int b = 0; b < n_blocks; ++b) table.push_back(kv.alloc());
    fill_attention_cache(kv, 1, n_blocks);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0, 1);
    const int group = 7, tokens = (nq + group - 1) / group;
    std::vector<float> q(size_t(nq) * hd), out(q.size());
    for (float& x : q) x = nd(rng);
    HeadAttention a{&kv, 0, table, n_pos, 1, hd};
    QueryGroup g;
    g.n = nq;
    for (int i = 0; i < nq; ++i) {
        g.q[i] = &q[size_t(i) * hd];
        g.out[i] = &out[size_t(i) * hd];
        g.n_pos[i] = n_pos - (tokens - 1 - i / group);  // causal: the group's last token sees them all
    }
    std::vector<float> scratch(attend_group_scratch(a));
    for (auto _ : state) {
        attend_group(a, g, scratch.data());
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(4.0 * hd * nq * n_pos, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::string(dtype_name(type)) + " " + isa_name(isa) + " hd" + std::to_string(hd));
    set_isa(best_isa());
}

// Decode's attention at a long context, as forward() runs it: every layer's query groups (7 heads of one
// token per KV head) over 16,000 cached positions of the 0.5B shape (24 layers, 2 KV heads, head dim 64),
// one KV head per thread. The whole cache (196 MB f16) is far larger than L3, so each layer's keys and
// values come from DRAM, as they do for a token at that depth (BM_Attention above is the cache-resident
// case). range: 0 = cache type (0 f32, 1 f16, 2 q8_0), 1 = isa, 2 = threads (1: both heads on one).
// Time is one token's attention over all layers; ns/pos/layer divides it by positions x layers.
void BM_AttentionLong(benchmark::State& state) {
    const Isa isa = Isa(state.range(1));
    if (!use_isa(state, isa)) return;
    const DType type = state.range(0) == 0 ? DType::F32 : state.range(0) == 1 ? DType::F16 : DType::Q8_0;
    const int threads = int(state.range(2));
    constexpr int n_layers = 24, n_kv_heads = 2, hd = 64, bs = 16, n_pos = 16000, nq = 7;
    constexpr int n_blocks = (n_pos + bs - 1) / bs;
    // One cache per type, kept across the instances (filling 200 M values takes seconds).
    static std::map<DType, std::unique_ptr<KVCache>> caches;
    std::unique_ptr<KVCache>& kv = caches[type];
    if (!kv) {
        kv = std::make_unique<KVCache>(KVConfig{.n_layers = n_layers, .kv_dim = n_kv_heads * hd, .block_size = bs,
                                                .type = type, .n_blocks = n_blocks});
        for (int b = 0; b < n_blocks; ++b) kv->alloc();
        fill_attention_cache(*kv, n_layers, n_blocks);
    }
    std::vector<int32_t> table(n_blocks);
    for (int b = 0; b < n_blocks; ++b) table[b] = b;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> ud(-1, 1);
    std::vector<float> q(size_t(n_kv_heads) * nq * hd), out(q.size());
    for (float& x : q) x = ud(rng);
    QueryGroup groups[n_kv_heads];
    for (int h = 0; h < n_kv_heads; ++h) {
        groups[h].n = nq;
        for (int i = 0; i < nq; ++i) {
            groups[h].q[i] = &q[(size_t(h) * nq + i) * hd];
            groups[h].out[i] = &out[(size_t(h) * nq + i) * hd];
            groups[h].n_pos[i] = n_pos;
        }
    }
    const HeadAttention base{kv.get(), 0, table, n_pos, 0, hd};
    std::vector<float> scratch(attend_group_scratch(base) * n_kv_heads);
    auto heads = [&](int h0, int h1) {
        for (int l = 0; l < n_layers; ++l)
            for (int h = h0; h < h1; ++h) {
                HeadAttention a = base;
                a.layer = l, a.kv_head = h;
                attend_group(a, groups[h], scratch.data() + attend_group_scratch(base) * h);
            }
    };
    double seconds = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        if (threads == 1) heads(0, n_kv_heads);
        else pool().run([&](int i, int n) { heads(i * n_kv_heads / n, (i + 1) * n_kv_heads / n); });
        benchmark::DoNotOptimize(out.data());
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    state.counters["ns/pos/layer"] = seconds * 1e9 / (double(state.iterations()) * n_pos * n_layers);
    state.SetLabel(std::string(dtype_name(type)) + " " + isa_name(isa) + " " + std::to_string(threads) + "T");
    set_isa(best_isa());
}

void BM_Bandwidth(benchmark::State& state) {
    ThreadPool* p = state.range(0) > 1 ? &pool() : nullptr;
    double gbs = 0;
    for (auto _ : state) gbs = measure_read_bandwidth_gbs(p, size_t(1) << 30, 3);
    state.counters["GB/s"] = gbs;
}

// Sampling from a Qwen2.5-Coder-sized vocabulary (151,936 logits), 17 rows a pass as a verify step samples
// them, each from a different logits row, so the rows come from L3 or memory as a verify step's do.
// arg 0 = greedy, 1 = temperature 0.8 with no truncation (the API default), 2 = the same with a presence
// penalty (the penalised copy of the row).
constexpr int kSampleVocab = 151936, kSampleRows = 17;

std::vector<float> sample_logits() {
    std::vector<float> logits(size_t(kSampleVocab) * kSampleRows);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0, 3);
    for (float& l : logits) l = nd(rng);
    return logits;
}

SamplingParams sample_params(int64_t arg) {
    SamplingParams p;
    p.temperature = arg == 0 ? 0.0f : 0.8f;
    if (arg == 2) p.presence_penalty = 0.5f;
    return p;
}

const char* sample_label(int64_t arg) { return arg == 0 ? "greedy" : arg == 1 ? "T 0.8" : "T 0.8, presence penalty"; }

// One row at a time, sample() as plain decoding calls it.
void BM_Sample(benchmark::State& state) {
    const std::vector<float> logits = sample_logits();
    Sampler sampler(sample_params(state.range(0)), kSampleVocab);
    const std::vector<int32_t> history = {11, 12, 13, 14};
    for (auto _ : state)
        for (int r = 0; r < kSampleRows; ++r)
            benchmark::DoNotOptimize(sampler.sample(&logits[size_t(r) * kSampleVocab], history).token);
    state.SetItemsProcessed(state.iterations() * kSampleRows);
    state.SetLabel(sample_label(state.range(0)));
}

// As a verify step samples its rows: each row's passes over the vocabulary prepared on both threads
// (Sampler::prepare), then the draws in order.
void BM_SampleVerifyRows(benchmark::State& state) {
    const std::vector<float> logits = sample_logits();
    Sampler sampler(sample_params(state.range(0)), kSampleVocab);
    std::vector<Sampler::Prepared> rows(kSampleRows);
    for (auto _ : state) {
        pool().parallel_for(kSampleRows, [&](int64_t a, int64_t b) {
            for (int64_t r = a; r < b; ++r) sampler.prepare(&logits[size_t(r) * kSampleVocab], rows[size_t(r)]);
        });
        for (int r = 0; r < kSampleRows; ++r) benchmark::DoNotOptimize(sampler.sample(rows[size_t(r)]).token);
    }
    state.SetItemsProcessed(state.iterations() * kSampleRows);
    state.SetLabel(sample_label(state.range(0)));
}

// The prefix cache's per-request work on a conversation of N tokens already cached (one path of N / 16
// blocks): a turn takes the cached prefix (acquire, at admission) and hands its blocks back (insert, when it
// finishes: between the answer's last token and its final event). Range(1) = 1: cached_blocks() instead,
// the walk over the whole trie behind the runtime's kv_blocks_cached gauge.
void BM_PrefixCache(benchmark::State& state) {
    const int n = int(state.range(0));
    KVCache kv(KVConfig{1, 32, 16, DType::F32, n / 16 + 64});
    PrefixCache cache(kv);
    std::vector<int32_t> tokens(static_cast<size_t>(n)), blocks;
    std::mt19937 rng(1);
    for (int32_t& t : tokens) t = int32_t(rng() % 32000);
    for (int i = 0; i < n / 16; ++i) blocks.push_back(kv.alloc());
    cache.insert(tokens, n, blocks);
    for (auto _ : state) {
        if (state.range(1) == 1) {
            benchmark::DoNotOptimize(cache.cached_blocks());
            continue;
        }
        PrefixCache::Match m = cache.acquire(tokens, n);
        cache.insert(tokens, m.n_tokens, m.blocks);
    }
    state.SetLabel(state.range(1) == 1 ? "cached_blocks" : "acquire + insert");
}

// The cost of one empty parallel region with workers spinning: the floor under every matmul.
void BM_PoolRun(benchmark::State& state) {
    ThreadPool& p = pool();
    const std::function<void(int, int)> fn = [](int, int) {};
    for (auto _ : state) p.run(fn);
}

int type_index(DType t) {
    for (int i = 0; i < int(std::size(kTypes)); ++i)
        if (kTypes[i] == t) return i;
    return 0;
}

void decode_args(benchmark::internal::Benchmark* b) {
    // 896 is not a multiple of 256: K-quants only get the FFN-down shape (real Qwen files use a
    // 32-block type for those tensors too).
    for (DType t : kTypes)
        for (int isa = 0; isa <= 2; ++isa)
            for (auto [r, c] : {std::pair{4864, 896}, std::pair{896, 4864}, std::pair{151936, 896}})
                if (c % traits(t).block_elems == 0) b->Args({type_index(t), r, c, 1, isa, kThreads});
}

void prefill_args(benchmark::internal::Benchmark* b) {
    for (DType t : kTypes)
        for (int isa = 1; isa <= 2; ++isa) b->Args({type_index(t), 896, 4864, 512, isa, kThreads});
}

void cold_args(benchmark::internal::Benchmark* b) {
    // The 0.5B layer's calls as one region each: K or V alone, Q/K/V together, O, FFN down, gate/up together;
    // and 2048 rows for the curve.
    for (DType t : {DType::Q8_0, DType::Q4_0})
        for (auto [r, c] : {std::pair{128, 896}, std::pair{896, 896}, std::pair{1152, 896}, std::pair{2048, 896},
                            std::pair{896, 4864}, std::pair{4864, 896}, std::pair{9728, 896}})
            b->Args({type_index(t), r, c});
}

void cpu_args(benchmark::internal::Benchmark* b) {
    // Decode on a cached (2048 rows) and a DRAM-sized (40000 rows) matrix, and prefill.
    for (DType t : kTypes)
        for (int isa = 1; isa <= 2; ++isa) {
            const int cols = traits(t).block_elems == 256 ? 4864 : 896;
            b->Args({type_index(t), 2048, cols, 1, isa, 1});
            b->Args({type_index(t), 40000, cols, 1, isa, 1});
            b->Args({type_index(t), 896, 4864, 512, isa, 1});
        }
}

void cpu_small_batch_args(benchmark::internal::Benchmark* b) {
    // A few tokens through a DRAM-sized matrix (batched decode, draft verification): per CPU-second,
    // GFLOP/s against the one-token row shows what each extra token costs.
    for (DType t : {DType::Q8_0, DType::Q4_0})
        for (int nt : {1, 2, 4, 8, 16, 17, 32}) b->Args({type_index(t), 40000, 896, nt, 2, 1});
    for (int nt : {1, 16, 17}) b->Args({type_index(DType::Q8_0), 8192, 4864, nt, 2, 1});
}

void cpu_layouts_args(benchmark::internal::Benchmark* b) {
    // Every repacked layout (AVX2: eight rows, AVX-512: sixteen) at the token counts of batched decode and
    // draft blocks, on a 4864-wide matrix (the K-quants' blocks are 256 wide).
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K})
        for (int isa = 1; isa <= 2; ++isa)
            for (int nt : {1, 2, 4, 8, 17}) b->Args({type_index(t), 8192, 4864, nt, isa, 1});
}

void small_args(benchmark::internal::Benchmark* b) {
    // The single-thread crossover: the same small F32/Q8_0 products with 1 and 2 threads.
    for (DType t : {DType::F32, DType::Q8_0})
        for (int n : {64, 128, 256, 512, 896})
            for (int th : {1, 2}) b->Args({type_index(t), n, n, 1, 2, th});
}

BENCHMARK(BM_Bandwidth)->Arg(1)->Arg(kThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PoolRun);
BENCHMARK(BM_PrefixCache)->ArgsProduct({{1024, 16384, 131072}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sample)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleVerifyRows)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Attention)->ArgsProduct({{1, 7, 63}, {1544}, {0, 1, 2}, {1, 2}, {48, 64}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionLong)->ArgsProduct({{0, 1, 2}, {1, 2}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stories260KStep)->UseRealTime();
BENCHMARK(BM_Matmul)->Name("Decode")->Apply(decode_args)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK(BM_MatmulCold)->Name("DecodeCold")->Apply(cold_args)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK(BM_Matmul)->Name("Prefill512")->Apply(prefill_args)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_Matmul)->Name("Small")->Apply(small_args)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK(BM_ReadCpu)->Name("Cpu1T/read")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulCpu)->Name("Cpu1T")->Apply(cpu_args)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulCpu)->Name("Cpu1TFew")->Apply(cpu_small_batch_args)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulCpu)->Name("Cpu1TLayouts")->Apply(cpu_layouts_args)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ModelDecode)
    ->Args({type_index(DType::Q8_0), 2, 1})->Args({type_index(DType::Q4_0), 2, 1})
    ->Args({type_index(DType::Q8_0), 1, 1})->Args({type_index(DType::Q4_0), 1, 1})
    ->Args({type_index(DType::Q5_0), 2, 1})->Args({type_index(DType::F16), 2, 1})
    ->Unit(benchmark::kMillisecond)->UseManualTime();
// A model step for a few tokens at once (batched decode, draft verification): ModelStep/<type>/2/<n>.
BENCHMARK(BM_ModelDecode)->Name("ModelStep")
    ->ArgsProduct({{type_index(DType::Q8_0), type_index(DType::Q4_0)}, {2}, {1, 2, 4, 8, 16, 17, 24, 32, 48}})
    ->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace
}  // namespace flint

BENCHMARK_MAIN();
