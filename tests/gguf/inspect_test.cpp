// `flint inspect --json`: machine-readable metadata and tensors, keys in file order, arrays cut to
// --max-items values with their full count.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "test_paths.h"

using namespace flint;

TEST(Inspect, JsonListsKeysInFileOrderAndEveryTensor) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    if (!std::filesystem::exists(FLINT_BINARY)) GTEST_SKIP() << FLINT_BINARY << " is not built";
    const std::string path = test::shared_path("models/stories260K.gguf");
    std::string out;
    FILE* p = popen((std::string(FLINT_BINARY) + " inspect --json --max-items 3 " + path).c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ASSERT_EQ(WEXITSTATUS(pclose(p)), 0) << out;

    auto j = nlohmann::ordered_json::parse(out);
    auto f = gguf::File::open(path);
    EXPECT_EQ(j["data_offset"], f->data_offset());
    ASSERT_EQ(j["metadata"].size(), f->metadata().size());
    size_t k = 0;
    for (const auto& [key, v] : j["metadata"].items()) EXPECT_EQ(key, f->metadata()[k++].first);
    const auto& tokens = j["metadata"]["tokenizer.ggml.tokens"];
    EXPECT_EQ(tokens["count"], 512);
    EXPECT_EQ(tokens["values"], nlohmann::ordered_json::array({"<unk>", "<s>", "</s>"}));
    EXPECT_EQ(j["metadata"]["llama.block_count"]["value"], 5);
    ASSERT_EQ(j["tensors"].size(), f->tensors().size());
    EXPECT_EQ(j["tensors"][0]["name"], "token_embd.weight");
    EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::ordered_json::array({64, 512}));
}
