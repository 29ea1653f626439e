// flint/sample/json_prefix.h — does this text start a JSON value? (the syntax under constrained decoding)
//
// A byte-level recogniser of one JSON value (RFC 8259: objects, arrays, strings with escapes and UTF-8,
// numbers, true/false/null), fed incrementally: whether the bytes so far are a prefix of some valid JSON
// text, and whether they are already a complete value. Strings are held to what strict parsers take:
// well-formed UTF-8 (RFC 3629) and \u surrogates in pairs. JsonSchemaPrefix (json_schema.h) runs one per
// string, number, literal or unconstrained value. With object_only the value must be an object. Whitespace is
// bounded so that a model cannot pad forever with newlines: none before the value, at most kMaxWhitespace
// bytes in a row inside it (enough for pretty-printing seven levels deep).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace flint {

class JsonPrefix {
public:
    static constexpr int kMaxWhitespace = 16;

    explicit JsonPrefix(bool object_only = true) : object_only_(object_only) {}

    // Appends `bytes` if the result is still a JSON prefix (true); otherwise leaves the state as it was.
    bool feed(std::string_view bytes);
    // The text so far is one complete value (trailing whitespace allowed).
    bool complete() const;
    // Appends bytes that identify the state: equal signatures accept exactly the same continuations.
    void signature(std::string& out) const;

private:
    enum class Mode : uint8_t {
        Value,          // a value must come next
        FirstInArray,   // after '[': a value or ']'
        KeyOrEnd,       // after '{': '"' or '}'
        Key,            // after ',' in an object: '"'
        Colon,          // after a key
        AfterValue,     // ',' or the container's closer (or nothing more at the top)
        String,         // inside a string (key_ says which kind)
        Escape,         // after '\'
        Unicode,        // inside \uXXXX (hex_left_ digits to go)
        Utf8,           // inside a multi-byte character (utf8_left_ continuation bytes to go)
        Literal,        // inside true/false/null
        NumSign,        // after '-'
        NumZero,        // a leading 0
        NumInt,         // integer digits
        NumDot,         // after '.'
        NumFrac,        // fraction digits
        NumExp,         // after 'e'/'E'
        NumExpSign,     // after the exponent's sign
        NumExpDigits,   // exponent digits
        Done,           // the top-level value is complete
    };

    bool step(unsigned char c);
    bool start_value(unsigned char c);
    bool end_value();        // a value just ended: AfterValue, or Done at the top
    bool ends_number(unsigned char c);  // a byte after a number's last digit

    bool object_only_;
    Mode mode_ = Mode::Value;
    std::string stack_;      // open containers: '{' or '['
    bool key_ = false;       // the current string is an object key
    int hex_left_ = 0, utf8_left_ = 0;
    uint16_t unit_ = 0;                  // the \u escape's hex digits so far
    uint8_t utf8_lo_ = 0x80, utf8_hi_ = 0xBF;  // the range of the next UTF-8 continuation byte
    bool surrogate_high_ = false;        // the \u escape being read is a high surrogate
    bool low_next_ = false;              // after a high surrogate: a \u low surrogate must come next
    const char* literal_ = nullptr;  // "true", "false" or "null"
    int literal_pos_ = 0;
    int whitespace_ = 0;     // whitespace bytes in a row outside strings
};

}  // namespace flint
