#include <gtest/gtest.h>

#include <cstring>

#include "kv/kv_cache.h"
#include "util/error.h"

using namespace flint;

TEST(KVCache, AllocatesUntilExhaustedAndReusesReleasedBlocks) {
    KVCache kv({.n_layers = 2, .kv_dim = 8, .block_size = 4, .type = DType::F32, .n_blocks = 3});
    int32_t a = kv.alloc(), b = kv.alloc(), c = kv.alloc();
    EXPECT_NE(a, b);
    EXPECT_NE(b, c);
    EXPECT_EQ(kv.alloc(), -1);
    EXPECT_EQ(kv.free_blocks(), 0);
    kv.retain(b);
    kv.release(b);
    EXPECT_EQ(kv.alloc(), -1);  // still referenced once
    kv.release(b);
    EXPECT_EQ(kv.alloc(), b);
    kv.release(a);
    EXPECT_THROW(kv.release(a), Error) << "a second release of a freed block";
}

TEST(KVCache, LayersAndBlocksDoNotOverlap) {
    KVCache kv({.n_layers = 3, .kv_dim = 4, .block_size = 2, .type = DType::F16, .n_blocks = 2});
    EXPECT_EQ(kv.row_bytes(), 8u);
    EXPECT_EQ(kv.block_bytes(), 3u * 2 * 2 * 8);
    EXPECT_EQ(kv.v(0, 0) - kv.k(0, 0), 16);
    EXPECT_EQ(kv.k(0, 1) - kv.k(0, 0), 32);
    EXPECT_EQ(kv.k(1, 0) - kv.k(0, 0), static_cast<ptrdiff_t>(kv.block_bytes()));
    std::memset(kv.k(1, 2), 0x7f, kv.row_bytes());
    kv.copy_block(1, 0, 1);
    EXPECT_EQ(kv.k(0, 2)[0], 0x7f);
}

TEST(KVCache, RejectsUnsupportedType) {
    EXPECT_THROW(KVCache({.n_layers = 1, .kv_dim = 4, .block_size = 2, .type = DType::Q4_0, .n_blocks = 2}), Error);
    // Q8_0 quantizes rows in blocks of 32.
    EXPECT_THROW(KVCache({.n_layers = 1, .kv_dim = 48, .block_size = 2, .type = DType::Q8_0, .n_blocks = 2}), Error);
}

TEST(KVCache, Q8_0KeepsLevelsAndScalesOfEveryBlockApart) {
    // 64 dims: two 32-element blocks per row, 34 bytes each; keys' levels [64][16] then scales [2][16].
    KVCache kv({.n_layers = 2, .kv_dim = 64, .block_size = 16, .type = DType::Q8_0, .n_blocks = 3});
    EXPECT_EQ(kv.row_bytes(), 68u);
    EXPECT_EQ(KVCache::bytes_per_token(2, 64, DType::Q8_0), 2u * 2 * 68);
    EXPECT_EQ(KVCache::bytes_per_token(24, 128, DType::Q8_0) * 2, KVCache::bytes_per_token(24, 128, DType::F16) * 17 / 16)
        << "17/32 of f16's bytes";
    EXPECT_EQ(kv.v(0, 0) - kv.k(0, 0), 16 * 68);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(kv.k_scales(0, 0)) - kv.k(0, 0), 64 * 16);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(kv.k_scales(0, 0) + 2 * 16), kv.v(0, 0)) << "the scales end the keys' half";
    std::memset(kv.k(2, 1), 0x11, 16 * 68);
    std::memset(kv.v(2, 1), 0x22, 16 * 68);
    kv.copy_block(2, 0, 3);
    EXPECT_EQ(kv.k_scales(0, 1)[31], 0x1111) << "copy-on-write copies the keys' scales too";
    EXPECT_EQ(kv.v(0, 1)[3 * 68 - 1], 0x22);
    EXPECT_EQ(kv.v(0, 1)[3 * 68], 0) << "values past n_slots are not copied";
}
