// flint/util/utf8.h — where UTF-8 must be checked outside the tokenizer: messages that quote file bytes
// (util/error.h) and text files the client sends (client/files.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flint {

// The length (1-4) of the well-formed UTF-8 character at s[i], or 0 where none starts there: a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate or a code point past U+10FFFF.
inline size_t utf8_char_len(std::string_view s, size_t i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return 0;
    if (i + len > s.size()) return 0;
    for (size_t k = 1; k < len; ++k) {
        const unsigned char d = static_cast<unsigned char>(s[i + k]);
        if ((d & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (d & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

inline bool valid_utf8(std::string_view s) {
    for (size_t i = 0, n; i < s.size(); i += n)
        if ((n = utf8_char_len(s, i)) == 0) return false;
    return true;
}

}  // namespace flint
