// Every malformed-file case the reader must refuse, each with a message that names the file, the key or
// tensor, and what was expected versus found. Malformed files are made by byte-patching a small valid
// file from the writer, so each test changes exactly one thing.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"

using namespace flint;
using gguf::MetaValue;
using gguf::ValueType;

namespace {

constexpr const char* kName = "bad.gguf";

// A small valid file: a few keys of different kinds, then tensors of plain and block types.
// Names are distinct byte strings so a test can find and patch the field it wants.
std::vector<uint8_t> valid_file(bool with_alignment = false) {
    gguf::Writer w;
    if (with_alignment) w.set("general.alignment", MetaValue::u32(64));
    w.set_string("general.architecture", "llama");
    w.set_u32("key.u32", 7);
    w.set_string("key.str", "some string value");
    std::vector<float> fs = {1, 2, 3, 4};
    w.set("key.arr", MetaValue::f32_array(fs));
    w.set("key.strs", MetaValue::string_array({"one", "two"}));
    w.set("dupA", MetaValue::u8(1));
    w.set("dupB", MetaValue::u8(2));
    w.add_tensor("tensA.weight", DType::F32, {4, 2}, std::vector<uint8_t>(32, 1));
    w.add_tensor("tensB.weight", DType::Q8_0, {64, 2}, std::vector<uint8_t>(4 * 34, 2));
    w.add_tensor("tensC.weight", DType::F16, {8}, std::vector<uint8_t>(16, 3));
    return w.write_buffer();
}

size_t find_bytes(const std::vector<uint8_t>& buf, std::string_view needle) {
    auto it = std::search(buf.begin(), buf.end(), needle.begin(), needle.end());
    if (it == buf.end()) throw std::logic_error("test file lacks " + std::string(needle));
    return static_cast<size_t>(it - buf.begin());
}

template <typename T>
void poke(std::vector<uint8_t>& buf, size_t at, T v) {
    std::memcpy(buf.data() + at, &v, sizeof v);
}

// Offsets of the fields of a tensor info, found by the tensor's name (which is preceded by its length).
struct InfoAt {
    size_t n_dims, dims, type, offset;
};
InfoAt tensor_info_at(const std::vector<uint8_t>& buf, std::string_view name, uint32_t n_dims) {
    size_t p = find_bytes(buf, name) + name.size();
    return {p, p + 4, p + 4 + 8 * n_dims, p + 8 + 8 * n_dims};
}
// Offset of a key's value type field (the value follows it).
size_t value_type_at(const std::vector<uint8_t>& buf, std::string_view key) { return find_bytes(buf, key) + key.size(); }

// Parses `buf` and expects flint::Error whose message contains every one of `parts`.
void expect_refused(const std::vector<uint8_t>& buf, std::initializer_list<std::string_view> parts) {
    try {
        gguf::File::parse(buf.data(), buf.size(), kName);
        ADD_FAILURE() << "parse succeeded; expected an error containing \"" << *parts.begin() << "\"";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find(kName), std::string::npos) << "message does not name the file: " << m;
        for (std::string_view p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing \"" << p << "\" in: " << m;
    }
}

}  // namespace

TEST(GgufValidation, ValidFileParses) {
    auto buf = valid_file();
    auto f = gguf::File::parse(buf.data(), buf.size(), kName);
    EXPECT_EQ(f->tensors().size(), 3u);
}

TEST(GgufValidation, BadMagic) {
    auto buf = valid_file();
    buf[3] = 'X';
    expect_refused(buf, {"bad magic", "\"GGUX\"", "expected \"GGUF\""});
    expect_refused(std::vector<uint8_t>{'G', 'G'}, {"2 bytes", "too short"});
    // Random bytes are quoted as escapes, not written raw to a terminal or a JSON error.
    buf[0] = 0xd7, buf[1] = 0xfe, buf[2] = 0x18, buf[3] = 'a';
    expect_refused(buf, {"bad magic \"\\xd7\\xfe\\x18a\""});
}

TEST(GgufValidation, UnsupportedVersions) {
    for (uint32_t v : {1u, 4u, 0u, 1000u}) {
        auto buf = valid_file();
        poke<uint32_t>(buf, 4, v);
        expect_refused(buf, {"unsupported GGUF version " + std::to_string(v), "versions 2 and 3"});
    }
}

TEST(GgufValidation, BigEndian) {
    auto buf = valid_file();
    poke<uint32_t>(buf, 4, __builtin_bswap32(3));
    expect_refused(buf, {"big-endian", "version 3", "little-endian"});
}

TEST(GgufValidation, TruncatedHeader) {
    auto buf = valid_file();
    buf.resize(10);
    expect_refused(buf, {"truncated file", "tensor count", "needs 8 bytes", "only 2 remain"});
}

TEST(GgufValidation, TruncatedMidKeyValue) {
    auto buf = valid_file();
    buf.resize(value_type_at(buf, "key.str") + 4 + 8 + 5);  // 5 bytes into the string's 17
    expect_refused(buf, {"'key.str'", "string length 17", "5 bytes remain"});
    buf = valid_file();
    buf.resize(value_type_at(buf, "dupB") + 2);  // inside the value type field
    expect_refused(buf, {"truncated file", "value type of key 'dupB'", "needs 4 bytes", "only 2 remain"});
    buf.resize(40);  // too short for the key/values the header announces
    expect_refused(buf, {"metadata count 7", "cannot fit in the 16 bytes that remain"});
}

TEST(GgufValidation, TruncatedMidTensorInfo) {
    auto buf = valid_file();
    buf.resize(tensor_info_at(buf, "tensB.weight", 2).dims + 12);  // half of the second dimension
    expect_refused(buf, {"truncated file", "tensor 'tensB.weight' dimensions", "needs 8 bytes", "only 4 remain"});
}

TEST(GgufValidation, TruncatedData) {
    auto buf = valid_file();
    buf.resize(buf.size() - 40);  // tensC (16 bytes, padded to 32) and the end of tensB are gone
    expect_refused(buf, {"tensor 'tensC.weight'", "data [192, 208)", "outside the data section of 184 bytes",
                         "truncated"});
}

TEST(GgufValidation, StringLengthPastEnd) {
    auto buf = valid_file();
    poke<uint64_t>(buf, value_type_at(buf, "key.str") + 4, 1ull << 40);
    expect_refused(buf, {"value of key 'key.str'", "string length 1099511627776", "runs past the end"});
    buf = valid_file();
    size_t first = find_bytes(buf, "one") - 8;  // first element of key.strs
    poke<uint64_t>(buf, first, 1ull << 62);
    expect_refused(buf, {"key 'key.strs'", "string length 4611686018427387904", "runs past the end"});
}

TEST(GgufValidation, ArrayLengthPastEnd) {
    auto buf = valid_file();
    poke<uint64_t>(buf, value_type_at(buf, "key.arr") + 8, 1ull << 61);  // after value type + element type
    expect_refused(buf, {"key 'key.arr'", "array of 2305843009213693952 f32", "runs past the end", "bytes remain"});
    buf = valid_file();
    poke<uint64_t>(buf, value_type_at(buf, "key.strs") + 8, 1000000);
    expect_refused(buf, {"key 'key.strs'", "array of 1000000 string", "runs past the end"});
}

TEST(GgufValidation, TensorDataOutsideFile) {
    auto buf = valid_file();
    poke<uint64_t>(buf, tensor_info_at(buf, "tensC.weight", 1).offset, 1ull << 40);
    expect_refused(buf, {"tensor 'tensC.weight'", "data [1099511627776, 1099511627792)", "outside the data section"});
}

TEST(GgufValidation, DimensionOverflow) {
    auto buf = valid_file();
    auto at = tensor_info_at(buf, "tensA.weight", 2);
    poke<uint64_t>(buf, at.dims, 1ull << 32);
    poke<uint64_t>(buf, at.dims + 8, 1ull << 32);
    expect_refused(buf, {"tensor 'tensA.weight'", "overflows 63 bits"});
    poke<uint64_t>(buf, at.dims, ~0ull);
    expect_refused(buf, {"tensor 'tensA.weight'", "overflows"});
}

TEST(GgufValidation, ByteSizeOverflow) {
    // 2^62 f64 elements fit in 63 bits, but their byte count (2^65) does not fit in 64: it must not wrap.
    auto buf = valid_file();
    auto at = tensor_info_at(buf, "tensC.weight", 1);
    poke<uint64_t>(buf, at.dims, 1ull << 62);
    poke<uint32_t>(buf, at.type, static_cast<uint32_t>(DType::F64));
    expect_refused(buf, {"tensor 'tensC.weight'", "4611686018427387904 elements of f64", "overflow"});
}

TEST(GgufValidation, TooManyDims) {
    auto buf = valid_file();
    poke<uint32_t>(buf, tensor_info_at(buf, "tensA.weight", 2).n_dims, 5);
    expect_refused(buf, {"tensor 'tensA.weight'", "5 dimensions", "expected at most 4"});
}

TEST(GgufValidation, ZeroDim) {
    auto buf = valid_file();
    poke<uint64_t>(buf, tensor_info_at(buf, "tensA.weight", 2).dims + 8, 0);
    expect_refused(buf, {"tensor 'tensA.weight'", "dimension 1 is 0", "expected >= 1"});
}

TEST(GgufValidation, UnknownTensorType) {
    auto buf = valid_file();
    poke<uint32_t>(buf, tensor_info_at(buf, "tensA.weight", 2).type, 99);
    expect_refused(buf, {"tensor 'tensA.weight'", "unknown tensor type 99", "expected one of 0 f32, 1 f16"});
    // flint's in-memory layouts (tensor/repack.h) have ids too, but no file may claim one.
    buf = valid_file();
    poke<uint32_t>(buf, tensor_info_at(buf, "tensA.weight", 2).type, uint32_t(DType::Q8_0_R16));
    expect_refused(buf, {"tensor 'tensA.weight'", "unknown tensor type 100"});
}

TEST(GgufValidation, UnknownValueType) {
    auto buf = valid_file();
    poke<uint32_t>(buf, value_type_at(buf, "key.u32"), 13);
    expect_refused(buf, {"key 'key.u32'", "unknown value type 13", "expected 0..12"});
    buf = valid_file();
    poke<uint32_t>(buf, value_type_at(buf, "key.arr") + 4, 77);  // the array's element type
    expect_refused(buf, {"key 'key.arr'", "unknown array element type 77", "expected 0..12"});
}

TEST(GgufValidation, BadBoolValue) {
    gguf::Writer w;
    w.set_bool("flag", true);
    auto buf = w.write_buffer();
    buf[value_type_at(buf, "flag") + 4] = 2;
    expect_refused(buf, {"key 'flag'", "bool value 2", "expected 0 or 1"});
}

TEST(GgufValidation, ArraysNestedTooDeep) {
    MetaValue v = MetaValue::string_array({"leaf"});
    for (int k = 0; k < 9; ++k) v = MetaValue::array_array({v});
    gguf::Writer w;
    w.set("deep", v);
    auto buf = w.write_buffer();
    expect_refused(buf, {"key 'deep'", "nested deeper than 8"});
}

TEST(GgufValidation, MisalignedOffset) {
    auto buf = valid_file();
    poke<uint64_t>(buf, tensor_info_at(buf, "tensB.weight", 2).offset, 36);
    expect_refused(buf, {"tensor 'tensB.weight'", "data offset 36", "multiple of the alignment 32"});
    buf = valid_file(/*with_alignment=*/true);  // 32-aligned is not enough when the file says 64
    poke<uint64_t>(buf, tensor_info_at(buf, "tensB.weight", 2).offset, 96);
    expect_refused(buf, {"tensor 'tensB.weight'", "data offset 96", "multiple of the alignment 64"});
}

TEST(GgufValidation, BadGeneralAlignment) {
    for (uint32_t a : {0u, 48u, 1u << 21}) {
        auto buf = valid_file(/*with_alignment=*/true);
        poke<uint32_t>(buf, value_type_at(buf, "general.alignment") + 4, a);
        expect_refused(buf, {"general.alignment = " + std::to_string(a), "expected a power of two"});
    }
    auto buf = valid_file(/*with_alignment=*/true);
    poke<uint32_t>(buf, value_type_at(buf, "general.alignment"), static_cast<uint32_t>(ValueType::F32));
    expect_refused(buf, {"key 'general.alignment'", "expected an integer, found f32"});
}

TEST(GgufValidation, DuplicateKey) {
    auto buf = valid_file();
    buf[find_bytes(buf, "dupB") + 3] = 'A';
    expect_refused(buf, {"duplicate metadata key 'dupA'"});
}

TEST(GgufValidation, DuplicateTensor) {
    auto buf = valid_file();
    buf[find_bytes(buf, "tensC.weight") + 4] = 'A';  // tensC (1-D) becomes a second tensA
    expect_refused(buf, {"duplicate tensor name 'tensA.weight'"});
}

TEST(GgufValidation, RowNotMultipleOfBlockSize) {
    auto buf = valid_file();
    poke<uint64_t>(buf, tensor_info_at(buf, "tensB.weight", 2).dims, 48);
    expect_refused(buf, {"tensor 'tensB.weight'", "row length 48", "multiple of the q8_0 block size 32"});
}

TEST(GgufValidation, WrongTypeAccessorsNameKeyExpectedAndFound) {
    auto buf = valid_file();
    auto f = gguf::File::parse(buf.data(), buf.size(), kName);
    auto expect_error = [](auto fn, std::initializer_list<std::string_view> parts) {
        try {
            fn();
            ADD_FAILURE() << "expected an error containing " << *parts.begin();
        } catch (const Error& e) {
            std::string m = e.what();
            EXPECT_NE(m.find(kName), std::string::npos) << m;
            for (auto p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing \"" << p << "\" in: " << m;
        }
    };
    expect_error([&] { f->get_string("key.u32"); }, {"key 'key.u32'", "expected string, found u32"});
    expect_error([&] { f->get_u64("key.str", 0); }, {"key 'key.str'", "expected an integer, found string"});
    expect_error([&] { f->get_i64("key.arr", 0); }, {"key 'key.arr'", "expected an integer, found array of f32"});
    expect_error([&] { f->get_f64("key.strs", 0); }, {"key 'key.strs'", "expected a number, found array of string"});
    expect_error([&] { f->get_bool("key.u32", false); }, {"key 'key.u32'", "expected bool, found u32"});
    expect_error([&] { f->get_strings("key.arr"); }, {"key 'key.arr'", "expected array of string, found array of f32"});
    expect_error([&] { f->get_f32_array("key.strs"); }, {"key 'key.strs'", "expected array of f32, found array of string"});
    expect_error([&] { f->get_int_array("key.str"); }, {"key 'key.str'", "expected array of integers, found string"});
    expect_error([&] { f->get_opt_u64("key.str"); }, {"key 'key.str'", "expected an integer"});
    // Missing keys give the default, not an error.
    EXPECT_EQ(f->get_u64("absent", 42), 42u);
    EXPECT_TRUE(f->get_strings("absent").empty());
}

TEST(GgufValidation, NegativeValueForUnsignedAccessor) {
    gguf::Writer w;
    w.set("neg", MetaValue::i32(-3));
    auto buf = w.write_buffer();
    auto f = gguf::File::parse(buf.data(), buf.size(), kName);
    try {
        f->get_u64("neg", 0);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("key 'neg': value -3 is negative (expected >= 0)"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(f->get_i64("neg", 0), -3);
}

// util/error.h's quoted(), which names a file's strings in these messages: UTF-8 characters kept whole,
// every other byte escaped, the cut never inside a character.
TEST(GgufValidation, QuotedKeepsUtf8AndEscapesTheRest) {
    EXPECT_EQ(quoted("héllo ✓"), "\"héllo ✓\"");
    EXPECT_EQ(quoted("a\"b\\c\nd\x01\x7f"), "\"a\\\"b\\\\c\\nd\\x01\\x7f\"");
    EXPECT_EQ(quoted("\xff\xc3(\xed\xa0\x80"), "\"\\xff\\xc3(\\xed\\xa0\\x80\"");  // stray, truncated, surrogate
    EXPECT_EQ(quoted("abcd", 2), "\"ab…\"");
    EXPECT_EQ(quoted("a✓b", 2), "\"a✓…\"");  // the three-byte character starts before the cut: kept whole
    EXPECT_EQ(quoted("ab", 2), "\"ab\"");
}
