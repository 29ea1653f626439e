// Paths the tests share: ../shared (read-only reference data) and the built flint binary.
#pragma once
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace flint::test {

inline std::string shared_path(const std::string& rel) { return std::string(FLINT_SHARED_DIR) + "/" + rel; }
inline bool shared_exists(const std::string& rel) { return std::filesystem::exists(shared_path(rel)); }

}  // namespace flint::test

// Skips the current test with a clear message when a ../shared file is absent.
#define FLINT_REQUIRE_SHARED(rel)                                                             \
    do {                                                                                      \
        if (!::flint::test::shared_exists(rel))                                               \
            GTEST_SKIP() << "../shared/" << (rel) << " is absent; reference data not available"; \
    } while (0)
