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
}
