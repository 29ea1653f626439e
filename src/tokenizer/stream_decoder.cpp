// Streaming detokenization: a token may end in the middle of a UTF-8 character (byte-fallback tokens in
// SPM, partial byte-level tokens in BPE). push() emits only complete, valid UTF-8 and keeps the
// incomplete tail for the next token, so a client never sees a broken character.
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace flint {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}

StreamDecoder::StreamDecoder(const Tokenizer& tok) : tok_(tok) {}

std::string StreamDecoder::push(TokenId id) { return push_bytes(tok_.piece(id)); }

std::string StreamDecoder::push_bytes(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    out.reserve(pending_.size());
    size_t i = 0;
    while (i < pending_.size()) {
        const int n = utf8::sequence_length(std::string_view(pending_).substr(i));
        if (n > 0) {
            out.append(pending_, i, static_cast<size_t>(n));
            i += static_cast<size_t>(n);
        } else if (n < 0) {
            break;  // a valid start that needs more bytes: hold it back
        } else {
            out += kReplacement;  // can never become valid
            ++i;
        }
    }
    pending_.erase(0, i);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = utf8::sanitize(pending_);
    pending_.clear();
    return out;
}

}  // namespace flint
