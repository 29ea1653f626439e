#include "tokenizer/spm.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace flint {
namespace {

struct Symbol {
    uint32_t start, len;  // byte range in the text; len 0: merged away
    int32_t prev, next;
};

struct Candidate {
    float score;
    int32_t left, right;
    uint32_t len;  // combined length when pushed: a mismatch means a side has changed
    bool operator<(const Candidate& o) const { return score != o.score ? score < o.score : left > o.left; }
};

}  // namespace

std::string escape_spm_whitespace(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    for (char c : text) {
        if (c == ' ') out += "\xE2\x96\x81";
        else out += c;
    }
    return out;
}

SpmModel::SpmModel(const Vocab& vocab) : vocab_(vocab) {
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        TokenId id = vocab.find(hex);
        if (id < 0) id = vocab.find(std::string(1, static_cast<char>(b)));  // vocabs with raw byte pieces
        byte_token_[b] = id;
    }
}

void SpmModel::encode(std::string_view text, std::vector<TokenId>& out) const {
    if (text.empty()) return;
    std::vector<Symbol> sym;
    sym.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        // Invalid UTF-8 bytes become one-byte symbols and leave as byte tokens.
        const int n = utf8::sequence_length(text.substr(i));
        const uint32_t len = n > 0 ? static_cast<uint32_t>(n) : 1u;
        const auto idx = static_cast<int32_t>(sym.size());
        sym.push_back(Symbol{static_cast<uint32_t>(i), len, idx - 1, -1});
        if (idx > 0) sym[idx - 1].next = idx;
        i += len;
    }

    std::vector<Candidate> heap;
    auto consider = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t len = sym[l].len + sym[r].len;
        const TokenId id = vocab_.find(text.substr(sym[l].start, len));
        if (id < 0) return;
        heap.push_back(Candidate{vocab_.score[id], l, r, len});
        std::push_heap(heap.begin(), heap.end());
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) consider(i, i + 1);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end());
        const Candidate c = heap.back();
        heap.pop_back();
        Symbol& l = sym[c.left];
        Symbol& r = sym[c.right];
        if (l.len == 0 || r.len == 0 || l.len + r.len != c.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = c.left;
        consider(l.prev, c.left);
        consider(c.left, l.next);
    }

    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        const std::string_view piece = text.substr(sym[i].start, sym[i].len);
        if (TokenId id = vocab_.find(piece); id >= 0) {
            out.push_back(id);
            continue;
        }
        const bool bytes_ok = std::all_of(piece.begin(), piece.end(), [&](char ch) { return byte_token_[static_cast<uint8_t>(ch)] >= 0; });
        if (bytes_ok) {
            for (char ch : piece) out.push_back(byte_token_[static_cast<uint8_t>(ch)]);
        } else if (vocab_.unk >= 0) {
            out.push_back(vocab_.unk);  // no byte fallback in this vocab: one unknown per character
        }
    }
}

}  // namespace flint
