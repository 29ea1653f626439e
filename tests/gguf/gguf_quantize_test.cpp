// quantize_file: every target type on a real model (stories260K, whose 64-wide rows exercise the block-size
// fallbacks) and on a synthetic one with 256-wide rows from F32, F16 and BF16 sources; dequantized
// weights must stay close to the originals, with a tolerance per type.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "gguf/gguf.h"
#include "gguf/gguf_quantize.h"
#include "gguf/gguf_writer.h"
#include "tensor/quant.h"
#include "test_paths.h"
#include "util/error.h"

using namespace flint;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("flint-q-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::vector<float> to_f32(const gguf::TensorInfo& t) {
    std::vector<float> out(t.n_elements);
    const int64_t row = static_cast<int64_t>(t.dim(0));
    const size_t rb = row_bytes(t.type, row);
    for (uint64_t r = 0; r < t.n_elements / row; ++r) dequantize_row_ref(t.type, t.data + r * rb, &out[r * row], row);
    return out;
}

// RMS error relative to the RMS of the original: comparable across tensors of any scale.
double relative_rms_error(const std::vector<float>& a, const std::vector<float>& b) {
    double err = 0, ref = 0;
    for (size_t k = 0; k < a.size(); ++k) {
        err += (a[k] - b[k]) * double(a[k] - b[k]);
        ref += double(a[k]) * a[k];
    }
    return ref == 0 ? std::sqrt(err) : std::sqrt(err / ref);
}

// Bounds on the relative RMS error of Gaussian-like weights, a little above what each format measures.
double tolerance(DType t) {
    switch (t) {
        case DType::F32: return 0;
        case DType::F16: return 1e-3;
        case DType::BF16: return 8e-3;
        case DType::Q8_0: return 0.01;
        case DType::Q6_K: return 0.03;
        case DType::Q5_K: return 0.05;
        case DType::Q5_0: return 0.06;
        case DType::Q4_K: return 0.10;
        case DType::Q4_0: return 0.13;
        case DType::Q5_1: return 0.05;
        case DType::IQ4_NL: return 0.11;
        case DType::IQ4_XS: return 0.11;
        case DType::Q4_1: return 0.10;
        case DType::Q3_K: return 0.21;
        case DType::Q2_K: return 0.37;
        default: return 1;
    }
}

void expect_close_to_source(const gguf::File& src, const gguf::File& out) {
    ASSERT_EQ(src.tensors().size(), out.tensors().size());
    for (size_t k = 0; k < src.tensors().size(); ++k) {
        const auto& a = src.tensors()[k];
        const auto& b = out.tensors()[k];
        ASSERT_EQ(a.name, b.name);
        ASSERT_EQ(a.dims, b.dims) << a.name;
        double e = relative_rms_error(to_f32(a), to_f32(b));
        // The error against the source also contains the source's own rounding (F16/BF16 sources).
        EXPECT_LE(e, tolerance(b.type) + tolerance(a.type)) << a.name << " " << dtype_name(a.type) << " -> "
                                                           << dtype_name(b.type);
    }
}

}  // namespace

TEST(GgufQuantize, Stories260KToEveryTarget) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string in = test::shared_path("models/stories260K.gguf");
    auto src = gguf::File::open(in);
    for (DType target : gguf::quantize_targets()) {
        SCOPED_TRACE(std::string(dtype_name(target)));
        std::string out = temp_path("stories.gguf");
        gguf::QuantizeOptions o{.target = target, .threads = 2};
        gguf::QuantizeResult r = gguf::quantize_file(in, out, o);
        auto q = gguf::File::open(out);
        EXPECT_EQ(q->get_u64("general.file_type", 99), gguf::llama_file_type(target));
        EXPECT_EQ(q->metadata().size(), src->metadata().size() + 1 + (traits(target).block_elems > 1 ? 1 : 0));
        EXPECT_EQ(q->get_strings("tokenizer.ggml.tokens"), src->get_strings("tokenizer.ggml.tokens"));
        const uint32_t block = traits(target).block_elems;
        size_t fallbacks = 0;
        for (const auto& t : q->tensors()) {
            DType want = target;
            if (t.dims.size() == 1) want = DType::F32;
            else if (t.dim(0) % block != 0) {
                want = t.dim(0) % 32 == 0 && block == 256 ? gguf::block_fallback(target) : DType::F16;
                ++fallbacks;
            }
            EXPECT_EQ(t.type, want) << t.name << " shape " << t.shape_string();
        }
        EXPECT_EQ(r.notes.size(), fallbacks);
        expect_close_to_source(*src, *q);
        std::filesystem::remove(out);
    }
}

TEST(GgufQuantize, SyntheticF32F16BF16SourcesToEveryTarget) {
    // 256-wide rows so the K-quants apply; a row of 96 (a 32-block fallback for K-quants) and of 40 (F16).
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 0.02f);
    auto rows = [&](DType type, size_t n) {
        std::vector<float> x(n);
        for (float& v : x) v = nd(rng);
        std::vector<uint8_t> out(row_bytes(type, n));
        quantize_row_ref(type, x.data(), out.data(), static_cast<int64_t>(n));
        return out;
    };
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.add_tensor("w.f32", DType::F32, {256, 64}, rows(DType::F32, 256 * 64));
    w.add_tensor("w.f16", DType::F16, {512, 16}, rows(DType::F16, 512 * 16));
    w.add_tensor("w.bf16", DType::BF16, {256, 8}, rows(DType::BF16, 256 * 8));
    w.add_tensor("w.96", DType::F32, {96, 8}, rows(DType::F32, 96 * 8));
    w.add_tensor("w.40", DType::F32, {40, 8}, rows(DType::F32, 40 * 8));
    w.add_tensor("norm.f16", DType::F16, {256}, rows(DType::F16, 256));
    const std::string in = temp_path("synthetic.gguf");
    w.write_file(in);
    auto src = gguf::File::open(in);
    for (DType target : gguf::quantize_targets()) {
        SCOPED_TRACE(std::string(dtype_name(target)));
        const std::string out = temp_path("synthetic-out.gguf");
        gguf::quantize_file(in, out, {.target = target, .threads = 3});
        auto q = gguf::File::open(out);
        EXPECT_EQ(q->find_tensor("w.f32")->type, target);
        EXPECT_EQ(q->find_tensor("w.f16")->type, target);
        EXPECT_EQ(q->find_tensor("w.bf16")->type, target);
        EXPECT_EQ(q->find_tensor("norm.f16")->type, DType::F32);
        bool k_quant = traits(target).block_elems == 256;
        EXPECT_EQ(q->find_tensor("w.96")->type, k_quant ? gguf::block_fallback(target) : target);
        if (k_quant) {
            // llama.cpp's choices
            const DType want = target == DType::Q6_K   ? DType::Q8_0
                               : target == DType::Q5_K ? DType::Q5_1
                               : target == DType::Q4_K ? DType::Q5_0
                                                       : DType::IQ4_NL;
            EXPECT_EQ(gguf::block_fallback(target), want);
        }
        EXPECT_EQ(q->find_tensor("w.40")->type, traits(target).block_elems == 1 ? target : DType::F16);
        expect_close_to_source(*src, *q);
        std::filesystem::remove(out);
    }
    std::filesystem::remove(in);
}

TEST(GgufQuantize, ClearErrors) {
    auto expect_error = [](auto fn, std::vector<std::string> parts) {
        try {
            fn();
            ADD_FAILURE() << "expected an error mentioning " << parts[0];
        } catch (const Error& e) {
            for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
        }
    };
    expect_error([] { gguf::parse_quantize_target("q3_x"); }, {"'q3_x'", "valid: q8_0", "q4_k"});
    expect_error([] { gguf::parse_quantize_target("q8_k"); }, {"'q8_k'", "valid:"});
    expect_error([] { gguf::quantize_file("/nonexistent/in.gguf", temp_path("x.gguf"), {}); },
                 {"/nonexistent/in.gguf", "cannot open"});

    // A Q8_0 source cannot become Q4_0: the message names the tensor and both types.
    gguf::Writer w;
    w.add_tensor("blk.0.attn_q.weight", DType::Q8_0, {64, 2}, std::vector<uint8_t>(4 * 34, 0));
    const std::string in = temp_path("q8.gguf");
    w.write_file(in);
    expect_error([&] { gguf::quantize_file(in, temp_path("y.gguf"), {.target = DType::Q4_0}); },
                 {in, "'blk.0.attn_q.weight'", "is q8_0", "f32, f16 and bf16"});
    expect_error([&] { gguf::quantize_file(in, "/nonexistent-dir/out.gguf", {.target = DType::Q8_0}); },
                 {"/nonexistent-dir/out.gguf", "cannot create"});
    expect_error([&] { gguf::quantize_file(in, in, {.target = DType::Q8_0}); }, {"is the input file"});
    std::filesystem::remove(in);
}
