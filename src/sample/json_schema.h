// flint/sample/json_schema.h — does this text start a JSON value that fits a schema? ("json_schema" output)
//
// A JSON Schema, compiled (server/output_format.cpp) to a small graph of plain nodes, and a byte-level
// recogniser over it for constrained decoding: fed incrementally, it says whether the output so far is a
// prefix of some JSON text that the schema accepts, and whether it is already complete. Strings, numbers and
// literals are checked by JsonPrefix (json_prefix.h); objects, arrays, keys, enums and alternatives here.
// Whitespace follows JsonPrefix's rules: none before the value, at most kMaxWhitespace bytes in a row.
//
// What a node can say: a type (object with named properties, required ones and whether others are allowed;
// array with an item schema and a count range; string, number, integer, boolean, null), a set of exact
// values (enum/const), alternatives (anyOf, or a list of types), or anything. Several readings of the text
// can be alive at once (anyOf): the recogniser keeps each as a thread, as an NFA does.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sample/json_prefix.h"

namespace flint {

struct JsonSchemaNode {
    enum class Kind : uint8_t { Any, Object, Array, String, Number, Integer, Boolean, Null, Enum, AnyOf };
    Kind kind = Kind::Any;
    // Object: properties (at most kMaxProperties), which are required, and whether other keys may appear
    // (their values are then `additional`).
    std::vector<std::string> names{};
    std::vector<int> props{};        // node of each name
    uint64_t required = 0;           // bit i: names[i] is required
    bool allow_additional = true;
    int additional = 0;              // node for other keys' values (0 is always an Any node)
    // Array: the item schema and how many items.
    int items = 0;
    int min_items = 0, max_items = -1;  // -1: no limit
    // Enum: each allowed value as compact JSON text.
    std::vector<std::string> values{};
    // AnyOf: the alternatives.
    std::vector<int> options{};
};

struct JsonSchema {
    static constexpr int kMaxProperties = 64;
    std::vector<JsonSchemaNode> nodes{JsonSchemaNode{}};  // nodes[0]: Any
    int root = 0;

    int add(JsonSchemaNode n) {
        nodes.push_back(std::move(n));
        return static_cast<int>(nodes.size()) - 1;
    }
    // {"type": "object"}: any object (OpenAI's "json_object" output).
    static std::shared_ptr<const JsonSchema> any_object();
};

class JsonSchemaPrefix {
public:
    static constexpr int kMaxWhitespace = JsonPrefix::kMaxWhitespace;
    static constexpr int kMaxDepth = 64;    // nested values (a recursive schema could otherwise go on forever)
    static constexpr int kMaxThreads = 64;  // readings kept alive at once

    explicit JsonSchemaPrefix(std::shared_ptr<const JsonSchema> schema);

    // Appends `bytes` if the result is still a prefix of a text the schema accepts (true); otherwise leaves
    // the state as it was.
    bool feed(std::string_view bytes);
    // Whether feed(bytes) would succeed; the state is not changed.
    bool accepts(std::string_view bytes) const;
    // The text so far is a complete value the schema accepts (trailing whitespace allowed).
    bool complete() const;
    // Identifies the state: equal signatures accept exactly the same continuations (a cache key for the
    // set of tokens that fit; text inside a free string does not change it).
    std::string signature() const;

private:
    struct Frame {
        int node = 0;
        uint8_t phase = 0;   // Object / Array: where in the container (see the .cpp)
        int prop = -1;       // Object: the property whose value comes next (-1: an additional key)
        uint64_t seen = 0;   // Object: properties already given
        int count = 0;       // Array: items started
        std::string text;    // Object: the key being read; Enum: the value so far
        JsonPrefix leaf{false};  // strings, numbers, literals, Any; and a key's string syntax
    };
    struct Thread {
        std::vector<Frame> frames;  // empty: the top value is complete (once started)
        int whitespace = 0;         // whitespace bytes in a row outside strings
        bool started = false;
    };

    bool value_complete(const Frame& f) const;  // the value in this frame could end here
    bool run(std::string_view bytes, std::vector<Thread>& cur) const;  // cur: threads_ → after bytes
    void advance(Thread t, unsigned char c, std::vector<Thread>& out) const;
    void start_value(Thread t, int node, unsigned char c, std::vector<Thread>& out, int hops = 0) const;
    void step_object(Thread& t, unsigned char c, std::vector<Thread>& out) const;
    void step_array(Thread& t, unsigned char c, std::vector<Thread>& out) const;

    std::shared_ptr<const JsonSchema> schema_;
    std::vector<Thread> threads_;
};

}  // namespace flint
