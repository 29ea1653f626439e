// The prefix cache on its own: what acquire finds, what insert keeps, which entries evict takes first, and
// when cached_blocks must be recounted (version).
#include <gtest/gtest.h>
#include <pthread.h>

#include <numeric>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"

using namespace flint;

namespace {

constexpr int kBs = 4;

std::vector<int32_t> seq(int32_t first, int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), first);
    return t;
}

// A finished sequence of `tokens` handing fresh blocks (as if it had computed them) to the cache.
void finish(KVCache& kv, PrefixCache& cache, const std::vector<int32_t>& tokens) {
    std::vector<int32_t> blocks;
    for (size_t i = 0; i < tokens.size(); i += size_t(kv.block_size())) blocks.push_back(kv.alloc());
    cache.insert(tokens, static_cast<int>(tokens.size()), blocks);
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST(PrefixCache, AcquireTakesTheLongestCachedPrefixAndSharesItsBlocks) {
    KVCache kv({.n_layers = 1, .kv_dim = 4, .block_size = kBs, .type = DType::F32, .n_blocks = 16});
    PrefixCache cache(kv);
    const auto a = seq(100, 12);  // three full blocks
    finish(kv, cache, a);
    EXPECT_EQ(cache.nodes(), 3);
    EXPECT_EQ(cache.cached_blocks(), 3);

    PrefixCache::Match m = cache.acquire(concat(seq(100, 8), seq(900, 4)), 12);
    EXPECT_EQ(m.n_tokens, 8);
    ASSERT_EQ(m.blocks.size(), 2u);
    EXPECT_EQ(kv.ref_count(m.blocks[0]), 2) << "shared with the cache, not copied";
    EXPECT_EQ(cache.cached_blocks(), 1) << "blocks a sequence holds are not evictable";
    cache.insert(concat(seq(100, 8), seq(900, 4)), 8, m.blocks);  // hands back only what it took
    EXPECT_EQ(cache.cached_blocks(), 3);
    EXPECT_EQ(kv.used_blocks(), 3);
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedLeavesFirstAndNeverAParentBeforeItsChildren) {
    KVCache kv({.n_layers = 1, .kv_dim = 4, .block_size = kBs, .type = DType::F32, .n_blocks = 32});
    PrefixCache cache(kv);
    // How much of `tokens` is cached (the blocks acquire took are given straight back).
    auto cached_len = [&](const std::vector<int32_t>& tokens) {
        PrefixCache::Match m = cache.acquire(tokens, static_cast<int>(tokens.size()));
        for (int32_t b : m.blocks) kv.release(b);
        return m.n_tokens;
    };
    const auto shared = seq(0, 8);
    const auto a = concat(shared, seq(100, 8));  // the shared prefix (2 blocks) + 2 blocks of its own
    const auto b = concat(shared, seq(200, 8));
    const auto c = seq(300, 8);                  // unrelated, 2 blocks
    finish(kv, cache, a);
    finish(kv, cache, b);
    finish(kv, cache, c);
    EXPECT_EQ(cache.nodes(), 8);

    // A turn continues a: b and c are now older than every block of a, the shared prefix included (it was
    // used with a, after b's last use).
    PrefixCache::Match m = cache.acquire(a, static_cast<int>(a.size()));
    EXPECT_EQ(m.n_tokens, 16);
    cache.insert(a, m.n_tokens, m.blocks);

    // The two oldest leaves are b's and c's last blocks.
    EXPECT_EQ(cache.evict(2), 2);
    EXPECT_EQ(cached_len(a), 16);
    EXPECT_EQ(cached_len(b), 12);
    EXPECT_EQ(cached_len(c), 4);

    // Everything: the six entries left go leaves first (erasing a parent first would orphan its children,
    // which the destructor's release of every node would then miss).
    const uint64_t v = cache.version();
    EXPECT_EQ(cache.evict(100), 6);
    EXPECT_NE(cache.version(), v);
    EXPECT_EQ(cache.nodes(), 0);
    EXPECT_EQ(kv.used_blocks(), 0);
}

TEST(PrefixCache, VersionMarksEveryChangeToWhatIsCached) {
    KVCache kv({.n_layers = 1, .kv_dim = 4, .block_size = kBs, .type = DType::F32, .n_blocks = 8});
    PrefixCache cache(kv);
    uint64_t v = cache.version();
    auto changed = [&] {
        const bool c = cache.version() != v;
        v = cache.version();
        return c;
    };
    const auto a = seq(0, 8);
    finish(kv, cache, a);
    EXPECT_TRUE(changed()) << "insert";
    PrefixCache::Match m = cache.acquire(a, 8);
    EXPECT_TRUE(changed()) << "acquire (its blocks are no longer evictable)";
    cache.insert(a, m.n_tokens, m.blocks);
    EXPECT_TRUE(changed()) << "insert back";
    EXPECT_EQ(cache.evict(1), 1);
    EXPECT_TRUE(changed()) << "evict";
    EXPECT_EQ(cache.evict(0), 0);
    EXPECT_FALSE(changed()) << "nothing evicted";
    cache.clear();
    EXPECT_TRUE(changed()) << "clear";
    EXPECT_EQ(cache.cached_blocks(), 0);
}

TEST(PrefixCache, AConversationThousandsOfBlocksDeepRoundTrips) {
    // 131,072 tokens in blocks of 16: acquire and insert walk the path once each (the cost is measured in
    // kernels_bench BM_PrefixCache, not here); this checks the deep path keeps every block.
    const int n = 131072;
    KVCache kv({.n_layers = 1, .kv_dim = 4, .block_size = 16, .type = DType::F32, .n_blocks = n / 16 + 8});
    PrefixCache cache(kv);
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = (i * 7919) % 50000;
    finish(kv, cache, tokens);
    PrefixCache::Match m = cache.acquire(tokens, n - 1);  // as admission asks: all but the last token
    EXPECT_EQ(m.n_tokens, n - 1);
    ASSERT_EQ(m.blocks.size(), size_t(n / 16));
    EXPECT_EQ(kv.ref_count(m.blocks.back()), 1) << "the last, partly matching block is a copy of its own";
    EXPECT_EQ(cache.cached_blocks(), 1) << "only the block the copy was made from is the cache's alone";
    for (int32_t b : m.blocks) kv.release(b);
    EXPECT_EQ(cache.cached_blocks(), n / 16);
}

TEST(PrefixCache, DestroyingADeepTrieDoesNotRecurseDownIt) {
    // 65,536 nodes deep (a 1M-token conversation in blocks of 16), built and destroyed on a thread with a
    // 256 KiB stack: a destructor recursing down the path would overflow it (a crash, not a failed check).
    struct Result {
        int64_t nodes = 0, used_after = -1;
    } result;
    auto body = [](void* arg) -> void* {
        auto& r = *static_cast<Result*>(arg);
        const int depth = 65536, n = depth * kBs;
        KVCache kv({.n_layers = 1, .kv_dim = 4, .block_size = kBs, .type = DType::F32, .n_blocks = depth + 8});
        {
            PrefixCache cache(kv);
            finish(kv, cache, seq(0, n));
            r.nodes = cache.nodes();
        }
        r.used_after = kv.used_blocks();
        return nullptr;
    };
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t thread;
    ASSERT_EQ(0, pthread_create(&thread, &attr, body, &result));
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
    EXPECT_EQ(result.nodes, 65536);
    EXPECT_EQ(result.used_after, 0) << "every block released";
}
