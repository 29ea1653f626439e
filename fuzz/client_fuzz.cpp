// libFuzzer target for what the client reads from a server it does not control: an SSE stream (HTTP) cut
// into arbitrary pieces, and WebSocket message texts, folded into a Turn the way `flint chat`, `flint edit`
// and the latency benchmark fold them. Properties: the SSE parser gives the same events however the bytes
// are split (fed whole, byte by byte, and in the chunk sizes the first byte picks); Turn::apply takes any
// JSON — wrong types, missing members, non-objects — without throwing, and the text it returns is what it
// appended. A broken property aborts, so libFuzzer saves the input.
//   cmake -S . -B build-fuzz -DFLINT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ && cmake --build build-fuzz --target client_fuzz
//   build-fuzz/client_fuzz -dict=fuzz/json.dict -max_len=4096 corpus-client/
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "client/responses.h"
#include "client/sse.h"

using namespace flint::client;

namespace {

[[noreturn]] void broken(const char* what) {
    std::fprintf(stderr, "client_fuzz: %s\n", what);
    std::abort();
}

std::vector<SseEvent> parse_in_pieces(std::string_view bytes, size_t piece) {
    SseParser p;
    std::vector<SseEvent> out;
    for (size_t at = 0; at < bytes.size(); at += piece)
        p.feed(bytes.substr(at, piece), [&](SseEvent&& e) { out.push_back(std::move(e)); });
    return out;
}

bool same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].event != b[i].event || a[i].data != b[i].data) return false;
    return true;
}

void fold(Turn& t, std::string_view text) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) return;
    try {
        const size_t before = t.text.size();
        const std::string_view d = t.apply(j, Clock::now());
        if (d != std::string_view(t.text).substr(before)) broken("apply returned other text than it appended");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "client_fuzz: Turn::apply threw: %s\n", e.what());
        std::abort();
    }
    (void)t.ttft_ms(), (void)t.total_ms(), (void)t.tokens_per_s();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::vector<SseEvent> whole = parse_in_pieces(bytes, bytes.size() + 1);
    if (!same(whole, parse_in_pieces(bytes, 1))) broken("SSE events differ fed byte by byte");
    if (!same(whole, parse_in_pieces(bytes, 1 + data[0] % 64))) broken("SSE events differ fed in pieces");
    Turn sse, ws;
    for (const SseEvent& e : whole) fold(sse, e.data);
    fold(ws, bytes);  // a WebSocket message is one JSON text
    return 0;
}
