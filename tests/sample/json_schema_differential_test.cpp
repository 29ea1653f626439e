// JsonSchemaPrefix against an independent reading of the schema, on seeded random schemas (every keyword
// the compiler takes: type and type lists, properties, required, additionalProperties as a boolean or a
// schema, items, minItems, maxItems, enum, const, anyOf) and texts:
//   - a random instance of the schema, written compactly or pretty-printed, is accepted whole and complete
//     at its end;
//   - any text — instances mutated byte by byte, and instances of other schemas — that the recogniser calls
//     complete parses (nlohmann::json) and validates against the schema (validate() below, written from the
//     JSON Schema rules, not from the recogniser);
//   - refusals keep the state, chunked feeding agrees with byte-wise, equal signatures take the same bytes
//     (json_oracle.h).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "json_oracle.h"
#include "server/output_format.h"

namespace flint {
namespace {

using nlohmann::json;

class SchemaGenerator {
public:
    explicit SchemaGenerator(uint32_t seed) : rng_(seed) {}
    uint32_t pick(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

    json root() { return object(0); }

    // A value that fits `s`.
    json instance(const json& s, int depth = 0) {
        if (s.is_boolean() || s.empty()) return any_value(depth);
        if (s.contains("anyOf")) return instance(s["anyOf"][pick(s["anyOf"].size())], depth);
        if (s.contains("enum")) return s["enum"][pick(s["enum"].size())];
        if (s.contains("const")) return s["const"];
        const json& t = s["type"];
        const std::string type = t.is_array() ? t[pick(t.size())].get<std::string>() : t.get<std::string>();
        if (type == "object") {
            json o = json::object();
            const json& props = s.value("properties", json::object());
            const json& req = s.value("required", json::array());
            for (const auto& [name, sub] : props.items()) {
                const bool required = std::find(req.begin(), req.end(), json(name)) != req.end();
                if (required || pick(2)) o[name] = instance(sub, depth + 1);
            }
            const json add = s.value("additionalProperties", json(true));
            if (const std::string k = extra_key(); !(add.is_boolean() && !add.get<bool>()) && !props.contains(k) && pick(3) == 0)
                o[k] = instance(add, depth + 1);
            return o;
        }
        if (type == "array") {
            const int lo = s.value("minItems", 0), hi = s.value("maxItems", lo + 3);
            json a = json::array();
            for (int n = lo + static_cast<int>(pick(static_cast<uint32_t>(hi - lo + 1))); n > 0; --n)
                a.push_back(instance(s.value("items", json::object()), depth + 1));
            return a;
        }
        return leaf(type);
    }

private:
    json object(int depth) {
        json s = {{"type", "object"}};
        json props = json::object(), req = json::array();
        static const char* kNames[] = {"a", "ab", "b", "name", "é", "a b"};
        for (int n = pick(4); n > 0; --n) {
            const std::string name = kNames[pick(6)];
            props[name] = schema(depth + 1);
            if (pick(2)) req.push_back(name);
        }
        if (!props.empty()) s["properties"] = props;
        if (!req.empty()) s["required"] = req;
        switch (pick(3)) {
        case 0: s["additionalProperties"] = false; break;
        case 1: s["additionalProperties"] = schema(depth + 1); break;
        default: break;
        }
        return s;
    }

    json schema(int depth) {
        static const char* kLeaves[] = {"string", "number", "integer", "boolean", "null"};
        switch (pick(depth < 3 ? 9 : 5)) {
        case 0: case 1: return {{"type", kLeaves[pick(5)]}};
        case 2: {  // enum of values that prefix one another
            json e = json::array();
            static const json kValues[] = {"a", "ab", "", 1, 12, -1, 1.5, true, false, nullptr, "é", "a\"b"};
            for (int n = 1 + pick(3); n > 0; --n) e.push_back(kValues[pick(12)]);
            return pick(4) ? json{{"enum", e}} : json{{"const", e[0]}};
        }
        case 3: return {{"type", {kLeaves[pick(5)], kLeaves[pick(5)]}}};
        case 4: return json::object();  // anything
        case 5: case 6: return object(depth);
        case 7: {
            json a = {{"type", "array"}, {"items", schema(depth + 1)}};
            if (pick(2)) a["minItems"] = pick(2);
            if (pick(2)) a["maxItems"] = a.value("minItems", 0) + pick(3);
            return a;
        }
        default: return {{"anyOf", {schema(depth + 1), schema(depth + 1)}}};
        }
    }

    std::string extra_key() {
        static const char* kKeys[] = {"x", "a", "ab", "zz", "\u00e9t\u00e9", "a\nb"};
        return kKeys[pick(6)];
    }

    json leaf(const std::string& type) {
        if (type == "string") {
            static const char* kStrings[] = {"", "x", "hello world", "\u00e9\u20ac\U0001F600", "q\"uote", "new\nline", "back\\slash"};
            return kStrings[pick(7)];
        }
        if (type == "number") return pick(2) ? json(static_cast<int>(pick(2000)) - 1000) : json((static_cast<int>(pick(2000)) - 1000) / 8.0);
        if (type == "integer") return static_cast<int>(pick(200000)) - 100000;
        if (type == "boolean") return pick(2) == 1;
        return nullptr;
    }

    json any_value(int depth) {
        switch (pick(depth < 3 ? 6 : 4)) {
        case 0: return leaf("string");
        case 1: return leaf("number");
        case 2: return pick(2) ? json(nullptr) : json(true);
        case 3: return leaf("integer");
        case 4: return json{{"k", any_value(depth + 1)}};
        default: return json::array({any_value(depth + 1), any_value(depth + 1)});
        }
    }

    std::mt19937 rng_;
};

// Whether `v` fits `s`, from the JSON Schema rules for the keywords the generator writes.
bool validate(const json& s, const json& v) {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("anyOf"))
        return std::any_of(s["anyOf"].begin(), s["anyOf"].end(), [&](const json& o) { return validate(o, v); });
    if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
    if (s.contains("const")) return s["const"] == v;
    if (s.contains("type")) {
        auto fits = [&](const std::string& t) {
            if (t == "string") return v.is_string();
            if (t == "number") return v.is_number();
            if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
            if (t == "boolean") return v.is_boolean();
            if (t == "null") return v.is_null();
            if (t == "object") return v.is_object();
            return t == "array" && v.is_array();
        };
        const json& t = s["type"];
        if (t.is_string() ? !fits(t.get<std::string>()) : std::none_of(t.begin(), t.end(), [&](const json& x) { return fits(x.get<std::string>()); }))
            return false;
    }
    if (v.is_object()) {
        const json props = s.value("properties", json::object());
        for (const json& r : s.value("required", json::array()))
            if (!v.contains(r.get<std::string>())) return false;
        const json add = s.value("additionalProperties", json(true));
        for (const auto& [k, x] : v.items())
            if (!validate(props.contains(k) ? props[k] : add, x)) return false;
    }
    if (v.is_array()) {
        if (static_cast<int>(v.size()) < s.value("minItems", 0)) return false;
        if (s.contains("maxItems") && static_cast<int>(v.size()) > s["maxItems"].get<int>()) return false;
        for (const json& x : v)
            if (!validate(s.value("items", json::object()), x)) return false;
    }
    return true;
}

// "" or what went wrong for `text` under `schema`.
std::string check(const json& schema, const std::shared_ptr<const JsonSchema>& compiled, const std::string& text,
                  std::string_view chunks, bool expect_whole) {
    auto make = [&] { return JsonSchemaPrefix(compiled); };
    const json_oracle::ByteWise r = json_oracle::feed_bytes(make, text, /*probe_signatures=*/!chunks.empty());
    if (!r.failure.empty()) return r.failure;
    if (expect_whole && (r.accepted < text.size() || !r.complete_at_end))
        return "an instance of the schema is refused at byte " + std::to_string(r.accepted) +
               (r.accepted == text.size() ? " (its end: not complete)" : "");
    if (r.accepted == text.size() && r.complete_at_end) {
        json v;
        bool parsed = true;
        try {
            v = json::parse(text);
        } catch (const json::out_of_range&) {  // a number past double's range (1e999): valid, unreadable here
            parsed = false;
        } catch (const json::exception& e) {
            return std::string("complete, but nlohmann refuses it: ") + e.what();
        }
        if (parsed && !validate(schema, v)) return "complete, but it does not fit the schema";
    }
    return json_oracle::feed_chunks(make, text, r, chunks);
}

TEST(JsonSchemaDifferential, InstancesFitAndWhatCompletesValidates) {
    SchemaGenerator g(20261205);
    int completed_mutants = 0;
    for (int i = 0; i < 1500; ++i) {
        const json schema = g.root();
        const auto compiled = server::compile_json_schema(schema, "schema");
        json other = g.root();
        for (int k = 0; k < 6; ++k) {
            const json v = g.instance(schema);
            ASSERT_TRUE(validate(schema, v)) << "the generator's instance does not fit: " << v.dump() << "\nschema: " << schema.dump();
            std::string chunks(3, '\0');
            for (char& c : chunks) c = static_cast<char>(g.pick(256));
            const std::string compact = v.dump(), pretty = v.dump(2);
            for (const std::string& text : {compact, pretty})
                ASSERT_EQ(check(schema, compiled, text, k == 0 ? chunks : "", true), "") << "text: " << text << "\nschema: " << schema.dump();
            // Mutants: a byte replaced, inserted or removed; most are refused, those that complete must fit.
            for (int m = 0; m < 4; ++m) {
                std::string t = compact;
                const size_t at = g.pick(static_cast<uint32_t>(t.size()));
                static const char kBytes[] = "{}[],:\"\\0123456789-.eEtfnul ax";
                const char b = kBytes[g.pick(sizeof kBytes - 1)];
                switch (g.pick(3)) {
                case 0: t[at] = b; break;
                case 1: t.insert(t.begin() + at, b); break;
                default: t.erase(at, 1); break;
                }
                JsonSchemaPrefix p(compiled);
                completed_mutants += p.feed(t) && p.complete();
                ASSERT_EQ(check(schema, compiled, t, "", false), "") << "text: " << t << "\nschema: " << schema.dump();
            }
            // An instance of another schema: whatever of it completes must fit this one.
            const std::string foreign = g.instance(other).dump();
            ASSERT_EQ(check(schema, compiled, foreign, "", false), "") << "text: " << foreign << "\nschema: " << schema.dump();
        }
    }
    EXPECT_GT(completed_mutants, 100);  // the soundness check saw texts the recogniser did take
}

}  // namespace
}  // namespace flint
