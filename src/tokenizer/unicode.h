// flint/tokenizer/unicode.h — the few UTF-8 facts the tokenizer needs, and GPT-2's byte↔unicode map.
//
// Byte-level BPE (GPT-2, Qwen2, Llama 3…) never sees raw bytes: every byte is first mapped to a printable
// code point (printable Latin-1 bytes map to themselves, the other 68 to U+0100…), so that vocab strings
// and merges are plain, whitespace-free UTF-8. Decoding maps those code points back to bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace flint::utf8 {

// Length of the UTF-8 sequence starting at s[0] if it is complete and valid (1..4), 0 if invalid,
// and -k (k > 0) when it is a valid but truncated start: k more bytes are needed.
int sequence_length(std::string_view s);

// Length of the sequence a lead byte announces (1 for ASCII and for bytes that cannot start one).
inline size_t lead_length(uint8_t c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

void append(std::string& out, uint32_t cp);
bool is_valid(std::string_view s);

// Replaces every invalid byte with U+FFFD; valid text is returned unchanged.
std::string sanitize(std::string_view s);

}  // namespace flint::utf8

namespace flint::byte_level {

// The UTF-8 text of the code point GPT-2 assigns to byte b (1 or 2 bytes).
std::string_view encode_byte(uint8_t b);
// Appends the byte-level encoding of raw bytes.
void encode(std::string_view bytes, std::string& out);
// Maps byte-level text back to raw bytes. Code points outside the map are copied through unchanged
// (they appear only in added tokens, which are not byte-level encoded).
std::string decode(std::string_view text);

}  // namespace flint::byte_level
