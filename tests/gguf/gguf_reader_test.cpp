#include <cstdint>
#include <cstring>

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

// The two residencies hold the same bytes; the huge-page copy is read-only and reports its pages.
TEST(GgufReader, HugePageCopyHoldsTheFileBytes) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string path = test::shared_path("models/stories260K.gguf");
    auto mapped = gguf::File::open(path, Residency::Map);
    auto copied = gguf::File::open(path, Residency::HugePages);
    EXPECT_EQ(mapped->mapping().residency(), Residency::Map);
    EXPECT_EQ(copied->mapping().residency(), Residency::HugePages);
    ASSERT_EQ(mapped->file_size(), copied->file_size());
    EXPECT_NE(mapped->base(), copied->base());
    EXPECT_EQ(0, std::memcmp(mapped->base(), copied->base(), mapped->file_size()));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(copied->base()) % (2u << 20), 0u) << "2 MiB-aligned, so THP can back it";
    ASSERT_EQ(mapped->tensors().size(), copied->tensors().size());
    for (size_t i = 0; i < mapped->tensors().size(); ++i)
        EXPECT_EQ(mapped->tensors()[i].data - mapped->base(), copied->tensors()[i].data - copied->base());
    EXPECT_LE(copied->mapping().huge_page_bytes(), copied->file_size() + (2u << 20));
}

TEST(GgufReader, HugePageLoadOfAMissingFileNamesIt) {
    for (Residency r : {Residency::Map, Residency::HugePages}) {
        try {
            gguf::File::open("/nonexistent/model.gguf", r);
            FAIL() << "expected an error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf: cannot open"), std::string::npos) << e.what();
        }
        try {
            gguf::File::open("/tmp", r);
            FAIL() << "expected an error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
        }
    }
}
