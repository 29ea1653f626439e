// `flint quantize IN.gguf OUT.gguf TYPE [-t N]` — converts F32/F16/BF16 weights to a smaller type.
// The rules (what stays F32, fallbacks) are in gguf/gguf_quantize.h.
#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "cli/commands.h"
#include "gguf/gguf_quantize.h"

namespace flint::cli {
namespace {

struct QuantizeArgs {
    std::string in, out, type;
    int threads = 0;
    bool quiet = false;
};

void quantize(const QuantizeArgs& a) {
    DType target = gguf::parse_quantize_target(a.type);  // before any I/O: a typo fails fast
    gguf::QuantizeOptions o;
    o.target = target;
    o.threads = a.threads;
    // The progress line rewrites itself with \r: only on a terminal, where that reads as one line.
    const bool progress = !a.quiet && ::isatty(2);
    if (progress)
        o.on_tensor = [](size_t k, size_t n, const gguf::TensorInfo& t, DType dt) {
            // One status line, rewritten in place: \r then clear to the end of the line.
            std::fprintf(stderr, "\r\033[K[%zu/%zu] %-32s %-5s -> %s", k + 1, n, t.name.c_str(),
                         std::string(dtype_name(t.type)).c_str(), std::string(dtype_name(dt)).c_str());
            std::fflush(stderr);
        };
    auto t0 = std::chrono::steady_clock::now();
    gguf::QuantizeResult r = gguf::quantize_file(a.in, a.out, o);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress) std::fprintf(stderr, "\r\033[K");
    constexpr size_t kMaxNotes = 6;  // a big model can have hundreds of identical fallbacks
    for (size_t k = 0; k < r.notes.size() && k < kMaxNotes; ++k) std::fprintf(stderr, "note: %s\n", r.notes[k].c_str());
    if (r.notes.size() > kMaxNotes) std::fprintf(stderr, "note: ... and %zu more fallbacks\n", r.notes.size() - kMaxNotes);
    std::fprintf(stderr, "%s: %zu tensors (%zu converted to %s or a fallback), %.2f MiB -> %.2f MiB in %.2f s\n",
                 a.out.c_str(), r.n_tensors, r.n_converted, std::string(dtype_name(target)).c_str(),
                 r.in_bytes / 1048576.0, r.out_bytes / 1048576.0, secs);
}

}  // namespace

void register_quantize(CLI::App& app) {
    auto a = std::make_shared<QuantizeArgs>();
    CLI::App* cmd = app.add_subcommand(
        "quantize",
        "Convert a GGUF file's F32/F16/BF16 weights to TYPE. 1-D tensors (norms, biases) stay F32; tensors "
        "whose rows do not fit TYPE's block size fall back when rows are a multiple of 32 (q4_k: q5_0, q5_k: q5_1, "
        "q6_k: q8_0, iq4_xs, q3_k and q2_k: iq4_nl), "
        "else f16, with a note.");
    cmd->add_option("input", a->in, "Source GGUF file")->required();
    cmd->add_option("output", a->out, "Destination GGUF file")->required();
    cmd->add_option("type", a->type, "q8_0, q6_k, q5_k, q5_1, q5_0, q4_k, q4_1, q4_0, iq4_xs, iq4_nl, q3_k, q2_k, f16, bf16 or f32")->required();
    cmd->add_option("-t,--threads", a->threads, "Worker threads (0: all cores)");
    cmd->add_flag("-q,--quiet", a->quiet, "No progress line");
    cmd->callback([a] { quantize(*a); });
}

}  // namespace flint::cli
