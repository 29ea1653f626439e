// Corrupt or mismatched weights give clear errors naming the tensor and what was expected.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "gguf/gguf.h"
#include "model/model.h"
#include "test_paths.h"
#include "util/error.h"

using namespace flint;

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replaces the first occurrence of `from` with `to` (same length) in the header region of the file bytes.
void patch(std::vector<uint8_t>& bytes, const std::string& from, const std::string& to) {
    ASSERT_EQ(from.size(), to.size());
    auto it = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
    ASSERT_NE(it, bytes.end()) << from;
    std::copy(to.begin(), to.end(), it);
}

std::string load_error(const std::vector<uint8_t>& bytes) {
    try {
        Model::from_file(gguf::File::parse(bytes.data(), bytes.size(), "patched.gguf"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(WeightErrors, MissingTensorIsNamed) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto bytes = read_all(test::shared_path("models/stories260K.gguf"));
    patch(bytes, "blk.3.ffn_up.weight", "blk.3.ffn_XX.weight");
    std::string e = load_error(bytes);
    EXPECT_NE(e.find("missing tensor blk.3.ffn_up.weight"), std::string::npos) << e;
}

TEST(WeightErrors, WrongShapeReportsExpectedAndFound) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto bytes = read_all(test::shared_path("models/stories260K.gguf"));
    // Swap the names of attn_q (64x64) and attn_k (64x32) in layer 2: both shapes now mismatch.
    patch(bytes, "blk.2.attn_q.weight", "blk.2.attn_T.weight");
    patch(bytes, "blk.2.attn_k.weight", "blk.2.attn_q.weight");
    patch(bytes, "blk.2.attn_T.weight", "blk.2.attn_k.weight");
    std::string e = load_error(bytes);
    EXPECT_NE(e.find("blk.2.attn_q.weight: expected shape [64, 64] got [64, 32]"), std::string::npos) << e;
}

TEST(WeightErrors, UnsupportedArchitecture) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto bytes = read_all(test::shared_path("models/stories260K.gguf"));
    patch(bytes, "llama.block_count", "llamX.block_count");
    std::string e = load_error(bytes);
    EXPECT_NE(e.find("missing required key 'llama.block_count'"), std::string::npos) << e;
}
