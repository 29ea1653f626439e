// The writer round-trips through the reader: every value type, nested arrays, tensors of several types
// and sources (owned, borrowed, streamed), alignment padding, and a real file copied key for key.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test_paths.h"
#include "util/error.h"

using namespace flint;
using gguf::MetaValue;
using gguf::ValueType;

namespace {

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start) {
    std::vector<uint8_t> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
}

// A writer with one key of every scalar type, arrays of each element kind and two levels of nesting.
gguf::Writer every_value_type() {
    gguf::Writer w;
    w.set("u8", MetaValue::u8(250));
    w.set("i8", MetaValue::i8(-100));
    w.set("u16", MetaValue::u16(65000));
    w.set("i16", MetaValue::i16(-32000));
    w.set("u32", MetaValue::u32(4000000000u));
    w.set("i32", MetaValue::i32(-2000000000));
    w.set("u64", MetaValue::u64(18000000000000000000ull));
    w.set("i64", MetaValue::i64(-9000000000000000000ll));
    w.set("f32", MetaValue::f32(1.5e-6f));
    w.set("f64", MetaValue::f64(-2.25e300));
    w.set("bool.true", MetaValue::boolean(true));
    w.set("bool.false", MetaValue::boolean(false));
    w.set("string", MetaValue::string("héllo\nworld"));
    w.set("string.empty", MetaValue::string(""));
    std::vector<float> fs = {1.0f, -2.5f, 3.25f};
    w.set("arr.f32", MetaValue::f32_array(fs));
    std::vector<int32_t> is = {-1, 0, 7, 151643};
    w.set("arr.i32", MetaValue::i32_array(is));
    uint8_t bools[] = {1, 0, 1};
    w.set("arr.bool", MetaValue::numeric_array(ValueType::BOOL, bools, 3));
    int64_t i64s[] = {-5, 1ll << 40};
    w.set("arr.i64", MetaValue::numeric_array(ValueType::I64, i64s, 2));
    w.set("arr.str", MetaValue::string_array({"a", "", "Ġthe", "<|im_end|>"}));
    w.set("arr.empty", MetaValue::string_array({}));
    uint16_t u16s[] = {1, 2};
    w.set("arr.nested", MetaValue::array_array({MetaValue::numeric_array(ValueType::U16, u16s, 2),
                                                MetaValue::string_array({"x", "yz"}),
                                                MetaValue::array_array({MetaValue::f32_array(fs)})}));
    return w;
}

void expect_same_value(const gguf::Value& a, const gguf::Value& b, const std::string& key) {
    ASSERT_EQ(a.type, b.type) << key;
    switch (a.type) {
        case ValueType::STRING: EXPECT_EQ(a.s, b.s) << key; break;
        case ValueType::F32: case ValueType::F64: EXPECT_EQ(a.f, b.f) << key; break;
        case ValueType::ARRAY:
            ASSERT_EQ(a.elem, b.elem) << key;
            ASSERT_EQ(a.count, b.count) << key;
            if (a.elem == ValueType::STRING) EXPECT_EQ(a.strings, b.strings) << key;
            else if (a.elem == ValueType::ARRAY)
                for (size_t k = 0; k < a.arrays.size(); ++k) expect_same_value(a.arrays[k], b.arrays[k], key);
            else EXPECT_EQ(0, std::memcmp(a.raw, b.raw, a.count * gguf::value_type_size(a.elem))) << key;
            break;
        default: EXPECT_EQ(a.u, b.u) << key; EXPECT_EQ(a.i, b.i) << key; break;
    }
}

void expect_same_file(const gguf::File& a, const gguf::File& b) {
    ASSERT_EQ(a.metadata().size(), b.metadata().size());
    for (size_t k = 0; k < a.metadata().size(); ++k) {
        EXPECT_EQ(a.metadata()[k].first, b.metadata()[k].first);
        expect_same_value(a.metadata()[k].second, b.metadata()[k].second, a.metadata()[k].first);
    }
    ASSERT_EQ(a.tensors().size(), b.tensors().size());
    for (size_t k = 0; k < a.tensors().size(); ++k) {
        const auto& x = a.tensors()[k];
        const auto& y = b.tensors()[k];
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.type, y.type) << x.name;
        EXPECT_EQ(x.dims, y.dims) << x.name;
        ASSERT_EQ(x.n_bytes, y.n_bytes) << x.name;
        EXPECT_EQ(0, std::memcmp(x.data, y.data, x.n_bytes)) << x.name;
    }
}

}  // namespace

TEST(GgufWriter, RoundTripsEveryValueTypeAndTensorSource) {
    gguf::Writer w = every_value_type();
    auto owned = iota_bytes(4 * 3 * 5, 1);
    w.add_tensor("owned.f32", DType::F32, {3, 5}, owned);
    auto borrowed = iota_bytes(34 * 2 * 3, 7);
    w.add_tensor_view("view.q8_0", DType::Q8_0, {64, 3}, borrowed.data(), borrowed.size());
    auto streamed = iota_bytes(144 * 2, 3);
    w.add_tensor_stream("stream.q4_k", DType::Q4_K, {512}, [&](gguf::Writer::Sink& s) {
        s.write(streamed.data(), 100);  // in uneven pieces: producers may stream row by row
        s.write(streamed.data() + 100, streamed.size() - 100);
    });
    w.add_tensor("f16.4d", DType::F16, {2, 1, 3, 2}, iota_bytes(2 * 12, 9));
    auto buf = w.write_buffer();

    auto f = gguf::File::parse(buf.data(), buf.size(), "roundtrip");
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->metadata().size(), w.metadata().size());
    EXPECT_EQ(f->get_u64("u8", 0), 250u);
    EXPECT_EQ(f->get_i64("i8", 0), -100);
    EXPECT_EQ(f->get_u64("u16", 0), 65000u);
    EXPECT_EQ(f->get_i64("i16", 0), -32000);
    EXPECT_EQ(f->get_u64("u32", 0), 4000000000u);
    EXPECT_EQ(f->get_i64("i32", 0), -2000000000);
    EXPECT_EQ(f->get_u64("u64", 0), 18000000000000000000ull);
    EXPECT_EQ(f->get_i64("i64", 0), -9000000000000000000ll);
    EXPECT_EQ(f->find("f32")->type, ValueType::F32);
    EXPECT_FLOAT_EQ(static_cast<float>(f->get_f64("f32", 0)), 1.5e-6f);
    EXPECT_EQ(f->get_f64("f64", 0), -2.25e300);
    EXPECT_TRUE(f->get_bool("bool.true", false));
    EXPECT_FALSE(f->get_bool("bool.false", true));
    EXPECT_EQ(f->get_string("string"), "héllo\nworld");
    EXPECT_EQ(f->get_string("string.empty", "x"), "");
    EXPECT_EQ(f->get_f32_array("arr.f32"), (std::vector<float>{1.0f, -2.5f, 3.25f}));
    EXPECT_EQ(f->get_int_array("arr.i32"), (std::vector<int64_t>{-1, 0, 7, 151643}));
    EXPECT_EQ(f->get_int_array("arr.bool"), (std::vector<int64_t>{1, 0, 1}));
    EXPECT_EQ(f->get_int_array("arr.i64"), (std::vector<int64_t>{-5, 1ll << 40}));
    EXPECT_EQ(f->get_strings("arr.str"), (std::vector<std::string_view>{"a", "", "Ġthe", "<|im_end|>"}));
    EXPECT_TRUE(f->get_strings("arr.empty").empty());
    const gguf::Value* nested = f->find("arr.nested");
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ(nested->elem, ValueType::ARRAY);
    ASSERT_EQ(nested->arrays.size(), 3u);
    EXPECT_EQ(nested->arrays[0].elem, ValueType::U16);
    EXPECT_EQ(nested->arrays[1].strings, (std::vector<std::string_view>{"x", "yz"}));
    ASSERT_EQ(nested->arrays[2].arrays.size(), 1u);
    EXPECT_EQ(nested->arrays[2].arrays[0].count, 3u);

    // Metadata keeps insertion order.
    for (size_t k = 0; k < w.metadata().size(); ++k) EXPECT_EQ(f->metadata()[k].first, w.metadata()[k].first);

    ASSERT_EQ(f->tensors().size(), 4u);
    struct Expect { const char* name; DType type; std::vector<uint64_t> dims; const std::vector<uint8_t>* bytes; };
    auto f16 = iota_bytes(2 * 12, 9);
    Expect expect[] = {{"owned.f32", DType::F32, {3, 5}, &owned},
                       {"view.q8_0", DType::Q8_0, {64, 3}, &borrowed},
                       {"stream.q4_k", DType::Q4_K, {512}, &streamed},
                       {"f16.4d", DType::F16, {2, 1, 3, 2}, &f16}};
    for (size_t k = 0; k < 4; ++k) {
        const auto& t = f->tensors()[k];
        EXPECT_EQ(t.name, expect[k].name);
        EXPECT_EQ(t.type, expect[k].type);
        EXPECT_EQ(t.dims, expect[k].dims);
        ASSERT_EQ(t.n_bytes, expect[k].bytes->size()) << t.name;
        EXPECT_EQ(0, std::memcmp(t.data, expect[k].bytes->data(), t.n_bytes)) << t.name;
        EXPECT_EQ(t.offset % 32, 0u) << t.name;
        EXPECT_EQ((t.data - f->base()) % 32, 0) << t.name;
    }
}

TEST(GgufWriter, RespectsGeneralAlignment) {
    gguf::Writer w;
    w.set("general.alignment", MetaValue::u32(256));
    w.add_tensor("a", DType::F32, {3}, iota_bytes(12, 0));
    w.add_tensor("b", DType::I8, {5}, iota_bytes(5, 0));
    w.add_tensor("c", DType::F32, {1}, iota_bytes(4, 0));
    auto buf = w.write_buffer();
    auto f = gguf::File::parse(buf.data(), buf.size(), "aligned");
    EXPECT_EQ(f->alignment(), 256u);
    EXPECT_EQ(f->data_offset() % 256, 0u);
    EXPECT_EQ(f->tensors()[1].offset, 256u);
    EXPECT_EQ(f->tensors()[2].offset, 512u);
    EXPECT_EQ(buf.size(), f->data_offset() + 768);  // the last tensor is padded too, like llama.cpp's files

    // Any integer type is accepted (as by the reader); non-powers of two and non-integers are refused.
    w.set("general.alignment", MetaValue::u64(64));
    buf = w.write_buffer();
    EXPECT_EQ(gguf::File::parse(buf.data(), buf.size(), "u64")->alignment(), 64u);
    for (MetaValue bad : {MetaValue::u32(48), MetaValue::i32(-32), MetaValue::string("32")}) {
        w.set("general.alignment", bad);
        EXPECT_THROW(w.write_buffer(), Error);
    }
}

TEST(GgufWriter, SetReplacesKeepingPositionAndRemoveDrops) {
    gguf::Writer w;
    w.set_u32("a", 1);
    w.set_u32("b", 2);
    w.set_string("a", "now a string");
    EXPECT_TRUE(w.remove("b"));
    EXPECT_FALSE(w.remove("b"));
    auto buf = w.write_buffer();
    auto f = gguf::File::parse(buf.data(), buf.size(), "set");
    ASSERT_EQ(f->metadata().size(), 1u);
    EXPECT_EQ(f->get_string("a"), "now a string");
}

TEST(GgufWriter, RefusesBadTensorsWithTheirNames) {
    gguf::Writer w;
    w.add_tensor("x", DType::F32, {2}, iota_bytes(8, 0));
    auto expect_error = [](auto fn, std::vector<std::string> parts) {
        try {
            fn();
            ADD_FAILURE() << "expected an error mentioning " << parts[0];
        } catch (const Error& e) {
            for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
        }
    };
    expect_error([&] { w.add_tensor("x", DType::F32, {2}, iota_bytes(8, 0)); }, {"duplicate", "'x'"});
    expect_error([&] { w.add_tensor("q", DType::Q8_0, {48}, iota_bytes(51, 0)); }, {"'q'", "48", "32"});
    expect_error([&] { w.add_tensor("z", DType::F32, {4, 0}, {}); }, {"'z'", "0"});
    expect_error([&] { w.add_tensor("d", DType::F32, {1, 1, 1, 1, 1}, iota_bytes(4, 0)); }, {"'d'", "5 dimensions"});
    expect_error([&] { w.add_tensor("n", DType::F32, {3}, iota_bytes(8, 0)); }, {"'n'", "8 bytes", "expected 12"});
    w.add_tensor_stream("short", DType::F32, {4}, [](gguf::Writer::Sink& s) { s.write("abcd", 4); });
    expect_error([&] { w.write_buffer(); }, {"'short'", "wrote 4 bytes", "expected 16"});
}

TEST(GgufWriter, WriteFileReportsUnwritablePathAndLeavesNoTemp) {
    gguf::Writer w;
    w.set_u32("a", 1);
    try {
        w.write_file("/nonexistent-dir/x.gguf");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.gguf"), std::string::npos) << e.what();
    }
    // A producer that throws mid-write leaves neither the output nor the temporary file behind.
    auto dir = std::filesystem::temp_directory_path() / ("flint-writer-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    w.add_tensor_stream("t", DType::F32, {4}, [](gguf::Writer::Sink&) { throw Error("boom"); });
    EXPECT_THROW(w.write_file((dir / "out.gguf").string()), Error);
    EXPECT_TRUE(std::filesystem::is_empty(dir));
    std::filesystem::remove_all(dir);
}

TEST(GgufWriter, CopiesStories260KKeyForKeyAndTensorForTensor) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    auto src = gguf::File::open(test::shared_path("models/stories260K.gguf"));
    gguf::Writer w;
    w.copy_metadata(*src);
    for (const auto& t : src->tensors()) w.add_tensor_view(t.name, t.type, t.dims, t.data, t.n_bytes);
    auto path = (std::filesystem::temp_directory_path() / ("flint-copy-" + std::to_string(::getpid()) + ".gguf")).string();
    w.write_file(path);
    auto copy = gguf::File::open(path);
    expect_same_file(*src, *copy);
    EXPECT_EQ(copy->data_offset(), src->data_offset());
    std::filesystem::remove(path);
}
