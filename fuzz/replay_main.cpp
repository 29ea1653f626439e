// Replays saved inputs through a libFuzzer target without libFuzzer: the ctest regression check for the
// corpora under fuzz/corpus/, built with the ordinary compiler and, in CI, under ASan+UBSan. Every input
// must come back from LLVMFuzzerTestOneInput; a broken property aborts, a sanitizer report exits non-zero.
// Usage: NAME_replay [--needs PATH]... FILE_OR_DIR...
//   --needs PATH  skip (exit 77, ctest's SKIP_RETURN_CODE) when PATH does not exist, e.g. ../shared's models
// The name of each input goes to stdout before it runs, so the last name printed is the one that failed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

bool read_all(const fs::path& p, std::vector<uint8_t>& out) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return false;
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--needs" && i + 1 < argc) {
            if (!fs::exists(argv[++i])) {
                std::printf("skipped: %s not found\n", argv[i]);
                return 77;
            }
        } else if (arg == "-h" || arg == "--help") {
            std::printf("usage: %s [--needs PATH]... FILE_OR_DIR...\n", argv[0]);
            return 0;
        } else if (arg.rfind("-", 0) == 0) {
            std::fprintf(stderr, "%s: unknown option %s (usage: [--needs PATH]... FILE_OR_DIR...)\n", argv[0], arg.c_str());
            return 2;
        } else if (fs::is_directory(arg)) {
            std::vector<fs::path> files;
            for (const auto& e : fs::directory_iterator(arg))
                if (e.is_regular_file()) files.push_back(e.path());
            std::sort(files.begin(), files.end());
            if (files.empty()) {
                std::fprintf(stderr, "%s: no inputs in %s\n", argv[0], arg.c_str());
                return 2;
            }
            inputs.insert(inputs.end(), files.begin(), files.end());
        } else if (fs::is_regular_file(arg)) {
            inputs.push_back(arg);
        } else {
            std::fprintf(stderr, "%s: %s: no such file or directory\n", argv[0], arg.c_str());
            return 2;
        }
    }
    if (inputs.empty()) {
        std::fprintf(stderr, "usage: %s [--needs PATH]... FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    for (const auto& p : inputs) {
        std::printf("%s\n", p.c_str());
        std::fflush(stdout);
        std::vector<uint8_t> data;
        if (!read_all(p, data)) {
            std::fprintf(stderr, "%s: cannot read %s\n", argv[0], p.c_str());
            return 2;
        }
        static const uint8_t kNone = 0;  // libFuzzer never passes a null pointer, even for an empty input
        LLVMFuzzerTestOneInput(data.empty() ? &kNone : data.data(), data.size());
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("replayed %zu inputs in %.2f s\n", inputs.size(), s);
    return 0;
}
