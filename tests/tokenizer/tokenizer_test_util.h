// Helpers shared by the tokenizer tests: loading tokenizers from ../shared once per process and reading
// the reference files.
#pragma once
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace flint::test {

// Tokenizers are cached: the Qwen2 vocab (151,936 tokens, 151,387 merges) takes a while to load under ASan.
inline std::shared_ptr<Tokenizer> load_tokenizer(const std::string& rel) {
    static std::map<std::string, std::shared_ptr<Tokenizer>> cache;
    auto& t = cache[rel];
    if (!t) {
        auto f = gguf::File::open(shared_path(rel));
        t = Tokenizer::from_gguf(*f);
    }
    return t;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Whitespace-separated integers.
inline std::vector<TokenId> parse_ids(const std::string& s) {
    std::istringstream in(s);
    std::vector<TokenId> ids;
    for (long v; in >> v;) ids.push_back(static_cast<TokenId>(v));
    return ids;
}

}  // namespace flint::test
