// Loading and unloading models while serving: POST /v1/models, DELETE /v1/models/{id} (model_admin.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "runtime/waiter.h"

namespace flint::test {
namespace {

const Headers kAdmin = {{"Authorization", "Bearer sk-admin"}};
const Headers kUser = {{"Authorization", "Bearer sk-user"}};

server::ServerConfig keyed() {
    server::ServerConfig cfg;
    cfg.api_keys = {"sk-user"};
    cfg.admin_keys = {"sk-admin"};
    return cfg;
}

std::vector<std::string> listed(int port) {
    std::vector<std::string> ids;
    const json list = http(port, "GET", "/v1/models", "", kAdmin).json_body();
    for (const json& m : list["data"]) ids.push_back(m["id"]);
    return ids;
}

json generate(int port, const std::string& model, int tokens = 3) {
    HttpResult r = post_json(port, "/v1/responses", {{"model", model}, {"input", "Once"}, {"max_output_tokens", tokens}}, kUser);
    json j = json::parse(r.body);
    j["_status"] = r.status;
    return j;
}

std::string error_code(const HttpResult& r) { return json::parse(r.body)["error"]["code"].get<std::string>(); }

}  // namespace

// `flint serve --mmap`: the models stay mapped from their files (no private copy, the file's layout), for
// those loaded at start and at run time alike, and they serve the same greedy text as read-in ones.
TEST(ModelRegistry, MappedModelsServeTheSameText) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    RuntimeConfig rc;
    rc.threads = 1;
    rc.ctx = 256;
    auto text = [&](server::ModelEntry& e) {
        GenerationRequest r;
        r.prompt = e.tokenizer->encode("Once upon a time", true, false);
        r.sampling.temperature = 0;
        r.max_tokens = 24;
        std::string out;
        run_to_completion(*e.runtime, r, &out);
        return out;
    };
    server::ModelRegistry read_in, mapped;
    mapped.set_residency(Residency::Map);
    server::ModelEntry& a = read_in.load({"a", shared_path("models/stories260K.gguf")}, rc, "", false);
    server::ModelEntry& b = mapped.load({"b", shared_path("models/stories260K.gguf")}, rc, "", false);
    auto c = mapped.load(server::ModelSpec{"c", shared_path("models/stories260K.gguf")});  // at run time
    EXPECT_EQ(a.model->file->mapping().residency(), Residency::HugePages);
    EXPECT_EQ(b.model->file->mapping().residency(), Residency::Map);
    EXPECT_EQ(c->model->file->mapping().residency(), Residency::Map);
    const std::string want = text(a);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(text(b), want);
    EXPECT_EQ(text(*c), want);
}

TEST(ModelAdmin, LoadListGenerateUnload) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestServer s(keyed());
    const std::string path = shared_path("models/stories260K.gguf");
    HttpResult r = post_json(s.port(), "/v1/models", {{"path", path}, {"id", "second"}}, kAdmin);
    ASSERT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.json_body()["id"], "second");
    EXPECT_EQ(r.json_body()["object"], "model");
    EXPECT_EQ(listed(s.port()), (std::vector<std::string>{"stories", "second"}));
    EXPECT_EQ(http(s.port(), "GET", "/v1/models/second", "", kUser).status, 200);
    json g = generate(s.port(), "second");
    EXPECT_EQ(g["_status"], 200) << g.dump();
    EXPECT_EQ(g["model"], "second");
    EXPECT_EQ(g["usage"]["output_tokens"], 3);

    HttpResult del = http(s.port(), "DELETE", "/v1/models/second", "", kAdmin);
    ASSERT_EQ(del.status, 200) << del.body;
    EXPECT_EQ(del.json_body(), (json{{"id", "second"}, {"object", "model"}, {"deleted", true}}));
    EXPECT_EQ(listed(s.port()), (std::vector<std::string>{"stories"}));
    EXPECT_EQ(generate(s.port(), "second")["_status"], 404);
    EXPECT_EQ(generate(s.port(), "stories")["_status"], 200);
    // The name is free again.
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", path}, {"id", "second"}}, kAdmin).status, 201);
    EXPECT_EQ(generate(s.port(), "second")["_status"], 200);
}

TEST(ModelAdmin, UnloadWhileARequestRunsEndsItWithAClearErrorAndSparesOtherModels) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestServer s(keyed());
    ASSERT_EQ(post_json(s.port(), "/v1/models", {{"path", shared_path("models/stories260K.gguf")}, {"id", "victim"}}, kAdmin).status,
              201);
    // Slow the victim's engine down (5 ms a step) so its request is surely running when the unload comes.
    std::atomic<int> steps{0};
    s.models().find("victim")->runtime->on_step = [&](const std::vector<uint64_t>&) {
        ++steps;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    SseResult victim;
    std::thread streamer([&] {
        victim = sse(s.port(), "/v1/responses",
                     {{"model", "victim"}, {"input", "Once upon a time"}, {"max_output_tokens", 400}, {"stream", true}}, kUser);
    });
    SseResult other;
    std::thread bystander([&] {
        other = sse(s.port(), "/v1/responses",
                    {{"model", "stories"}, {"input", "Once upon a time"}, {"max_output_tokens", 100}, {"stream", true}}, kUser);
    });
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (steps < 5 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GE(steps.load(), 5);
    HttpResult del = http(s.port(), "DELETE", "/v1/models/victim", "", kAdmin);
    EXPECT_EQ(del.status, 200) << del.body;
    streamer.join();
    bystander.join();
    EXPECT_LT(steps.load(), 300) << "the request ran to its end instead of being stopped";
    ASSERT_EQ(victim.status, 200) << victim.body;
    ASSERT_FALSE(victim.events.empty());
    EXPECT_EQ(victim.events.back().event, "response.failed") << victim.events.back().data;
    json failed = json::parse(victim.events.back().data);
    EXPECT_NE(failed["response"]["error"]["message"].get<std::string>().find("'victim' was unloaded"), std::string::npos)
        << failed.dump();
    ASSERT_EQ(other.status, 200) << other.body;
    const json rest = json::parse(other.events.back().data)["response"];
    EXPECT_TRUE(rest["status"] == "completed" || rest["incomplete_details"]["reason"] == "max_output_tokens") << rest.dump();
    EXPECT_EQ(generate(s.port(), "stories")["_status"], 200);
}

TEST(ModelAdmin, BadRequestsAreClearErrors) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    TestServer s(keyed());
    const std::string path = shared_path("models/stories260K.gguf");
    // Unknown model.
    HttpResult unknown = http(s.port(), "DELETE", "/v1/models/nope", "", kAdmin);
    EXPECT_EQ(unknown.status, 404);
    EXPECT_EQ(error_code(unknown), "model_not_found");
    // Missing, unreadable and non-GGUF files.
    HttpResult missing = post_json(s.port(), "/v1/models", {{"path", "/nonexistent/model.gguf"}, {"id", "x"}}, kAdmin);
    EXPECT_EQ(missing.status, 400);
    EXPECT_EQ(error_code(missing), "invalid_model_file");
    EXPECT_NE(missing.body.find("does not exist"), std::string::npos) << missing.body;
    const auto junk = std::filesystem::temp_directory_path() / "flint_model_admin_junk.gguf";
    std::ofstream(junk) << "this is not a gguf file\n";
    HttpResult bad = post_json(s.port(), "/v1/models", {{"path", junk.string()}, {"id", "x"}}, kAdmin);
    std::filesystem::remove(junk);
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(error_code(bad), "invalid_model_file");
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", std::filesystem::temp_directory_path().string()}}, kAdmin).status, 400);
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"id", "x"}}, kAdmin).status, 400);
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", 3}}, kAdmin).status, 400);
    EXPECT_EQ(http(s.port(), "POST", "/v1/models", "{not json", kAdmin).status, 400);
    // Names: taken, or unusable in a URL / metric label.
    HttpResult taken = post_json(s.port(), "/v1/models", {{"path", path}, {"id", "stories"}}, kAdmin);
    EXPECT_EQ(taken.status, 409);
    EXPECT_EQ(error_code(taken), "model_already_loaded");
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", path}, {"id", "a/b"}}, kAdmin).status, 400);
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", path}, {"id", "x\"y"}}, kAdmin).status, 400);
    // Only admin keys.
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", path}, {"id", "y"}}, kUser).status, 403);
    EXPECT_EQ(http(s.port(), "DELETE", "/v1/models/stories", "", kUser).status, 403);
    EXPECT_EQ(http(s.port(), "PUT", "/v1/models/stories", "", kAdmin).status, 405);
    // Nothing above changed what is served.
    EXPECT_EQ(listed(s.port()), (std::vector<std::string>{"stories"}));
    EXPECT_EQ(generate(s.port(), "stories")["_status"], 200);
}

TEST(ModelAdmin, ModelsDirConfinesLoads) {
    FLINT_REQUIRE_SHARED("models/stories260K.gguf");
    server::ServerConfig cfg = keyed();
    const std::filesystem::path file = shared_path("models/stories260K.gguf");
    cfg.models_dir = file.parent_path().string();
    TestServer s(cfg);
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", "stories260K.gguf"}, {"id", "rel"}}, kAdmin).status, 201);
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", file.string()}, {"id", "abs"}}, kAdmin).status, 201);
    HttpResult out = post_json(s.port(), "/v1/models", {{"path", "../stories260K.gguf"}, {"id", "out"}}, kAdmin);
    EXPECT_EQ(out.status, 403) << out.body;
    EXPECT_EQ(post_json(s.port(), "/v1/models", {{"path", "/etc/passwd"}, {"id", "out"}}, kAdmin).status, 403);
    // The default name is the file's stem.
    EXPECT_EQ(http(s.port(), "DELETE", "/v1/models/rel", "", kAdmin).status, 200);
    HttpResult stem = post_json(s.port(), "/v1/models", {{"path", "stories260K.gguf"}}, kAdmin);
    EXPECT_EQ(stem.status, 201);
    EXPECT_EQ(stem.json_body()["id"], "stories260K");
}

}  // namespace flint::test
