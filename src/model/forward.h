// flint/model/forward.h — tokens in, logits out: one forward pass over a batch.
//
// A batch is a list of sequences, each contributing n new tokens at positions pos0 … pos0+n-1 whose KV is
// written into the blocks its block table names (positions before pos0 are already there). One sequence
// with many tokens is prefill (or k-token verification of draft tokens); many sequences with one token
// each is batched decode; any mix works. All tokens go through each weight matrix together, so every
// weight byte is read once per step.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace flint {

class KVCache;
class ThreadPool;

enum class Logits { None, Last, All };

struct SeqBatch {
    std::span<const int32_t> tokens;  // (n) new tokens
    int pos0 = 0;                     // position of tokens[0]
    std::span<const int32_t> blocks;  // block table covering positions [0, pos0 + n)
    Logits logits = Logits::Last;     // which rows of logits this sequence wants
};

// Called with each named intermediate activation when set (debugging against a reference):
// name ("attn_norm", "q", "k", "v", "attn_out", "ffn_out", "l_out", "result_norm"…), layer (-1 for none),
// data [rows][cols].
using ActivationDump = std::function<void(std::string_view name, int layer, const float* data, int64_t rows, int64_t cols)>;

// The stages of a forward pass, for a wall-time breakdown (flint bench --stages): where a step goes beside
// the matmul kernels. Each matmul stage includes its activation conversion and its parallel region's ends.
enum class Stage {
    Embed,       // token rows, RoPE angles
    Norms,       // the RMSNorms (and the final one)
    QKV,         // the Q, K, V products
    BiasRopeKV,  // biases, RoPE, the KV cache write
    Attention,
    OutProj,     // attention output projection
    Residual,    // the two residual adds
    FfnGateUp,   // gate and up products with SwiGLU
    FfnDown,
    Head,        // output projection to the vocabulary
    kCount
};
const char* stage_name(Stage s);

// Wall time per stage, summed over the passes run with it attached (ForwardScratch::stage_times).
struct StageTimes {
    double seconds[static_cast<int>(Stage::kCount)] = {};
    int64_t passes = 0;
};

// Scratch buffers, grown on demand and reused: no allocation per step once warm.
struct ForwardScratch {
    StageTimes* stage_times = nullptr;  // when set, forward() adds each stage's wall time to it
    std::vector<float> x, xb, q, k, v, att, hb, hb2, rope, out_rows;  // shapes noted in forward.cpp
    std::vector<uint16_t> k16;
    std::vector<float> scores;  // per thread: attention scratch (scores_per_thread floats)
    size_t scores_per_thread = 0;
    struct Unit {
        int64_t t0, t1;  // batch tokens [t0, t1) of one sequence
        int kv_head;
    };
    std::vector<Unit> units;    // attention work units of the current layer
    std::vector<int32_t> pos;   // (T) position of each batch token
    std::vector<int32_t> seq;   // (T) index of each batch token's sequence
};

// Runs the model over the batch. Writes logits rows to `logits` ([rows][n_vocab], rows in batch order:
// for each sequence its last token (Logits::Last) or all its tokens (Logits::All)); returns the row count.
int64_t forward(const Model& m, std::span<const SeqBatch> batch, KVCache& kv, ForwardScratch& s, ThreadPool* pool,
                float* logits, const ActivationDump* dump = nullptr);

// How many logits rows a batch produces.
int64_t logits_rows(std::span<const SeqBatch> batch);

}  // namespace flint
