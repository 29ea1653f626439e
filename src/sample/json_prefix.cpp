#include "sample/json_prefix.h"

namespace flint {
namespace {

bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

bool JsonPrefix::feed(std::string_view bytes) {
    const JsonPrefix saved = *this;
    for (unsigned char c : bytes)
        if (!step(c)) {
            *this = saved;
            return false;
        }
    return true;
}

bool JsonPrefix::complete() const {
    if (mode_ == Mode::Done) return true;
    const bool number_can_end = mode_ == Mode::NumZero || mode_ == Mode::NumInt || mode_ == Mode::NumFrac || mode_ == Mode::NumExpDigits;
    return !object_only_ && stack_.empty() && number_can_end;
}

void JsonPrefix::signature(std::string& out) const {
    out.push_back(static_cast<char>(mode_));
    out.push_back(static_cast<char>(object_only_ | key_ << 1));
    out.push_back(static_cast<char>(hex_left_ | utf8_left_ << 4));
    out.push_back(static_cast<char>(low_next_ | surrogate_high_ << 1));
    // Inside \uXXXX the digits so far matter only while the second is due: was the first a D?
    if (mode_ == Mode::Unicode) out.push_back(static_cast<char>(hex_left_ == 3 && unit_ == 0xD));
    if (mode_ == Mode::Utf8) {  // which bytes may come next
        out.push_back(static_cast<char>(utf8_lo_));
        out.push_back(static_cast<char>(utf8_hi_));
    }
    out.push_back(static_cast<char>(whitespace_));
    out.push_back(literal_ ? literal_[0] : '\0');
    out.push_back(static_cast<char>(literal_pos_));
    out += stack_;
    out.push_back('|');
}

bool JsonPrefix::end_value() {
    mode_ = stack_.empty() ? Mode::Done : Mode::AfterValue;
    return true;
}

bool JsonPrefix::ends_number(unsigned char c) {
    end_value();
    return step(c);
}

bool JsonPrefix::start_value(unsigned char c) {
    if (object_only_ && stack_.empty() && c != '{') return false;
    switch (c) {
    case '{': stack_.push_back('{'); mode_ = Mode::KeyOrEnd; return true;
    case '[': stack_.push_back('['); mode_ = Mode::FirstInArray; return true;
    case '"': key_ = false; mode_ = Mode::String; return true;
    case 't': literal_ = "true"; break;
    case 'f': literal_ = "false"; break;
    case 'n': literal_ = "null"; break;
    case '-': mode_ = Mode::NumSign; return true;
    case '0': mode_ = Mode::NumZero; return true;
    default:
        if (c >= '1' && c <= '9') {
            mode_ = Mode::NumInt;
            return true;
        }
        return false;
    }
    literal_pos_ = 1;
    mode_ = Mode::Literal;
    return true;
}

bool JsonPrefix::step(unsigned char c) {
    switch (mode_) {
    case Mode::Value: case Mode::FirstInArray: case Mode::KeyOrEnd: case Mode::Key: case Mode::Colon:
    case Mode::AfterValue: case Mode::Done:
        if (is_ws(c)) return (mode_ != Mode::Value || !stack_.empty()) && ++whitespace_ <= kMaxWhitespace;
        whitespace_ = 0;
        break;
    default:
        break;
    }
    switch (mode_) {
    case Mode::Value: return start_value(c);
    case Mode::FirstInArray:
        if (c == ']') {
            stack_.pop_back();
            return end_value();
        }
        return start_value(c);
    case Mode::KeyOrEnd:
        if (c == '}') {
            stack_.pop_back();
            return end_value();
        }
        [[fallthrough]];
    case Mode::Key:
        if (c != '"') return false;
        key_ = true;
        mode_ = Mode::String;
        return true;
    case Mode::Colon:
        if (c != ':') return false;
        mode_ = Mode::Value;
        return true;
    case Mode::AfterValue:
        if (c == ',') {
            mode_ = stack_.back() == '{' ? Mode::Key : Mode::Value;
            return true;
        }
        if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
            stack_.pop_back();
            return end_value();
        }
        return false;
    case Mode::Done: return false;
    case Mode::String:
        if (low_next_ && c != '\\') return false;  // after a \u high surrogate, only its low half
        if (c == '"') {
            if (key_) {
                mode_ = Mode::Colon;
                return true;
            }
            return end_value();
        }
        if (c == '\\') {
            mode_ = Mode::Escape;
            return true;
        }
        if (c < 0x20) return false;  // control characters must be escaped
        if (c < 0x80) return true;
        // Well-formed UTF-8 only (RFC 3629): no overlong forms, no encoded surrogates, nothing past U+10FFFF;
        // the lead byte bounds the first continuation byte.
        utf8_lo_ = 0x80, utf8_hi_ = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) utf8_left_ = 1;
        else if (c >= 0xE0 && c <= 0xEF) utf8_left_ = 2;
        else if (c >= 0xF0 && c <= 0xF4) utf8_left_ = 3;
        else return false;
        if (c == 0xE0) utf8_lo_ = 0xA0;
        else if (c == 0xED) utf8_hi_ = 0x9F;
        else if (c == 0xF0) utf8_lo_ = 0x90;
        else if (c == 0xF4) utf8_hi_ = 0x8F;
        mode_ = Mode::Utf8;
        return true;
    case Mode::Utf8:
        if (c < utf8_lo_ || c > utf8_hi_) return false;
        utf8_lo_ = 0x80, utf8_hi_ = 0xBF;
        if (--utf8_left_ == 0) mode_ = Mode::String;
        return true;
    case Mode::Escape:
        if (c == 'u') {
            hex_left_ = 4;
            unit_ = 0;
            mode_ = Mode::Unicode;
            return true;
        }
        if (low_next_) return false;
        if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't') return false;
        mode_ = Mode::String;
        return true;
    case Mode::Unicode:
        if (!is_hex(c)) return false;
        unit_ = static_cast<uint16_t>(unit_ << 4 | (is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10));
        // Surrogates come in pairs (\uD8xx-\uDBxx, then \uDCxx-\uDFxx), as strict parsers require; judged
        // at the second digit, the first that can tell.
        if (hex_left_ == 4 && low_next_ && unit_ != 0xD) return false;
        if (hex_left_ == 3) {
            const bool high = unit_ >= 0xD8 && unit_ <= 0xDB, low = unit_ >= 0xDC && unit_ <= 0xDF;
            if (low != low_next_) return false;
            if (high) surrogate_high_ = true;
        }
        if (--hex_left_ == 0) {
            low_next_ = surrogate_high_ && !low_next_;
            surrogate_high_ = false;
            mode_ = Mode::String;
        }
        return true;
    case Mode::Literal:
        if (c != static_cast<unsigned char>(literal_[literal_pos_])) return false;
        if (literal_[++literal_pos_] == '\0') return end_value();
        return true;
    case Mode::NumSign:
        if (c == '0') mode_ = Mode::NumZero;
        else if (is_digit(c)) mode_ = Mode::NumInt;
        else return false;
        return true;
    case Mode::NumZero: case Mode::NumInt:
        if (mode_ == Mode::NumInt && is_digit(c)) return true;
        if (c == '.') mode_ = Mode::NumDot;
        else if (c == 'e' || c == 'E') mode_ = Mode::NumExp;
        else return ends_number(c);
        return true;
    case Mode::NumDot:
        if (!is_digit(c)) return false;
        mode_ = Mode::NumFrac;
        return true;
    case Mode::NumFrac:
        if (is_digit(c)) return true;
        if (c == 'e' || c == 'E') {
            mode_ = Mode::NumExp;
            return true;
        }
        return ends_number(c);
    case Mode::NumExp:
        if (c == '+' || c == '-') mode_ = Mode::NumExpSign;
        else if (is_digit(c)) mode_ = Mode::NumExpDigits;
        else return false;
        return true;
    case Mode::NumExpSign:
        if (!is_digit(c)) return false;
        mode_ = Mode::NumExpDigits;
        return true;
    case Mode::NumExpDigits:
        if (is_digit(c)) return true;
        return ends_number(c);
    }
    return false;
}

}  // namespace flint
