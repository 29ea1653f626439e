// The constrained-JSON recognisers checked against an independent parser (nlohmann::json), for any bytes:
// the seeded differential test (json_differential_test.cpp) and the libFuzzer target (fuzz/json_fuzz.cpp).
//
// check_json_recognisers(text) returns "" or what went wrong. What must hold, fed one byte at a time:
//   - a text the recogniser calls complete is JSON the parser accepts (an object when object_only);
//   - a text the parser accepts is accepted to its last byte and complete there, unless it breaks a rule
//     the recogniser adds on purpose: no whitespace before the value, at most kMaxWhitespace in a row;
//   - a refused byte leaves the state as it was (same signature, and the next byte is judged the same);
//   - feeding the text in chunks gives the byte-wise answer: a chunk is taken iff all its bytes would be;
//   - (probe_signatures) two prefixes of the text with equal signatures judge every next byte alike and
//     agree on complete() — the signature is a cache key for the tokens that fit;
//   - JsonSchemaPrefix over an "any object" schema, and over an empty schema, agree byte for byte with
//     JsonPrefix(object_only = true / false): same refusals, same complete().
// A number outside double's range (1e999) is valid syntax that nlohmann stops at (out_of_range) without
// reading on, and its lexer ends the input at a NUL byte: such texts are checked for everything but the
// agreement with the parser.
#pragma once
#include <algorithm>
#include <map>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sample/json_prefix.h"
#include "sample/json_schema.h"

namespace flint::json_oracle {

enum class Parsed { Invalid, Object, Other, Unknown };

inline Parsed parse_with_nlohmann(std::string_view text) {
    if (text.find('\0') != text.npos) return Parsed::Unknown;  // nlohmann's lexer takes a NUL for the end
    try {
        auto v = nlohmann::json::parse(text.begin(), text.end());
        return v.is_object() ? Parsed::Object : Parsed::Other;
    } catch (const nlohmann::json::parse_error&) {
        return Parsed::Invalid;
    } catch (const nlohmann::json::out_of_range&) {  // a number too large for a double; the rest unread
        return Parsed::Unknown;
    }
}

// The recogniser's own limits, which the parser does not have: the value starts at byte 0, and no more than
// kMaxWhitespace whitespace bytes follow one another (counted over the whole text: inside strings raw
// whitespace other than spaces is invalid anyway, and a string of 17 spaces only skips the check).
inline bool within_recogniser_limits(std::string_view text) {
    auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    if (text.empty() || ws(text[0])) return false;
    int run = 0;
    for (char c : text) {
        run = ws(c) ? run + 1 : 0;
        if (run > JsonPrefix::kMaxWhitespace) return false;
    }
    return true;
}

struct ByteWise {
    size_t accepted = 0;        // bytes taken before the first refusal
    bool complete_at_end = false;  // when all were taken
    std::string failure;        // a broken property, if any
};

inline std::string sig(const JsonPrefix& p) {
    std::string s;
    p.signature(s);
    return s;
}
inline std::string sig(const JsonSchemaPrefix& p) { return p.signature(); }

// States met so far by signature: a state whose signature was met before must take the same next bytes
// and agree on complete(). Each signature is probed at most twice (256 one-byte feeds a probe).
template <class P>
class SignatureProbe {
public:
    std::string visit(const P& p, const std::string& signature, size_t at) {
        auto [it, fresh] = seen_.try_emplace(signature, p, 0);
        if (fresh || it->second.second++ >= 2) return "";
        const P& first = it->second.first;
        if (first.complete() != p.complete()) return "equal signatures, unequal complete() at " + std::to_string(at);
        for (int b = 0; b < 256; ++b) {
            const char c = static_cast<char>(b);
            P x = first, y = p;
            if (x.feed(std::string_view(&c, 1)) != y.feed(std::string_view(&c, 1)))
                return "equal signatures judge byte " + std::to_string(b) + " unlike at " + std::to_string(at);
        }
        return "";
    }

private:
    std::map<std::string, std::pair<P, int>> seen_;
};

// Feeds `text` one byte at a time to a fresh Recogniser made by `make`; after a refusal, checks that the
// state is unchanged and that the same byte is refused again.
template <class Make>
ByteWise feed_bytes(Make make, std::string_view text, bool probe_signatures = false) {
    ByteWise r;
    auto p = make();
    SignatureProbe<decltype(p)> probe;
    for (size_t i = 0; i < text.size(); ++i) {
        const std::string before = sig(p);
        if (probe_signatures) {
            r.failure = probe.visit(p, before, i);
            if (!r.failure.empty()) return r;
        }
        if (p.feed(text.substr(i, 1))) continue;
        r.accepted = i;
        if (sig(p) != before) r.failure = "a refused byte changed the state at " + std::to_string(i);
        else if (p.feed(text.substr(i, 1))) r.failure = "a refused byte was taken on the second try at " + std::to_string(i);
        return r;
    }
    r.accepted = text.size();
    r.complete_at_end = p.complete();
    return r;
}

// Feeds `text` in chunks whose sizes come from `sizes` (cycled): each chunk must be taken iff the byte-wise
// run took all of its bytes; stops at the first refused chunk.
template <class Make>
std::string feed_chunks(Make make, std::string_view text, const ByteWise& bytewise, std::string_view sizes) {
    if (sizes.empty()) return "";
    auto p = make();
    size_t at = 0, k = 0;
    while (at < text.size()) {
        size_t n = std::min<size_t>(1 + static_cast<unsigned char>(sizes[k++ % sizes.size()]) % 8, text.size() - at);
        const bool expect = at + n <= bytewise.accepted;
        if (p.feed(text.substr(at, n)) != expect)
            return "chunk [" + std::to_string(at) + ", +" + std::to_string(n) + ") judged unlike its bytes";
        if (!expect) return "";
        at += n;
    }
    if (p.complete() != bytewise.complete_at_end) return "complete() differs after chunked feeding";
    return "";
}

inline std::string check_against_parser(std::string_view text, bool object_only, const ByteWise& r, Parsed parsed) {
    if (parsed == Parsed::Unknown) return "";
    const char* mode = object_only ? "JsonPrefix(object_only)" : "JsonPrefix";
    const bool valid = object_only ? parsed == Parsed::Object : parsed != Parsed::Invalid;
    if (r.accepted == text.size() && r.complete_at_end && !valid)
        return std::string(mode) + " calls complete what the parser refuses";
    if (valid && within_recogniser_limits(text)) {
        if (r.accepted < text.size())
            return std::string(mode) + " refuses valid JSON at byte " + std::to_string(r.accepted);
        if (!r.complete_at_end) return std::string(mode) + " is not complete at the end of valid JSON";
    }
    return "";
}

// `chunk_sizes`: bytes that pick the chunk sizes for the chunked feed (empty: skip it).
inline std::string check_json_recognisers(std::string_view text, std::string_view chunk_sizes = {},
                                          bool probe_signatures = false) {
    static const auto any_object = JsonSchema::any_object();
    static const auto anything = std::make_shared<const JsonSchema>();  // root 0: Any
    const Parsed parsed = parse_with_nlohmann(text);
    for (bool object_only : {true, false}) {
        auto make = [&] { return JsonPrefix(object_only); };
        const ByteWise r = feed_bytes(make, text, probe_signatures);
        if (!r.failure.empty()) return "JsonPrefix: " + r.failure;
        if (auto e = check_against_parser(text, object_only, r, parsed); !e.empty()) return e;
        if (auto e = feed_chunks(make, text, r, chunk_sizes); !e.empty()) return "JsonPrefix: " + e;

        auto make_schema = [&] { return JsonSchemaPrefix(object_only ? any_object : anything); };
        const ByteWise s = feed_bytes(make_schema, text, probe_signatures);
        if (!s.failure.empty()) return "JsonSchemaPrefix: " + s.failure;
        if (s.accepted != r.accepted)
            return "JsonSchemaPrefix refuses at byte " + std::to_string(s.accepted) + ", JsonPrefix at " +
                   std::to_string(r.accepted) + (object_only ? " (any object)" : " (any value)");
        if (s.complete_at_end != r.complete_at_end) return "JsonSchemaPrefix and JsonPrefix disagree on complete()";
        if (auto e = feed_chunks(make_schema, text, s, chunk_sizes); !e.empty()) return "JsonSchemaPrefix: " + e;
    }
    return "";
}

}  // namespace flint::json_oracle
