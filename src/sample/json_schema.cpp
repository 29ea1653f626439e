#include "sample/json_schema.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace flint {
namespace {

using Kind = JsonSchemaNode::Kind;

// Where an object's frame is: after '{' (a key or '}'), after ',' (a key), inside a key, after a key (':'),
// before a value, after a value (',' or '}').
enum ObjectPhase : uint8_t { kKeyOrEnd, kKey, kInKey, kColon, kValue, kAfterMember };
// Where an array's frame is: after '[' (an item or ']'), after ',' (an item), after an item (',' or ']').
enum ArrayPhase : uint8_t { kItemOrEnd, kItem, kAfterItem };

bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool starts_leaf(Kind k, unsigned char c) {
    switch (k) {
    case Kind::String: return c == '"';
    case Kind::Number: case Kind::Integer: return c == '-' || (c >= '0' && c <= '9');
    case Kind::Boolean: return c == 't' || c == 'f';
    case Kind::Null: return c == 'n';
    default: return true;  // Any: whatever JsonPrefix takes
    }
}

uint64_t all_of(size_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// A key's text as written (between the quotes, escapes checked by JsonPrefix) → the name it stands for:
// "\u0061" is the key "a", and must meet property a's schema.
std::string unescape(std::string_view raw) {
    auto hex4 = [&](size_t at) {
        uint32_t v = 0;
        for (size_t k = at; k < at + 4; ++k) {
            const char c = raw[k];
            v = v << 4 | static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return v;
    };
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\') {
            out.push_back(raw[i]);
            continue;
        }
        const char e = raw[++i];
        if (e != 'u') {
            static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
            out.push_back(kTo[kFrom.find(e)]);
            continue;
        }
        uint32_t cp = hex4(i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: JsonPrefix saw its low half follow
            cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(i + 3) - 0xDC00);
            i += 6;
        }
        utf8::append(out, cp);
    }
    return out;
}

}  // namespace

std::shared_ptr<const JsonSchema> JsonSchema::any_object() {
    static const std::shared_ptr<const JsonSchema> schema = [] {
        auto s = std::make_shared<JsonSchema>();
        JsonSchemaNode obj;
        obj.kind = Kind::Object;
        s->root = s->add(obj);
        return s;
    }();
    return schema;
}

JsonSchemaPrefix::JsonSchemaPrefix(std::shared_ptr<const JsonSchema> schema) : schema_(std::move(schema)) {
    threads_.emplace_back();
}

bool JsonSchemaPrefix::run(std::string_view bytes, std::vector<Thread>& cur) const {
    std::vector<Thread> next;
    for (unsigned char c : bytes) {
        next.clear();
        for (Thread& t : cur) advance(std::move(t), c, next);
        if (next.empty()) return false;
        if (next.size() > kMaxThreads) next.resize(kMaxThreads);
        cur.swap(next);
    }
    return true;
}

bool JsonSchemaPrefix::feed(std::string_view bytes) {
    std::vector<Thread> cur = threads_;
    if (!run(bytes, cur)) return false;
    threads_ = std::move(cur);
    return true;
}

bool JsonSchemaPrefix::accepts(std::string_view bytes) const {
    std::vector<Thread> cur = threads_;
    return run(bytes, cur);
}

bool JsonSchemaPrefix::value_complete(const Frame& f) const {
    const JsonSchemaNode& n = schema_->nodes[f.node];
    switch (n.kind) {
    case Kind::Object: case Kind::Array: case Kind::AnyOf: return false;  // (their frames leave at the closer)
    case Kind::Enum: return std::find(n.values.begin(), n.values.end(), f.text) != n.values.end();
    default: return f.leaf.complete();
    }
}

bool JsonSchemaPrefix::complete() const {
    // A top-level string, number, literal or enum value keeps its frame until a byte after it.
    return std::any_of(threads_.begin(), threads_.end(), [&](const Thread& t) {
        return t.started && (t.frames.empty() || (t.frames.size() == 1 && value_complete(t.frames[0])));
    });
}

std::string JsonSchemaPrefix::signature() const {
    std::string s;
    auto put = [&s](const auto& v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
    for (const Thread& t : threads_) {
        put(t.whitespace);
        put(t.started);
        for (const Frame& f : t.frames) {
            put(f.node);
            put(f.phase);
            put(f.prop);
            put(f.seen);
            const JsonSchemaNode& n = schema_->nodes[f.node];
            if (n.min_items > 0 || n.max_items >= 0) put(f.count);  // (a count nothing limits changes nothing)
            const uint32_t len = static_cast<uint32_t>(f.text.size());
            put(len);
            s += f.text;
            f.leaf.signature(s);
        }
        s.push_back('#');
    }
    return s;
}

// One byte for one reading of the text: its successors go to `out` (none: this reading ends here).
void JsonSchemaPrefix::advance(Thread t, unsigned char c, std::vector<Thread>& out) const {
    if (!t.started) {  // no whitespace before the value
        t.started = true;
        if (!is_ws(c)) start_value(std::move(t), schema_->root, c, out);
        return;
    }
    if (t.frames.empty()) {  // the value is complete: trailing whitespace only
        if (is_ws(c) && ++t.whitespace <= kMaxWhitespace) out.push_back(std::move(t));
        return;
    }
    Frame& f = t.frames.back();
    const JsonSchemaNode& n = schema_->nodes[f.node];
    switch (n.kind) {
    case Kind::Object: step_object(t, c, out); return;
    case Kind::Array: step_array(t, c, out); return;
    case Kind::Enum: {
        f.text.push_back(static_cast<char>(c));
        for (const std::string& v : n.values)
            if (v.starts_with(f.text)) {
                out.push_back(std::move(t));
                return;
            }
        f.text.pop_back();
        if (!value_complete(f)) return;
        break;  // the value is complete: the byte is the container's
    }
    default: {  // strings, numbers, literals, anything
        // Whitespace after a complete value is the container's (it counts it), not the value's.
        const bool fraction = c == '.' || c == 'e' || c == 'E';
        const bool after = is_ws(c) && f.leaf.complete();
        if (!after && !(n.kind == Kind::Integer && fraction) && f.leaf.feed(std::string_view(reinterpret_cast<const char*>(&c), 1))) {
            out.push_back(std::move(t));
            return;
        }
        if (!value_complete(f)) return;
        break;  // the value is complete: the byte is the container's
    }
    }
    t.frames.pop_back();
    advance(std::move(t), c, out);
}

// A value starts with `c` where the schema expects `node` (several readings for alternatives).
// `hops`: alternatives followed so far (an anyOf that reaches itself through alternatives ends here).
void JsonSchemaPrefix::start_value(Thread t, int node, unsigned char c, std::vector<Thread>& out, int hops) const {
    if (static_cast<int>(t.frames.size()) >= kMaxDepth || hops > kMaxDepth) return;
    const JsonSchemaNode& n = schema_->nodes[node];
    Frame f;
    f.node = node;
    switch (n.kind) {
    case Kind::AnyOf:
        for (int o : n.options) start_value(t, o, c, out, hops + 1);
        return;
    case Kind::Object:
        if (c != '{') return;
        f.phase = kKeyOrEnd;
        break;
    case Kind::Array:
        if (c != '[') return;
        f.phase = kItemOrEnd;
        break;
    case Kind::Enum:
        if (std::none_of(n.values.begin(), n.values.end(), [c](const std::string& v) { return !v.empty() && static_cast<unsigned char>(v[0]) == c; }))
            return;
        f.text.assign(1, static_cast<char>(c));
        break;
    default:
        if (!starts_leaf(n.kind, c) || !f.leaf.feed(std::string_view(reinterpret_cast<const char*>(&c), 1))) return;
        break;
    }
    t.whitespace = 0;
    t.frames.push_back(std::move(f));
    out.push_back(std::move(t));
}

void JsonSchemaPrefix::step_object(Thread& t, unsigned char c, std::vector<Thread>& out) const {
    Frame& f = t.frames.back();
    const JsonSchemaNode& n = schema_->nodes[f.node];
    if (f.phase != kInKey) {
        if (is_ws(c)) {
            if (++t.whitespace <= kMaxWhitespace) out.push_back(std::move(t));
            return;
        }
        t.whitespace = 0;
    }
    switch (f.phase) {
    case kKeyOrEnd:
        if (c == '}') {
            if (n.required) return;
            t.frames.pop_back();
            out.push_back(std::move(t));
            return;
        }
        [[fallthrough]];
    case kKey:
        if (c != '"') return;
        f.phase = kInKey;
        f.text.clear();
        f.leaf = JsonPrefix(false);
        f.leaf.feed("\"");
        out.push_back(std::move(t));
        return;
    case kInKey: {
        JsonPrefix closed = f.leaf;
        if (c == '"' && closed.feed("\"") && closed.complete()) {  // the key ends (not an escaped quote)
            // (Escapes only where other keys are allowed: a strict object's keys are its names, which the
            // compiler takes only when they need none.)
            const std::string name = f.text.find('\\') == std::string::npos ? f.text : unescape(f.text);
            const auto it = std::find(n.names.begin(), n.names.end(), name);
            if (it != n.names.end()) {
                const int i = static_cast<int>(it - n.names.begin());
                if (f.seen >> i & 1) return;  // given twice
                f.prop = i;
                f.seen |= uint64_t{1} << i;
            } else if (n.allow_additional) {
                f.prop = -1;
            } else {
                return;
            }
            f.phase = kColon;
            out.push_back(std::move(t));
            return;
        }
        if ((c == '\\' && !n.allow_additional) || !f.leaf.feed(std::string_view(reinterpret_cast<const char*>(&c), 1))) return;
        f.text.push_back(static_cast<char>(c));
        if (!n.allow_additional) {
            bool possible = false;
            for (size_t i = 0; i < n.names.size() && !possible; ++i)
                possible = !(f.seen >> i & 1) && n.names[i].starts_with(f.text);
            if (!possible) return;
        }
        out.push_back(std::move(t));
        return;
    }
    case kColon:
        if (c != ':') return;
        f.phase = kValue;
        out.push_back(std::move(t));
        return;
    case kValue: {
        f.phase = kAfterMember;
        const int child = f.prop >= 0 ? n.props[f.prop] : n.additional;
        start_value(std::move(t), child, c, out);
        return;
    }
    case kAfterMember:
        if (c == ',') {
            if (!n.allow_additional && (f.seen & all_of(n.names.size())) == all_of(n.names.size())) return;  // nothing left to give
            f.phase = kKey;
            out.push_back(std::move(t));
        } else if (c == '}' && (f.seen & n.required) == n.required) {
            t.frames.pop_back();
            out.push_back(std::move(t));
        }
        return;
    }
}

void JsonSchemaPrefix::step_array(Thread& t, unsigned char c, std::vector<Thread>& out) const {
    Frame& f = t.frames.back();
    const JsonSchemaNode& n = schema_->nodes[f.node];
    if (is_ws(c)) {
        if (++t.whitespace <= kMaxWhitespace) out.push_back(std::move(t));
        return;
    }
    t.whitespace = 0;
    const bool room = n.max_items < 0 || f.count < n.max_items;
    switch (f.phase) {
    case kItemOrEnd:
        if (c == ']') {
            if (n.min_items > 0) return;
            t.frames.pop_back();
            out.push_back(std::move(t));
            return;
        }
        [[fallthrough]];
    case kItem:
        if (!room) return;
        ++f.count;
        f.phase = kAfterItem;
        start_value(std::move(t), n.items, c, out);
        return;
    case kAfterItem:
        if (c == ',' && room) {
            f.phase = kItem;
            out.push_back(std::move(t));
        } else if (c == ']' && f.count >= n.min_items) {
            t.frames.pop_back();
            out.push_back(std::move(t));
        }
        return;
    }
}

}  // namespace flint
