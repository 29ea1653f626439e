#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "test_paths.h"
#include "util/error.h"

using namespace flint;

TEST(GgufReader, ReadsStories260KWithDefaults) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto f = gguf::File::open(test::shared_path("models/stories260K.gguf"));
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);  // general.alignment is absent: default
    EXPECT_FALSE(f->has("llama.rope.freq_base"));
    EXPECT_DOUBLE_EQ(f->get_f64("llama.rope.freq_base", 10000.0), 10000.0);
    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens").size(), 512u);
    const auto* emb = f->find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->type, DType::F32);
    EXPECT_EQ(emb->dims.size(), 2u);
    EXPECT_EQ(emb->dim(1), 512u);
}

TEST(GgufReader, WrongTypeNamesKeyAndTypes) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto f = gguf::File::open(test::shared_path("models/stories260K.gguf"));
    try {
        f->get_u64("general.architecture", 0);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("general.architecture"), std::string::npos) << m;
        EXPECT_NE(m.find("expected an integer, found string"), std::string::npos) << m;
    }
}
