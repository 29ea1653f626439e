// The JSON recognisers against nlohmann::json on seeded random texts: valid JSON of every shape (escapes,
// surrogate pairs, multi-byte UTF-8 at its range limits, numbers in all forms, whitespace), and the same
// texts mutated (bytes replaced, inserted, deleted, cut short). json_oracle.h says what must hold;
// fuzz/json_fuzz.cpp runs the same checks under libFuzzer.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "json_oracle.h"

namespace flint {
namespace {

class Generator {
public:
    explicit Generator(uint32_t seed) : rng_(seed) {}

    std::string text() {
        std::string out;
        value(out, 0, pick(10) < 7);
        if (pick(4) == 0) gap(out);
        return out;
    }

    // Replaces, inserts or deletes bytes, or cuts the text short.
    void mutate(std::string& t) {
        static const std::string kBytes = "{}[],:\"\\/ubfnrt0123456789-+.eEaAdDcCfF \t\n\x7f\x01"
                                          "\x80\xbf\xc0\xc1\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff\x9f\xa0\x8f\x90";
        for (int n = 1 + pick(3); n > 0 && !t.empty(); --n) {
            const size_t at = pick(t.size());
            const char b = pick(4) == 0 ? static_cast<char>(pick(256)) : kBytes[pick(kBytes.size())];
            switch (pick(4)) {
            case 0: t[at] = b; break;
            case 1: t.insert(t.begin() + at, b); break;
            case 2: t.erase(at, 1); break;
            default: t.resize(at); break;
            }
        }
    }

    uint32_t pick(size_t n) { return static_cast<uint32_t>(rng_() % n); }

private:
    void gap(std::string& out) {
        static const char kWs[] = " \t\n\r";
        for (int n = pick(3); n > 0; --n) out += kWs[pick(4)];
    }

    void value(std::string& out, int depth, bool object) {
        int kind = object ? 0 : static_cast<int>(pick(depth < 4 ? 7 : 5)) - 2;  // -2..-1: containers less often
        if (kind < 0) kind += 7;
        switch (kind) {
        case 0: case 5: {
            out += '{';
            for (int n = pick(4), i = 0; i < n; ++i) {
                if (i) out += ',';
                gap(out);
                string(out);
                gap(out);
                out += ':';
                gap(out);
                value(out, depth + 1, false);
                gap(out);
            }
            out += '}';
            break;
        }
        case 6: {
            out += '[';
            for (int n = pick(4), i = 0; i < n; ++i) {
                if (i) out += ',';
                gap(out);
                value(out, depth + 1, false);
                gap(out);
            }
            out += ']';
            break;
        }
        case 1: string(out); break;
        case 2: number(out); break;
        case 3: out += (pick(3) == 0 ? "true" : pick(2) ? "false" : "null"); break;
        default: number(out); break;
        }
    }

    void hex4(std::string& out, unsigned v) {
        static const char kLower[] = "0123456789abcdef", kUpper[] = "0123456789ABCDEF";
        const char* digits = pick(2) ? kLower : kUpper;
        for (int s = 12; s >= 0; s -= 4) out += digits[(v >> s) & 15];
    }

    void utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | cp >> 6);
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | cp >> 12);
            out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | cp >> 18);
            out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
            out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    void string(std::string& out) {
        static const uint32_t kEdges[] = {0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF,
                                          0x10000, 0x3FFFF, 0x40000, 0xFFFFF, 0x100000, 0x10FFFF};
        static const char kEscapes[] = "\"\\/bfnrt";
        out += '"';
        for (int n = pick(6); n > 0; --n) {
            switch (pick(6)) {
            case 0: out += static_cast<char>('a' + pick(26)); break;
            case 1: out += '\\'; out += kEscapes[pick(8)]; break;
            case 2: {  // \uXXXX outside the surrogates
                uint32_t v = pick(0x10000);
                if (v >= 0xD800 && v <= 0xDFFF) v -= 0x800;
                out += "\\u";
                hex4(out, v);
                break;
            }
            case 3:  // a surrogate pair
                out += "\\u";
                hex4(out, 0xD800 + pick(0x400));
                out += "\\u";
                hex4(out, 0xDC00 + pick(0x400));
                break;
            case 4: utf8(out, kEdges[pick(std::size(kEdges))]); break;
            default: {
                uint32_t cp = 0x80 + pick(0x10FFFF - 0x80);
                if (cp >= 0xD800 && cp <= 0xDFFF) cp += 0x800;
                utf8(out, cp);
                break;
            }
            }
        }
        out += '"';
    }

    void number(std::string& out) {
        auto digits = [&](int n) {
            for (int i = 0; i < n; ++i) out += static_cast<char>('0' + pick(10));
        };
        if (pick(2)) out += '-';
        if (pick(3) == 0) out += '0';
        else {
            out += static_cast<char>('1' + pick(9));
            digits(pick(4));
        }
        if (pick(2)) {
            out += '.';
            digits(1 + pick(3));
        }
        if (pick(3) == 0) {
            out += pick(2) ? 'e' : 'E';
            if (pick(2)) out += pick(2) ? '+' : '-';
            digits(1 + pick(2));  // within double's range: nlohmann stops at 1e999
        }
    }

    std::mt19937 rng_;
};

TEST(JsonDifferential, ValidTextsAreAcceptedWholeAndCompleteAtTheirEnd) {
    Generator g(20261205);
    int objects = 0;
    for (int i = 0; i < 3000; ++i) {
        const std::string t = g.text();
        ASSERT_TRUE(json_oracle::parse_with_nlohmann(t) == json_oracle::Parsed::Object || json_oracle::parse_with_nlohmann(t) == json_oracle::Parsed::Other) << "the generator wrote invalid JSON: " << t;
        objects += t[0] == '{';
        std::string chunks(4, '\0');
        for (char& c : chunks) c = static_cast<char>(g.pick(256));
        const std::string e = json_oracle::check_json_recognisers(t, chunks);
        ASSERT_EQ(e, "") << "text: " << t;
    }
    EXPECT_GT(objects, 1500);  // object_only is exercised on most texts
}

TEST(JsonDifferential, MutatedTextsAreJudgedAsTheParserJudgesThem) {
    Generator g(7);
    int invalid = 0;
    for (int i = 0; i < 6000; ++i) {
        std::string t = g.text();
        g.mutate(t);
        invalid += json_oracle::parse_with_nlohmann(t) == json_oracle::Parsed::Invalid;
        std::string chunks(4, '\0');
        for (char& c : chunks) c = static_cast<char>(g.pick(256));
        const std::string e = json_oracle::check_json_recognisers(t, chunks);
        ASSERT_EQ(e, "") << "text: " << ::testing::PrintToString(t);
    }
    EXPECT_GT(invalid, 3000);  // mostly refusals: the refusal paths are what this test is for
}

// The signature is the key of the token-set cache: prefixes of one text with equal signatures must take
// the same next bytes (each probed with all 256).
TEST(JsonDifferential, EqualSignaturesTakeTheSameNextBytes) {
    Generator g(99);
    for (int i = 0; i < 400; ++i) {
        std::string t = g.text();
        if (i % 2) g.mutate(t);
        const std::string e = json_oracle::check_json_recognisers(t, {}, true);
        ASSERT_EQ(e, "") << "text: " << ::testing::PrintToString(t);
    }
}

}  // namespace
}  // namespace flint
