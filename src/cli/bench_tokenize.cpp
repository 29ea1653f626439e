// `flint bench tokenize` — tokenizer throughput: tokens/s and MB/s on ~100 KB of source code (median of
// repeats), and a measured 128k-token prompt (the longest context a Qwen2.5-Coder prompt can fill).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct BenchTokenizeOptions {
    std::string model;
    std::string file;
    int reps = 5;
    size_t target_bytes = 100 * 1024;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string default_bench_model() {
    const char* candidates[] = {"../shared/models/tiny-qwen2-f32.gguf", FLINT_SOURCE_DIR "/../shared/models/tiny-qwen2-f32.gguf"};
    for (const char* c : candidates)
        if (std::filesystem::exists(c)) return std::filesystem::weakly_canonical(c).string();
    return candidates[0];
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, ": cannot read");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Real C++ from this repository: the sources under src/, in path order, cut at a line end near `target`.
std::string repo_source_text(size_t target, size_t* n_files) {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::recursive_directory_iterator(FLINT_SOURCE_DIR "/src")) {
        const auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".cpp" || ext == ".h")) paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    std::string text;
    *n_files = 0;
    for (const auto& p : paths) {
        if (text.size() >= target) break;
        text += read_all(p.string());
        ++*n_files;
    }
    if (text.size() > target) {
        const size_t nl = text.rfind('\n', target);
        text.resize(nl == std::string::npos ? target : nl + 1);
    }
    return text;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median seconds of `reps` encodes; sets *n_tokens. Cold: each encode runs on a fresh thread, so the
// BPE piece cache (per thread) starts empty — the cost of a prompt the engine has never seen words of.
// Warm: all on this thread after a warm-up, as an engine thread serving many requests runs.
double time_encode(const Tokenizer& tok, const std::string& text, int reps, bool cold, size_t* n_tokens) {
    *n_tokens = tok.encode(text, false, false).size();
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
        size_t n = 0;
        double s = 0;
        auto once = [&] {
            const auto t0 = Clock::now();
            n = tok.encode(text, false, false).size();
            s = seconds_since(t0);
        };
        if (cold) std::thread(once).join();
        else once();
        if (n != *n_tokens) fail("bench tokenize: encode is not deterministic");
        t.push_back(s);
    }
    return median(t);
}

void bench_tokenize(const BenchTokenizeOptions& o) {
    std::string text, source;
    if (!o.file.empty()) {
        text = read_all(o.file);
        source = o.file;
    } else {
        size_t n_files = 0;
        text = repo_source_text(o.target_bytes, &n_files);
        source = std::to_string(n_files) + " files of " FLINT_SOURCE_DIR "/src (*.cpp, *.h, path order)";
    }
    if (text.empty()) fail("bench tokenize: the input text is empty");

    auto t0 = Clock::now();
    auto f = gguf::File::open(o.model);
    auto tok = Tokenizer::from_gguf(*f);
    const double load_s = seconds_since(t0);
    std::printf("model: %s (%s, pre \"%s\", %d tokens), tokenizer loaded in %.1f ms\n", o.model.c_str(),
                std::string(tok->model_kind()).c_str(), std::string(tok->pre()).c_str(), tok->n_vocab(), load_s * 1e3);
    std::printf("text:  %s, %zu bytes\n", source.c_str(), text.size());

    size_t n_tokens = 0;
    const double s = time_encode(*tok, text, o.reps, true, &n_tokens);
    const double sw = time_encode(*tok, text, o.reps, false, &n_tokens);
    std::printf("encode: %zu tokens, %.2f bytes/token, median of %d\n", n_tokens, double(text.size()) / n_tokens, o.reps);
    std::printf("  cold cache: %.2f ms = %.0f tokens/s, %.2f MB/s\n", s * 1e3, n_tokens / s, text.size() / s / 1e6);
    std::printf("  warm cache: %.2f ms = %.0f tokens/s, %.2f MB/s\n", sw * 1e3, n_tokens / sw, text.size() / sw / 1e6);

    // How much of it is the pre-tokenizer (regex splitting) alone: the measured basis for keeping PCRE2.
    if (tok->model_kind() == "gpt2") {
        auto pre = PreTokenizer::for_pre(tok->pre());
        std::vector<double> tp;
        std::vector<std::string_view> pieces;
        for (int r = 0; r < o.reps; ++r) {
            pieces.clear();
            const auto t1 = Clock::now();
            pre->split(text, pieces);
            tp.push_back(seconds_since(t1));
        }
        const double sp = median(tp);
        std::printf("  of which pre-tokenizer (PCRE2 JIT): %zu pieces in %.2f ms = %.2f MB/s (%.0f%% of the cold encode)\n",
                    pieces.size(), sp * 1e3, text.size() / sp / 1e6, 100.0 * sp / s);  // share of the cold encode
    }

    // A 128k-token prompt, measured: distinct source text (more of the repository, or the file repeated
    // when it is all there is) with at least 131072 tokens, on a cold cache.
    const size_t want = 128 * 1024;
    const size_t want_bytes = static_cast<size_t>(1.1 * double(want) * double(text.size()) / double(n_tokens));
    size_t n_long_files = 0;
    std::string long_text = o.file.empty() ? repo_source_text(want_bytes, &n_long_files) : text;
    const std::string base = long_text;
    int copies = 1;
    while (tok->encode(long_text, false, false).size() < want) {
        long_text += base;
        ++copies;
    }
    size_t n_long = 0;
    const double sl = time_encode(*tok, long_text, std::max(1, std::min(o.reps, 3)), true, &n_long);
    std::printf("long:   %zu tokens (%zu bytes; %s%s) in %.1f ms cold = %.0f tokens/s; 128k tokens take %.1f ms\n", n_long,
                long_text.size(), o.file.empty() ? (std::to_string(n_long_files) + " source files").c_str() : "the file",
                copies > 1 ? (", x" + std::to_string(copies)).c_str() : "", sl * 1e3, n_long / sl,
                sl * 1e3 * double(want) / double(n_long));

    // Detokenization of the same ids (all pieces, as a stream decoder would see them).
    const auto ids = tok->encode(text, false, false);
    const size_t expected_bytes = tok->decode(ids).size();  // SPM: the text plus its space prefix
    std::vector<double> td;
    for (int r = 0; r < o.reps; ++r) {
        const auto t1 = Clock::now();
        StreamDecoder d(*tok);
        size_t bytes = 0;
        for (TokenId id : ids) bytes += d.push(id).size();
        bytes += d.flush().size();
        td.push_back(seconds_since(t1));
        if (bytes != expected_bytes) fail("bench tokenize: detokenized ", bytes, " bytes, expected ", expected_bytes);
    }
    const double sd = median(td);
    std::printf("decode: %zu tokens in %.2f ms (StreamDecoder, median of %d) = %.0f tokens/s\n", ids.size(), sd * 1e3,
                o.reps, ids.size() / sd);
}

}  // namespace

void register_bench_tokenize(CLI::App& bench) {
    auto o = std::make_shared<BenchTokenizeOptions>();
    o->model = default_bench_model();
    CLI::App* cmd = bench.add_subcommand("tokenize", "Tokenizer speed: tokens/s and MB/s on ~100 KB of source, and a 128k-token prompt");
    cmd->add_option("-m,--model", o->model, "GGUF model whose tokenizer to measure")->capture_default_str();
    cmd->add_option("--file", o->file, "Text to tokenize (default: ~100 KB of this repository's C++ sources)");
    cmd->add_option("-r,--reps", o->reps, "Repetitions (the median is reported)")->check(CLI::Range(1, 1000))->capture_default_str();
    cmd->callback([o] { bench_tokenize(*o); });
}

}  // namespace flint::cli
