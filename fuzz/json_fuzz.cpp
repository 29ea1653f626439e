// libFuzzer target for the constrained-JSON recognisers (sample/json_prefix.h, sample/json_schema.h):
// any bytes, judged against nlohmann::json by the checks in tests/sample/json_oracle.h — complete() only
// for JSON the parser accepts, valid JSON accepted whole, refusals that keep the state, chunked feeding
// that agrees with byte-wise feeding, equal signatures that take the same next bytes, and the schema
// recogniser in step with the plain one. A broken
// property aborts with the text, so libFuzzer saves the input. The first 4 bytes pick the chunk sizes.
//   cmake -S . -B build-fuzz -DFLINT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ && cmake --build build-fuzz --target json_fuzz
//   build-fuzz/json_fuzz -dict=fuzz/json.dict -max_len=512 corpus-json/
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "../tests/sample/json_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const std::string_view chunks = in.substr(0, 4), text = in.substr(chunks.size());
    const std::string failure = flint::json_oracle::check_json_recognisers(text, chunks, /*probe_signatures=*/true);
    if (!failure.empty()) {
        std::fprintf(stderr, "json_fuzz: %s\n", failure.c_str());
        std::abort();
    }
    return 0;
}
