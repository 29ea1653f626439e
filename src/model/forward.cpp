// The forward pass as a recipe of free functions: embed → per layer (norm, QKV, RoPE, KV write, attention,
// output projection, residual, norm, SwiGLU FFN, residual) → final norm → output projection.
#include "model/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "kv/kv_cache.h"
#include "model/attention.h"
#include "model/rope.h"
#include "tensor/kernels.h"
#include "tensor/matmul.h"
#include "tensor/quant.h"
#include "tensor/thread_pool.h"
#include "tensor/vec.h"
#include "util/error.h"

namespace flint {
namespace {

// x, out: [T][n]. The sum of squares is accumulated in double, as the reference engine does, in eight
// partial sums: one chain of dependent double additions cost ~1 us a call for the 0.5B's 896 (0.5B Q4_0
// decode, the two norms of a layer and a residual add: 3.1-3.6 -> 1.7-2.0 us, BENCHMARKS.md).
void rms_norm(const float* x, const float* w, float* out, int64_t T, int n, float eps) {
    for (int64_t t = 0; t < T; ++t) {
        const float* xr = x + t * n;
        float* o = out + t * n;
        double part[8] = {};
        int k = 0;
        for (; k + 8 <= n; k += 8)
            for (int j = 0; j < 8; ++j) part[j] += static_cast<double>(xr[k + j]) * xr[k + j];
        for (; k < n; ++k) part[0] += static_cast<double>(xr[k]) * xr[k];
        const double ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        const float scale = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
        for (int i = 0; i < n; ++i) o[i] = xr[i] * scale * w[i];
    }
}

void add_bias(float* x, const float* b, int64_t T, int n) {
    if (!b) return;
    for (int64_t t = 0; t < T; ++t)
        for (int i = 0; i < n; ++i) x[t * n + i] += b[i];
}

// k16: kv_dim halves of scratch (an f16 cache's key row is converted in one vector call, a Q8_0 cache's
// quantized into it, then scattered).
void store_kv(KVCache& kv, int layer, std::span<const int32_t> blocks, int pos, const float* k, const float* v,
              uint16_t* k16) {
    const int bs = kv.block_size();
    const int32_t b = blocks[pos / bs];
    const int slot = pos % bs;
    const int n = kv.config().kv_dim;
    // Keys go in transposed (kv/kv_cache.h): element c of this position at c * bs + slot.
    if (kv.config().type == DType::Q8_0) {
        const auto quantize = detail::active_kernels().quantize_q8_0;
        auto* kq = reinterpret_cast<BlockQ8_0*>(k16);  // n / 32 blocks: 34 n / 32 bytes of the 2 n
        quantize(k, kq, n);
        int8_t* kt = reinterpret_cast<int8_t*>(kv.k(b, layer)) + slot;
        uint16_t* ks = kv.k_scales(b, layer) + slot;
        for (int c = 0; c < n; ++c) kt[static_cast<int64_t>(c) * bs] = kq[c / QK].qs[c % QK];
        for (int j = 0; j < n / QK; ++j) ks[static_cast<int64_t>(j) * bs] = kq[j].d;
        quantize(v, reinterpret_cast<BlockQ8_0*>(kv.v(b, layer) + static_cast<size_t>(slot) * kv.row_bytes()), n);
    } else if (kv.config().type == DType::F16) {
        uint16_t* kt = reinterpret_cast<uint16_t*>(kv.k(b, layer)) + slot;
        fp32_to_fp16_row(k, k16, n);
        for (int c = 0; c < n; ++c) kt[static_cast<int64_t>(c) * bs] = k16[c];
        fp32_to_fp16_row(v, reinterpret_cast<uint16_t*>(kv.v(b, layer)) + static_cast<int64_t>(slot) * n, n);
    } else {
        float* kt = reinterpret_cast<float*>(kv.k(b, layer)) + slot;
        for (int c = 0; c < n; ++c) kt[static_cast<int64_t>(c) * bs] = k[c];
        std::memcpy(reinterpret_cast<float*>(kv.v(b, layer)) + static_cast<int64_t>(slot) * n, v, n * sizeof(float));
    }
}

// Adds the time since the previous mark to a stage (nothing when no StageTimes is attached).
class StageClock {
public:
    explicit StageClock(StageTimes* t) : t_(t) {
        if (!t_) return;
        ++t_->passes;
        last_ = std::chrono::steady_clock::now();
    }
    void mark(Stage s) {
        if (!t_) return;
        const auto now = std::chrono::steady_clock::now();
        t_->seconds[static_cast<int>(s)] += std::chrono::duration<double>(now - last_).count();
        last_ = now;
    }

private:
    StageTimes* t_;
    std::chrono::steady_clock::time_point last_;
};

template <typename T>
void grow(std::vector<T>& v, size_t n) {
    if (v.size() < n) v.resize(n);
}

}  // namespace

const char* stage_name(Stage s) {
    switch (s) {
        case Stage::Embed: return "embed";
        case Stage::Norms: return "norms";
        case Stage::QKV: return "q/k/v";
        case Stage::BiasRopeKV: return "bias, rope, kv write";
        case Stage::Attention: return "attention";
        case Stage::OutProj: return "attention output";
        case Stage::Residual: return "residual adds";
        case Stage::FfnGateUp: return "ffn gate/up";
        case Stage::FfnDown: return "ffn down";
        case Stage::Head: return "output head";
        case Stage::kCount: break;
    }
    return "?";
}

int64_t logits_rows(std::span<const SeqBatch> batch) {
    int64_t rows = 0;
    for (const SeqBatch& sb : batch)
        rows += sb.logits == Logits::All ? static_cast<int64_t>(sb.tokens.size()) : sb.logits == Logits::Last ? 1 : 0;
    return rows;
}

int64_t forward(const Model& m, std::span<const SeqBatch> batch, KVCache& kv, ForwardScratch& s, ThreadPool* pool,
                float* logits, const ActivationDump* dump) {
    const ModelConfig& c = m.config;
    const ModelWeights& w = m.weights;
    const int dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), ffn = c.ffn_dim, hd = c.head_dim;
    if (kv.config().kv_dim != kv_dim || kv.config().n_layers != c.n_layers)
        fail("KV cache shape (", kv.config().n_layers, " layers, kv_dim ", kv.config().kv_dim,
             ") does not match the model (", c.n_layers, ", ", kv_dim, ")");

    // Lay out the batch: token t belongs to sequence seq[t] at position pos[t].
    int64_t T = 0;
    int max_pos = 0;
    for (const SeqBatch& sb : batch) {
        const int end = sb.pos0 + static_cast<int>(sb.tokens.size());
        if (static_cast<int64_t>(sb.blocks.size()) * kv.block_size() < end)
            fail("block table of ", sb.blocks.size(), " blocks cannot hold ", end, " positions");
        T += static_cast<int64_t>(sb.tokens.size());
        max_pos = std::max(max_pos, end);
    }
    if (T == 0) return 0;
    StageClock clock(s.stage_times);
    const int n_threads = pool ? pool->size() : 1;
    grow(s.x, T * dim);         // (T, dim) residual stream
    grow(s.xb, T * dim);        // (T, dim) normed input / projection output
    grow(s.q, T * q_dim);       // (T, n_heads * head_dim)
    grow(s.k, T * kv_dim);      // (T, n_kv_heads * head_dim)
    grow(s.v, T * kv_dim);
    grow(s.k16, kv_dim);        // one key row as f16 (an f16 cache) or Q8_0 blocks (a Q8_0 cache)
    grow(s.att, T * q_dim);     // (T, n_heads * head_dim) attention output
    grow(s.hb, T * ffn);        // (T, ffn) gate, then silu(gate) * up
    grow(s.hb2, T * ffn);       // (T, ffn) up
    grow(s.rope, T * c.rope.n_rot);  // (T, n_rot) cos/sin pairs
    {
        HeadAttention probe{&kv, 0, {}, max_pos, 0, hd};
        s.scores_per_thread = attend_group_scratch(probe);
    }
    grow(s.scores, static_cast<size_t>(n_threads) * s.scores_per_thread);
    grow(s.pos, T);
    grow(s.seq, T);
    {
        int64_t t = 0;
        for (size_t si = 0; si < batch.size(); ++si)
            for (size_t j = 0; j < batch[si].tokens.size(); ++j, ++t) {
                s.pos[t] = batch[si].pos0 + static_cast<int>(j);
                s.seq[t] = static_cast<int32_t>(si);
                const int32_t id = batch[si].tokens[j];
                if (id < 0 || id >= c.n_vocab) fail("token id ", id, " is outside the vocabulary (", c.n_vocab, ")");
                get_row(w.token_embd, id, &s.x[t * dim]);
                rope_cos_sin(c.rope, s.pos[t], &s.rope[t * c.rope.n_rot]);
            }
    }
    auto emit = [&](std::string_view name, int layer, const float* data, int64_t cols) {
        if (dump && *dump) (*dump)(name, layer, data, T, cols);
    };
    emit("inp_embd", -1, s.x.data(), dim);
    clock.mark(Stage::Embed);

    const int group = c.n_heads / c.n_kv_heads;
    if (group > kMaxGroupQueries) fail("attention: ", group, " query heads per KV head (at most ", kMaxGroupQueries, ")");
    for (int l = 0; l < c.n_layers; ++l) {
        const LayerWeights& L = w.layers[l];
        rms_norm(s.x.data(), L.attn_norm, s.xb.data(), T, dim, c.rms_eps);
        emit("attn_norm", l, s.xb.data(), dim);
        clock.mark(Stage::Norms);
        const MatmulOut qkv[3] = {{L.wq, s.q.data()}, {L.wk, s.k.data()}, {L.wv, s.v.data()}};
        matmul_many(qkv, s.xb.data(), T, pool);
        clock.mark(Stage::QKV);
        add_bias(s.q.data(), L.bq, T, q_dim);
        add_bias(s.k.data(), L.bk, T, kv_dim);
        add_bias(s.v.data(), L.bv, T, kv_dim);
        for (int64_t t = 0; t < T; ++t) {
            rope_apply(c.rope, &s.rope[t * c.rope.n_rot], &s.q[t * q_dim], c.n_heads, hd);
            rope_apply(c.rope, &s.rope[t * c.rope.n_rot], &s.k[t * kv_dim], c.n_kv_heads, hd);
            store_kv(kv, l, batch[s.seq[t]].blocks, s.pos[t], &s.k[t * kv_dim], &s.v[t * kv_dim], s.k16.data());
        }
        emit("q", l, s.q.data(), q_dim);
        emit("k", l, s.k.data(), kv_dim);
        emit("v", l, s.v.data(), kv_dim);

        // Attention in units of (sequence, KV head, a few consecutive tokens): the query heads of a KV group
        // and neighbouring tokens share every K/V read. Units are spread over the threads.
        const int tile_tokens = kMaxGroupQueries / group;
        s.units.clear();
        for (int64_t t0 = 0; t0 < T;) {
            int64_t t1 = t0 + 1;
            while (t1 < T && t1 - t0 < tile_tokens && s.seq[t1] == s.seq[t0]) ++t1;
            for (int g = 0; g < c.n_kv_heads; ++g) s.units.push_back({t0, t1, g});
            t0 = t1;
        }
        const int64_t n_units = static_cast<int64_t>(s.units.size());
        auto attend = [&](int thread, int nth) {
            float* scratch = &s.scores[static_cast<size_t>(thread) * s.scores_per_thread];
            for (int64_t u = thread; u < n_units; u += nth) {
                const ForwardScratch::Unit& un = s.units[u];
                HeadAttention a{&kv, l, batch[s.seq[un.t0]].blocks, 0, un.kv_head, hd};
                QueryGroup qg;
                for (int64_t t = un.t0; t < un.t1; ++t)
                    for (int h = un.kv_head * group; h < (un.kv_head + 1) * group; ++h) {
                        qg.q[qg.n] = &s.q[t * q_dim + h * hd];
                        qg.out[qg.n] = &s.att[t * q_dim + h * hd];
                        qg.n_pos[qg.n] = s.pos[t] + 1;
                        a.n_pos = std::max(a.n_pos, s.pos[t] + 1);
                        ++qg.n;
                    }
                attend_group(a, qg, scratch);
            }
        };
        clock.mark(Stage::BiasRopeKV);
        if (pool && n_units > 1) pool->run(attend);
        else attend(0, 1);
        clock.mark(Stage::Attention);
        emit("kqv_out", l, s.att.data(), q_dim);

        matmul(L.wo, s.att.data(), T, s.xb.data(), pool);
        emit("attn_out", l, s.xb.data(), dim);
        clock.mark(Stage::OutProj);
        axpy_f32(1.0f, s.xb.data(), s.x.data(), T * dim);  // x += xb, the same bits as a plain sum
        emit("ffn_inp", l, s.x.data(), dim);
        clock.mark(Stage::Residual);

        rms_norm(s.x.data(), L.ffn_norm, s.xb.data(), T, dim, c.rms_eps);
        emit("ffn_norm", l, s.xb.data(), dim);
        clock.mark(Stage::Norms);
        matmul_swiglu(L.w_gate, L.w_up, s.xb.data(), T, s.hb.data(), s.hb2.data(), pool);
        clock.mark(Stage::FfnGateUp);
        matmul(L.w_down, s.hb.data(), T, s.xb.data(), pool);
        emit("ffn_out", l, s.xb.data(), dim);
        clock.mark(Stage::FfnDown);
        axpy_f32(1.0f, s.xb.data(), s.x.data(), T * dim);  // x += xb, the same bits as a plain sum
        emit("l_out", l, s.x.data(), dim);
        clock.mark(Stage::Residual);
    }

    // Final norm and output projection only for the rows someone asked for.
    const int64_t rows = logits_rows(batch);
    if (rows == 0) return 0;
    grow(s.out_rows, rows * dim);
    int64_t r = 0, t0 = 0;
    for (const SeqBatch& sb : batch) {
        const int64_t n = static_cast<int64_t>(sb.tokens.size());
        if (sb.logits == Logits::All) {
            for (int64_t j = 0; j < n; ++j, ++r) std::memcpy(&s.out_rows[r * dim], &s.x[(t0 + j) * dim], dim * sizeof(float));
        } else if (sb.logits == Logits::Last) {
            std::memcpy(&s.out_rows[r * dim], &s.x[(t0 + n - 1) * dim], dim * sizeof(float));
            ++r;
        }
        t0 += n;
    }
    rms_norm(s.out_rows.data(), w.output_norm, s.out_rows.data(), rows, dim, c.rms_eps);
    if (dump && *dump) (*dump)("result_norm", -1, s.out_rows.data(), rows, dim);
    clock.mark(Stage::Norms);
    matmul(w.output, s.out_rows.data(), rows, logits, pool);
    if (dump && *dump) (*dump)("result_output", -1, logits, rows, c.n_vocab);
    clock.mark(Stage::Head);
    return rows;
}

}  // namespace flint
