#include "tokenizer/unicode.h"

#include <array>

namespace flint::utf8 {

int sequence_length(std::string_view s) {
    if (s.empty()) return 0;
    const auto c0 = static_cast<uint8_t>(s[0]);
    if (c0 < 0x80) return 1;
    int n = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (rejects overlongs and surrogates)
    if (c0 >= 0xC2 && c0 <= 0xDF) n = 2;
    else if (c0 == 0xE0) n = 3, lo = 0xA0;
    else if (c0 >= 0xE1 && c0 <= 0xEC) n = 3;
    else if (c0 == 0xED) n = 3, hi = 0x9F;
    else if (c0 >= 0xEE && c0 <= 0xEF) n = 3;
    else if (c0 == 0xF0) n = 4, lo = 0x90;
    else if (c0 >= 0xF1 && c0 <= 0xF3) n = 4;
    else if (c0 == 0xF4) n = 4, hi = 0x8F;
    else return 0;
    for (int k = 1; k < n; ++k) {
        if (static_cast<size_t>(k) >= s.size()) return -(n - k);
        const auto c = static_cast<uint8_t>(s[k]);
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
    }
    return n;
}

void append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

bool is_valid(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const int n = sequence_length(s.substr(i));
        if (n <= 0) return false;
        i += static_cast<size_t>(n);
    }
    return true;
}

std::string sanitize(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const int n = sequence_length(s.substr(i));
        if (n > 0) {
            out.append(s.substr(i, static_cast<size_t>(n)));
            i += static_cast<size_t>(n);
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

}  // namespace flint::utf8

namespace flint::byte_level {
namespace {

struct Tables {
    std::array<std::string, 256> byte_to_text;
    std::array<int16_t, 0x180> cp_to_byte;  // every mapped code point is below U+0180; -1: not mapped

    Tables() {
        cp_to_byte.fill(-1);
        // Printable bytes keep their code point; the rest (controls, space, DEL, NBSP, soft hyphen…) are
        // numbered upwards from U+0100 in byte order — GPT-2's bytes_to_unicode().
        auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
        int next = 0x100;
        for (int b = 0; b < 256; ++b) {
            const int cp = printable(b) ? b : next++;
            utf8::append(byte_to_text[b], static_cast<uint32_t>(cp));
            cp_to_byte[cp] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

std::string_view encode_byte(uint8_t b) { return tables().byte_to_text[b]; }

void encode(std::string_view bytes, std::string& out) {
    const auto& t = tables();
    for (char c : bytes) out += t.byte_to_text[static_cast<uint8_t>(c)];
}

std::string decode(std::string_view text) {
    const auto& t = tables();
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const auto c0 = static_cast<uint8_t>(text[i]);
        const int n = utf8::sequence_length(text.substr(i));
        uint32_t cp = 0x7FFFFFFF;
        if (n == 1) cp = c0;
        else if (n == 2) cp = ((c0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
        if (cp < t.cp_to_byte.size() && t.cp_to_byte[cp] >= 0) {
            out += static_cast<char>(t.cp_to_byte[cp]);
        } else {
            out.append(text.substr(i, n > 0 ? static_cast<size_t>(n) : 1));
        }
        i += n > 0 ? static_cast<size_t>(n) : 1;
    }
    return out;
}

}  // namespace flint::byte_level
