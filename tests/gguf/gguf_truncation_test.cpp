// Every prefix of a real file must be refused with flint::Error — never a crash, never a parse that
// points past the end. Each prefix is copied into its own heap buffer so AddressSanitizer (CI runs this
// under ASan) catches any read beyond the prefix, which a slice of the full mapping would hide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "gguf/gguf.h"
#include "test_paths.h"
#include "util/error.h"
#include "util/mapped_file.h"

using namespace flint;

namespace {

// Parses the first `n` bytes of `full`; returns the error message, or "" when it parsed.
std::string parse_prefix(const uint8_t* full, size_t n) {
    std::unique_ptr<uint8_t[]> copy(new uint8_t[std::max<size_t>(n, 1)]);
    std::memcpy(copy.get(), full, n);
    try {
        gguf::File::parse(copy.get(), n, "prefix");
        return "";
    } catch (const Error& e) {
        return e.what();
    }
}

// The end of the furthest tensor's data: a prefix at least this long is a complete file.
size_t data_end(const gguf::File& f) {
    size_t end = f.data_offset();
    for (const auto& t : f.tensors()) end = std::max<size_t>(end, f.data_offset() + t.offset + t.n_bytes);
    return end;
}

}  // namespace

TEST(GgufTruncation, EveryPrefixOfStories260KIsRefused) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    MappedFile map(test::shared_path("models/stories260K.gguf"));
    auto whole = gguf::File::parse(map.data(), map.size(), "whole");
    const size_t header_end = whole->data_offset();
    const size_t end = data_end(*whole);
    ASSERT_LE(end, map.size());

    // Every length through the header and metadata, where the parser's cursor walks.
    for (size_t n = 0; n < header_end; ++n) {
        std::string m = parse_prefix(map.data(), n);
        ASSERT_FALSE(m.empty()) << "prefix of " << n << " bytes parsed";
        ASSERT_NE(m.find("prefix"), std::string::npos) << m;
    }
    // The data region: a sample (every 4093rd length, a prime so it lands at varied places in tensors),
    // plus the last 64 lengths, where only the final tensor is short.
    std::vector<size_t> lengths;
    for (size_t n = header_end; n < end; n += 4093) lengths.push_back(n);
    for (size_t n = end > 64 ? end - 64 : 0; n < end; ++n) lengths.push_back(n);
    for (size_t n : lengths) {
        std::string m = parse_prefix(map.data(), n);
        ASSERT_FALSE(m.empty()) << "prefix of " << n << " bytes parsed";
        EXPECT_NE(m.find("outside the data section"), std::string::npos) << m;
    }
    EXPECT_TRUE(parse_prefix(map.data(), map.size()).empty());
}
