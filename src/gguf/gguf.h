// flint/gguf/gguf.h — reading GGUF model files (v2, v3) by mmap.
//
// Layout (little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv, then n_kv key/values
// (string key, u32 value type, value), then n_tensors infos (string name, u32 n_dims, u64 dims[n_dims],
// u32 ggml type, u64 offset relative to the data section), padding to `general.alignment` (default 32),
// then the data section. Everything is validated before it is trusted: every length, count, offset and
// dimension is checked against the file, and a failure throws flint::Error naming the file, the key or
// tensor, and what was expected versus found.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/dtype.h"
#include "util/mapped_file.h"

namespace flint::gguf {

enum class ValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view value_type_name(ValueType t);
size_t value_type_size(ValueType t);  // bytes of a scalar element; 0 for STRING/ARRAY

// One metadata value. Views point into the file's mapping (valid while the File lives).
struct Value {
    ValueType type = ValueType::U8;
    uint64_t u = 0;        // integer scalars and BOOL, as unsigned bit pattern widened
    int64_t i = 0;         // integer scalars, sign-extended where signed
    double f = 0;          // F32/F64 scalars
    std::string_view s;    // STRING
    // ARRAY:
    ValueType elem = ValueType::U8;
    uint64_t count = 0;
    const uint8_t* raw = nullptr;           // numeric elements, packed little-endian
    std::vector<std::string_view> strings;  // STRING elements
    std::vector<Value> arrays;              // nested ARRAY elements

    bool is_integer() const;
    bool is_float() const { return type == ValueType::F32 || type == ValueType::F64; }
    std::string to_string(size_t max_items = 8) const;  // for `flint inspect` and messages
};

struct TensorInfo {
    std::string name;
    DType type = DType::F32;
    std::vector<uint64_t> dims;  // ne[0] first (ne[0] = elements in one contiguous row)
    uint64_t n_elements = 0;
    uint64_t offset = 0;         // relative to the data section
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;

    uint64_t dim(size_t k) const { return k < dims.size() ? dims[k] : 1; }
    std::string shape_string() const;  // "[896, 151936]"
};

class File {
public:
    // Maps (or, with Residency::HugePages, reads onto huge pages) and parses the file at `path`.
    // Throws flint::Error on any problem.
    static std::shared_ptr<File> open(const std::string& path, Residency residency = Residency::Map);
    // Parses a buffer the caller keeps alive (tests, fuzzing). `name` is used in messages.
    static std::shared_ptr<File> parse(const uint8_t* data, size_t size, const std::string& name);

    const std::string& path() const { return name_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    size_t file_size() const { return size_; }
    const uint8_t* base() const { return base_; }
    // Where the bytes live (empty for parse()d buffers).
    const MappedFile& mapping() const { return map_; }
    MappedFile& mapping() { return map_; }  // e.g. to rewrite tensors in place (MappedFile::modify)

    // Metadata, in file order.
    const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
    const Value* find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }

    // Typed accessors: return the default when the key is missing; throw when present with the wrong type.
    std::string get_string(std::string_view key, std::string_view def = {}) const;
    uint64_t get_u64(std::string_view key, uint64_t def) const;  // any non-negative integer type
    int64_t get_i64(std::string_view key, int64_t def) const;    // any integer type
    double get_f64(std::string_view key, double def) const;      // F32/F64 or integer
    bool get_bool(std::string_view key, bool def) const;
    std::optional<uint64_t> get_opt_u64(std::string_view key) const;
    // Arrays (empty when missing; throw when present with another element type).
    std::vector<std::string_view> get_strings(std::string_view key) const;
    std::vector<float> get_f32_array(std::string_view key) const;      // F32 (or F64) elements
    std::vector<int64_t> get_int_array(std::string_view key) const;    // any integer elements

    // Tensors, in file order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;

private:
    File() = default;
    void parse_all();
    [[noreturn]] void key_type_error(std::string_view key, const Value& v, std::string_view expected) const;

    MappedFile map_;
    std::string name_;
    const uint8_t* base_ = nullptr;
    size_t size_ = 0;
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, Value>> kv_;
    std::unordered_map<std::string, size_t> kv_index_;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace flint::gguf
