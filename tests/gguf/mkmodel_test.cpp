// write_random_model / `flint mkmodel`: the `tiny` shape with the real Qwen2.5 tokenizer files must give the
// same keys, tensor names and shapes, and tokenizer as ../shared/models/tiny-qwen2-f32.gguf (which was
// converted from the same files by the reference tooling), with weights of the intended distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/gguf_quantize.h"
#include "model/random_model.h"
#include "model/shapes.h"
#include "tensor/quant.h"
#include "test_paths.h"
#include "util/error.h"

using namespace flint;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("flint-mk-" + std::to_string(::getpid()) + "-" + name)).string();
}

TokenizerFiles qwen2_files() {
    std::string dir = test::shared_path("tokenizers/qwen2/");
    return {.vocab_json = dir + "vocab.json", .merges = dir + "merges.txt", .added_tokens = dir + "added_tokens.json",
            .tokenizer_config = dir + "tokenizer_config.json", .chat_template = dir + "chat_template.jinja"};
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<float> to_f32(const gguf::TensorInfo& t) {
    std::vector<float> out(t.n_elements);
    const int64_t row = static_cast<int64_t>(t.dim(0));
    for (uint64_t r = 0; r < t.n_elements / row; ++r)
        dequantize_row_ref(t.type, t.data + r * row_bytes(t.type, row), &out[r * row], row);
    return out;
}

// Runs the flint binary; returns its exit code and puts stderr+stdout in `output`.
int run_flint(const std::string& args, std::string& output) {
    std::string cmd = std::string(FLINT_BINARY) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    size_t n;
    output.clear();
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(Mkmodel, ShapesTableMatchesTheRealConfigs) {
    const ModelShape* s = find_model_shape("qwen2.5-coder-0.5b");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->n_layers, 24u);
    EXPECT_EQ(s->n_embd, 896u);
    EXPECT_EQ(s->n_heads, 14u);
    EXPECT_EQ(s->n_kv_heads, 2u);
    EXPECT_EQ(s->n_ff, 4864u);
    EXPECT_EQ(s->n_vocab, 151936u);
    EXPECT_EQ(s->n_params(), 494032768u);  // the published parameter count of Qwen2.5-0.5B
    EXPECT_EQ(find_model_shape("qwen2.5-coder-1.5b")->n_params(), 1543714304u);
    EXPECT_EQ(find_model_shape("qwen2.5-coder-3b")->n_params(), 3085938688u);
    EXPECT_EQ(find_model_shape("nope"), nullptr);
    EXPECT_NE(model_shape_names().find("smollm-135m"), std::string::npos);
}

TEST(Mkmodel, TinyWithQwen2VocabMatchesTinyQwen2Reference) {
    FLINT_REQUIRE_SHARED("models/tiny-qwen2-f32.gguf");
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    RandomModelOptions o{.shape = *find_model_shape("tiny"), .type = DType::Q8_0, .seed = 1, .threads = 2,
                         .tokenizer = qwen2_files()};
    const std::string out = temp_path("tiny.gguf");
    RandomModelResult r = write_random_model(o, out);
    auto f = gguf::File::open(out);
    auto ref = gguf::File::open(test::shared_path("models/tiny-qwen2-f32.gguf"));

    // Every key of the reference is present with the same value, except the ones that describe weights
    // or naming (name, file type) and the chat template (the reference carries a shortened one).
    for (const auto& [key, v] : ref->metadata()) {
        SCOPED_TRACE(key);
        const gguf::Value* mine = f->find(key);
        ASSERT_NE(mine, nullptr);
        if (key == "general.name" || key == "general.file_type" || key == "tokenizer.chat_template") continue;
        EXPECT_EQ(mine->type, v.type);
        EXPECT_EQ(mine->to_string(0), v.to_string(0));
        if (v.type != gguf::ValueType::ARRAY) {
            EXPECT_EQ(mine->to_string(), v.to_string());
        }
    }
    EXPECT_EQ(f->get_u64("general.file_type", 0), 7u);
    EXPECT_EQ(f->get_string("tokenizer.chat_template"), read_all(test::shared_path("tokenizers/qwen2/chat_template.jinja")));

    // The tokenizer, entry for entry: 151,643 vocab.json tokens, 22 control tokens, padding to 151,936.
    EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens"), ref->get_strings("tokenizer.ggml.tokens"));
    EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type"), ref->get_int_array("tokenizer.ggml.token_type"));
    EXPECT_EQ(f->get_strings("tokenizer.ggml.merges"), ref->get_strings("tokenizer.ggml.merges"));
    EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens")[151665], "[PAD151665]");
    EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type")[151664], 3);
    EXPECT_EQ(r.n_vocab, 151936u);

    // Same tensors, names and shapes, in the same order; weights quantized, norms and biases F32.
    ASSERT_EQ(f->tensors().size(), ref->tensors().size());
    for (size_t k = 0; k < f->tensors().size(); ++k) {
        const auto& t = f->tensors()[k];
        EXPECT_EQ(t.name, ref->tensors()[k].name);
        EXPECT_EQ(t.dims, ref->tensors()[k].dims) << t.name;
        EXPECT_EQ(t.type, t.dims.size() == 1 ? DType::F32 : DType::Q8_0) << t.name;
    }
    EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied embeddings

    // Weights ~N(0, 0.02), norms exactly 1, biases small.
    auto emb = to_f32(*f->find_tensor("token_embd.weight"));
    double sum = 0, sq = 0;
    for (float x : emb) sum += x, sq += double(x) * x;
    double mean = sum / emb.size(), sd = std::sqrt(sq / emb.size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 1e-4);
    EXPECT_NEAR(sd, 0.02, 0.001);
    for (float x : to_f32(*f->find_tensor("blk.1.ffn_norm.weight"))) ASSERT_EQ(x, 1.0f);
    for (float x : to_f32(*f->find_tensor("blk.0.attn_k.bias"))) ASSERT_LT(std::fabs(x), 0.02f);
    std::filesystem::remove(out);
}

TEST(Mkmodel, SameSeedSameFileWhateverTheThreads) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TokenizerFiles tok{.vocab_from = test::shared_path("models/stories260K.gguf")};  // small: fast under ASan
    auto make = [&](uint64_t seed, int threads) {
        std::string out = temp_path("seed" + std::to_string(seed) + "-" + std::to_string(threads) + ".gguf");
        write_random_model({.shape = *find_model_shape("tiny"), .type = DType::Q4_0, .seed = seed, .threads = threads,
                            .tokenizer = tok},
                           out);
        std::string bytes = read_all(out);
        std::filesystem::remove(out);
        return bytes;
    };
    std::string a = make(5, 1), b = make(5, 3), c = make(6, 2);
    EXPECT_TRUE(a == b) << "thread count changed the weights";
    EXPECT_FALSE(a == c) << "seed did not change the weights";
}

TEST(Mkmodel, VocabFromCopiesTokenizerKeys) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    const std::string src = test::shared_path("models/stories260K.gguf");
    const std::string out = temp_path("vocab-from.gguf");
    RandomModelResult r = write_random_model(
        {.shape = *find_model_shape("tiny"), .type = DType::F16, .tokenizer = {.vocab_from = src}}, out);
    auto f = gguf::File::open(out);
    auto s = gguf::File::open(src);
    EXPECT_EQ(r.n_vocab, 512u);
    EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens"), s->get_strings("tokenizer.ggml.tokens"));
    EXPECT_EQ(f->get_f32_array("tokenizer.ggml.scores"), s->get_f32_array("tokenizer.ggml.scores"));
    EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(f->find_tensor("token_embd.weight")->dim(1), 512u);  // the embedding follows the tokenizer
    EXPECT_FALSE(r.notes.empty());
    std::filesystem::remove(out);
}

TEST(Mkmodel, CommandLineMakesALoadableFileAndReportsBadArguments) {
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    // flint_gguf_tests does not depend on the binary (only cli/server/client tests do): a full build has it.
    if (!std::filesystem::exists(FLINT_BINARY)) GTEST_SKIP() << FLINT_BINARY << " is not built";
    std::string out = temp_path("cli.gguf"), msg;
    ASSERT_EQ(run_flint("mkmodel --shape tiny --type q4_k -t 2 -o " + out, msg), 0) << msg;
    auto f = gguf::File::open(out);
    EXPECT_EQ(f->get_u64("general.file_type", 0), 15u);
    EXPECT_EQ(f->find_tensor("blk.0.ffn_up.weight")->type, DType::Q5_0);  // 64-wide rows: the q4_k fallback
    EXPECT_NE(msg.find("note:"), std::string::npos) << msg;
    std::filesystem::remove(out);

    EXPECT_EQ(run_flint("mkmodel --shape nope -o " + out, msg), 1);
    EXPECT_NE(msg.find("unknown shape 'nope' (valid: tiny, qwen2.5-coder-0.5b"), std::string::npos) << msg;
    EXPECT_EQ(run_flint("mkmodel --shape tiny --type q9 -o " + out, msg), 1);
    EXPECT_NE(msg.find("unknown quantization type 'q9' (valid: q8_0"), std::string::npos) << msg;
    EXPECT_EQ(run_flint("mkmodel --shape tiny --vocab-json " + test::shared_path("tokenizers/qwen2/vocab.json") +
                            " -o " + out, msg), 1);
    EXPECT_NE(msg.find("needs both a vocab.json and a merges.txt"), std::string::npos) << msg;
    EXPECT_EQ(run_flint("mkmodel --shape tiny --vocab-json /nonexistent/vocab.json --merges " +
                            test::shared_path("tokenizers/qwen2/merges.txt") + " -o " + out, msg), 1);
    EXPECT_NE(msg.find("/nonexistent/vocab.json: cannot read the vocab"), std::string::npos) << msg;
    EXPECT_EQ(run_flint("quantize /nonexistent/in.gguf " + out + " q8_0", msg), 1);
    EXPECT_NE(msg.find("/nonexistent/in.gguf: cannot open"), std::string::npos) << msg;
    EXPECT_FALSE(std::filesystem::exists(out));
}

// `flint mkmodel --script`: the file it writes answers with the script (flint run), and the options that
// do not go together are refused with a message, nothing written.
TEST(Mkmodel, ScriptedModelFromTheCommandLine) {
    FLINT_REQUIRE_SHARED("tokenizers/qwen2/vocab.json");
    if (!std::filesystem::exists(FLINT_BINARY)) GTEST_SKIP() << FLINT_BINARY << " is not built";
    std::string out = temp_path("script.gguf"), msg;
    ASSERT_EQ(run_flint("mkmodel --script 'Hello from flint.' --then 'Bye now!' --marker _response --ctx 2048 -o " + out, msg), 0)
        << msg;
    EXPECT_NE(msg.find("scripted model, 5 tokens then token 151645; after token 9655, "), std::string::npos) << msg;
    EXPECT_EQ(gguf::File::open(out)->get_u64("llama.context_length", 0), 2048u);
    ASSERT_EQ(run_flint("run -m " + out + " -p 'Tell me a story' -n 20 --temp 1 --seed 4", msg), 0) << msg;
    EXPECT_NE(msg.find("Hello from flint."), std::string::npos) << msg;
    ASSERT_EQ(run_flint("run -m " + out + " -p 'tool_response came back' -n 20 --temp 0", msg), 0) << msg;
    EXPECT_NE(msg.find("Bye now!"), std::string::npos) << msg;
    std::filesystem::remove(out);

    EXPECT_NE(run_flint("mkmodel -o " + out, msg), 0);
    EXPECT_NE(msg.find("--shape or --script is required"), std::string::npos) << msg;
    EXPECT_NE(run_flint("mkmodel --shape tiny --script x -o " + out, msg), 0);
    EXPECT_NE(msg.find("--shape excludes --script"), std::string::npos) << msg;
    EXPECT_NE(run_flint("mkmodel --script x --then y -o " + out, msg), 0);
    EXPECT_NE(msg.find("needs both its text and the marker"), std::string::npos) << msg;
    EXPECT_EQ(run_flint("mkmodel --script 'go go go' -o " + out, msg), 1);
    EXPECT_NE(msg.find("occurs twice"), std::string::npos) << msg;
    EXPECT_FALSE(std::filesystem::exists(out));
}
