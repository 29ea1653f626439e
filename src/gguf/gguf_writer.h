// flint/gguf/gguf_writer.h — writing GGUF v3 files (the inverse of gguf.h's reader).
//
// Metadata is collected in insertion order as owned values (every GGUF value type, arrays of numbers or
// strings, nested arrays). Tensors are declared up front with name, type and shape; their bytes come
// either from an owned buffer, a borrowed span (e.g. another file's mapping) or a producer callback that
// streams them when the file is written, so a multi-GB model never has to sit in memory at once.
// The layout follows the reader: header, key/values, tensor infos, padding to general.alignment
// (default 32), then each tensor's data, each padded to the alignment.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/dtype.h"

namespace flint::gguf {

// An owned metadata value, for writing. Build one with the static constructors.
struct MetaValue {
    ValueType type = ValueType::U8;
    uint64_t bits = 0;                  // scalar: the little-endian bit pattern (low value_type_size bytes)
    std::string str;                    // STRING
    ValueType elem = ValueType::U8;     // ARRAY: element type
    std::vector<uint8_t> raw;           // ARRAY of numbers/bools: packed little-endian elements
    std::vector<std::string> strings;   // ARRAY of STRING
    std::vector<MetaValue> arrays;      // ARRAY of ARRAY

    static MetaValue u8(uint8_t v);
    static MetaValue i8(int8_t v);
    static MetaValue u16(uint16_t v);
    static MetaValue i16(int16_t v);
    static MetaValue u32(uint32_t v);
    static MetaValue i32(int32_t v);
    static MetaValue u64(uint64_t v);
    static MetaValue i64(int64_t v);
    static MetaValue f32(float v);
    static MetaValue f64(double v);
    static MetaValue boolean(bool v);
    static MetaValue string(std::string v);
    // Arrays of numbers: `data` holds `count` packed elements of type `elem` (a numeric or BOOL type).
    static MetaValue numeric_array(ValueType elem, const void* data, uint64_t count);
    static MetaValue f32_array(std::span<const float> v);
    static MetaValue i32_array(std::span<const int32_t> v);
    static MetaValue string_array(std::vector<std::string> v);
    // An array of arrays; each element must itself be an ARRAY value.
    static MetaValue array_array(std::vector<MetaValue> v);
    // A deep copy of a value read from a File.
    static MetaValue from(const Value& v);

    uint64_t count() const;  // ARRAY: number of elements
};

class Writer {
public:
    // Receives a tensor's bytes from a producer; may be called any number of times per tensor.
    class Sink {
    public:
        virtual ~Sink() = default;
        virtual void write(const void* data, size_t n) = 0;
    };
    // Produces exactly the tensor's n_bytes into the sink (checked). Called once, when the file is written,
    // in tensor order.
    using Producer = std::function<void(Sink& sink)>;

    // ---- metadata -----------------------------------------------------------------------------------
    // Sets `key`; an existing key keeps its position and gets the new value.
    void set(std::string_view key, MetaValue v);
    void set_u32(std::string_view key, uint32_t v) { set(key, MetaValue::u32(v)); }
    void set_f32(std::string_view key, float v) { set(key, MetaValue::f32(v)); }
    void set_bool(std::string_view key, bool v) { set(key, MetaValue::boolean(v)); }
    void set_string(std::string_view key, std::string v) { set(key, MetaValue::string(std::move(v))); }
    bool remove(std::string_view key);
    const MetaValue* find(std::string_view key) const;
    const std::vector<std::pair<std::string, MetaValue>>& metadata() const { return kv_; }
    // Copies every key of `f` (in order), replacing keys already set.
    void copy_metadata(const File& f);

    // ---- tensors ------------------------------------------------------------------------------------
    // dims: ne[0] (row length) first. Throws flint::Error on a duplicate name, a zero or >4-D shape, or a
    // row length that is not a multiple of the type's block size.
    void add_tensor(std::string name, DType type, std::vector<uint64_t> dims, std::vector<uint8_t> data);
    // Borrowed bytes: must stay valid until write() returns.
    void add_tensor_view(std::string name, DType type, std::vector<uint64_t> dims, const void* data, size_t n_bytes);
    void add_tensor_stream(std::string name, DType type, std::vector<uint64_t> dims, Producer producer);
    size_t n_tensors() const { return tensors_.size(); }

    // ---- output -------------------------------------------------------------------------------------
    // Writes to `path` through a temporary file renamed into place at the end, so a failed or interrupted
    // write never leaves a half-written model under the final name. Throws flint::Error naming the path.
    void write_file(const std::string& path) const;
    std::vector<uint8_t> write_buffer() const;
    uint32_t alignment() const;  // general.alignment if set (validated), else 32

    // Bytes of tensor data of the given type and shape (after shape validation).
    static uint64_t tensor_bytes(std::string_view name, DType type, const std::vector<uint64_t>& dims);

private:
    struct Tensor {
        std::string name;
        DType type = DType::F32;
        std::vector<uint64_t> dims;
        uint64_t n_bytes = 0;
        std::vector<uint8_t> owned;
        const uint8_t* view = nullptr;
        Producer producer;
    };
    void add(Tensor t);
    void write_to(Sink& out) const;

    std::vector<std::pair<std::string, MetaValue>> kv_;
    std::vector<Tensor> tensors_;
};

}  // namespace flint::gguf
