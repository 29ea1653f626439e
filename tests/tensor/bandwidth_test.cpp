// tensor/bandwidth.h: the cache-size helpers `flint bench --paired` uses to say when a read is partly a
// cache read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tensor/bandwidth.h"

using namespace flint;

TEST(CacheSize, ParsesSysfsSizes) {
    EXPECT_EQ(parse_cache_size("32768K\n"), size_t(32) << 20);
    EXPECT_EQ(parse_cache_size("1024K"), size_t(1) << 20);
    EXPECT_EQ(parse_cache_size("2M"), size_t(2) << 20);
    EXPECT_EQ(parse_cache_size("512"), 512u);
    EXPECT_EQ(parse_cache_size(""), 0u);
    EXPECT_EQ(parse_cache_size("K"), 0u);
    EXPECT_EQ(parse_cache_size("12X"), 0u);
    EXPECT_EQ(parse_cache_size("12K extra"), 0u);
}

// Where Linux describes CPU 0's caches, the largest level is found and is at least as large as level 1.
TEST(CacheSize, LastLevelFromSysfs) {
    const std::filesystem::path l1 = "/sys/devices/system/cpu/cpu0/cache/index0/size";
    if (!std::filesystem::exists(l1)) GTEST_SKIP() << "no " << l1;
    std::string text;
    std::ifstream(l1) >> text;
    const size_t level1 = parse_cache_size(text.c_str());
    ASSERT_GT(level1, 0u) << "unreadable or unparsable: " << l1 << " (\"" << text << "\")";
    EXPECT_GE(last_level_cache_bytes(), level1);
}
