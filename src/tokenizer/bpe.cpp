#include "tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <string>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace flint {
namespace {

inline uint64_t pair_key(TokenId l, TokenId r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}
inline uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

struct Symbol {
    TokenId id;  // -2: merged away
    int32_t prev, next;
};

struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index
    TokenId left_id, right_id, merged;
    // std heap is a max-heap: "greater" means lower priority.
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

// Reused across calls on one thread: a 100 KB prompt has tens of thousands of pieces.
struct Scratch {
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string encoded;
};
Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// Per-thread piece → ids cache, for one BpeModel at a time (keyed by its instance number, which is never
// reused, so a model destroyed and another created at the same address cannot see stale entries).
struct PieceCache {
    static constexpr size_t kMaxPiece = 32;       // longer pieces are rare and not worth keeping
    static constexpr size_t kMaxEntries = 1 << 16;  // then start over: bounded memory per thread
    uint64_t owner = 0;
    std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> index;  // piece → (offset, count) in ids
    std::vector<TokenId> ids;
    void reset(uint64_t new_owner) {
        owner = new_owner;
        index.clear();
        ids.clear();
    }
};
PieceCache& piece_cache() {
    thread_local PieceCache c;
    return c;
}

std::atomic<uint64_t> g_next_instance{1};

}  // namespace

BpeModel::BpeModel(const Vocab& vocab) : vocab_(vocab), instance_(g_next_instance.fetch_add(1)) {
    for (int b = 0; b < 256; ++b) byte_token_[b] = vocab.find(byte_level::encode_byte(static_cast<uint8_t>(b)));

    size_t cap = 16;
    while (cap < vocab.merges.size() * 2) cap <<= 1;
    table_.assign(cap, Merge{});
    mask_ = cap - 1;
    std::string joined;
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        const std::string_view m = vocab.merges[rank];
        // The separator is the first space after the first character (a part is never empty).
        const size_t sp = m.find(' ', 1);
        if (sp == std::string_view::npos) fail("tokenizer.ggml.merges[", rank, "] = \"", m, "\": expected \"left right\"");
        const std::string_view l = m.substr(0, sp), r = m.substr(sp + 1);
        const TokenId lid = vocab.find(l), rid = vocab.find(r);
        joined.assign(l);
        joined.append(r);
        const TokenId mid = vocab.find(joined);
        // A merge whose parts or result are not tokens can never fire on token ids; the reference engines
        // would produce an unknown piece there and fall back to bytes. Skipping it gives the same tokens.
        if (lid < 0 || rid < 0 || mid < 0) continue;
        if (!find(lid, rid)) {  // the first (lowest) rank wins for duplicates
            insert(lid, rid, static_cast<int32_t>(rank), mid);
            ++n_merges_;
        }
    }
}

const BpeModel::Merge* BpeModel::find(TokenId left, TokenId right) const {
    const uint64_t key = pair_key(left, right);
    for (uint64_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
        const Merge& m = table_[i];
        if (m.key == key) return &m;
        if (m.key == ~0ull) return nullptr;
    }
}

void BpeModel::insert(TokenId left, TokenId right, int32_t rank, TokenId merged) {
    const uint64_t key = pair_key(left, right);
    uint64_t i = mix(key) & mask_;
    while (table_[i].key != ~0ull) i = (i + 1) & mask_;
    table_[i] = Merge{key, rank, merged};
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<TokenId>& out) const {
    if (bytes.size() <= 1 || bytes.size() > PieceCache::kMaxPiece) return merge_piece(bytes, out);
    PieceCache& c = piece_cache();
    if (c.owner != instance_ || c.index.size() >= PieceCache::kMaxEntries) c.reset(instance_);
    thread_local std::string key;
    key.assign(bytes);
    if (auto it = c.index.find(key); it != c.index.end()) {
        out.insert(out.end(), c.ids.begin() + it->second.first, c.ids.begin() + it->second.first + it->second.second);
        return;
    }
    const size_t first = out.size();
    merge_piece(bytes, out);
    c.index.emplace(key, std::make_pair(static_cast<uint32_t>(c.ids.size()), static_cast<uint32_t>(out.size() - first)));
    c.ids.insert(c.ids.end(), out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

void BpeModel::merge_piece(std::string_view bytes, std::vector<TokenId>& out) const {
    if (bytes.empty()) return;
    auto& sc = scratch();
    if (vocab_.ignore_merges) {
        sc.encoded.clear();
        byte_level::encode(bytes, sc.encoded);
        if (TokenId id = vocab_.find(sc.encoded); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    if (bytes.size() == 1) {
        if (TokenId id = byte_token_[static_cast<uint8_t>(bytes[0])]; id >= 0) out.push_back(id);
        return;
    }

    auto& sym = sc.symbols;
    auto& heap = sc.heap;
    const int32_t n = static_cast<int32_t>(bytes.size());
    sym.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) sym[i] = Symbol{byte_token_[static_cast<uint8_t>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1};

    heap.clear();
    auto consider = [&](int32_t l) {
        if (l < 0) return;
        const int32_t r = sym[l].next;
        if (r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
        if (const Merge* m = find(sym[l].id, sym[r].id)) {
            heap.push_back(Candidate{m->rank, l, sym[l].id, sym[r].id, m->merged});
            std::push_heap(heap.begin(), heap.end());
        }
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end());
        const Candidate c = heap.back();
        heap.pop_back();
        Symbol& l = sym[c.left];
        // Stale if either side changed since the candidate was pushed.
        if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;
        Symbol& r = sym[l.next];
        l.id = c.merged;
        r.id = -2;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = c.left;
        consider(l.prev);
        consider(c.left);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (sym[i].id >= 0) out.push_back(sym[i].id);
}

}  // namespace flint
