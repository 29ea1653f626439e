// Writing GGUF v3 files. See gguf_writer.h.
#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unistd.h>

#include "util/error.h"

namespace flint::gguf {
namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;

template <typename T>
MetaValue scalar(ValueType type, T v) {
    MetaValue m;
    m.type = type;
    static_assert(sizeof(T) <= 8);
    std::memcpy(&m.bits, &v, sizeof(T));  // little-endian host: the low bytes are the value
    return m;
}

bool is_numeric(ValueType t) { return t != ValueType::STRING && t != ValueType::ARRAY; }

// Serialises into a Sink with a position counter (for alignment padding).
class Out {
public:
    explicit Out(Writer::Sink& s) : s_(s) {}
    void bytes(const void* p, size_t n) {
        if (n == 0) return;
        s_.write(p, n);
        pos_ += n;
    }
    template <typename T>
    void put(T v) { bytes(&v, sizeof v); }
    void str(std::string_view s) {
        put<uint64_t>(s.size());
        bytes(s.data(), s.size());
    }
    void pad_to(uint32_t alignment) {
        static const uint8_t zeros[4096] = {};
        uint64_t target = (pos_ + alignment - 1) / alignment * alignment;
        while (pos_ < target) bytes(zeros, std::min<uint64_t>(target - pos_, sizeof zeros));
    }
    uint64_t pos() const { return pos_; }

private:
    Writer::Sink& s_;
    uint64_t pos_ = 0;
};

void write_value(Out& o, const MetaValue& v);

void write_array_body(Out& o, const MetaValue& v) {
    o.put<uint32_t>(static_cast<uint32_t>(v.elem));
    o.put<uint64_t>(v.count());
    if (v.elem == ValueType::STRING) {
        for (const std::string& s : v.strings) o.str(s);
    } else if (v.elem == ValueType::ARRAY) {
        for (const MetaValue& a : v.arrays) write_array_body(o, a);
    } else {
        o.bytes(v.raw.data(), v.raw.size());
    }
}

void write_value(Out& o, const MetaValue& v) {
    switch (v.type) {
        case ValueType::STRING: o.str(v.str); break;
        case ValueType::ARRAY: write_array_body(o, v); break;
        default: o.bytes(&v.bits, value_type_size(v.type)); break;
    }
}

class VectorSink : public Writer::Sink {
public:
    void write(const void* data, size_t n) override {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        buf.insert(buf.end(), p, p + n);
    }
    std::vector<uint8_t> buf;
};

class FileSink : public Writer::Sink {
public:
    FileSink(std::FILE* f, const std::string& path) : f_(f), path_(path) {}
    void write(const void* data, size_t n) override {
        if (std::fwrite(data, 1, n, f_) != n) fail(path_, ": write failed: ", std::strerror(errno));
    }

private:
    std::FILE* f_;
    const std::string& path_;
};

// Counts what a producer writes and stops it from writing more than the tensor's size.
class CheckedSink : public Writer::Sink {
public:
    CheckedSink(Out& inner, const std::string& name, uint64_t expected)
        : inner_(inner), name_(name), expected_(expected) {}
    void write(const void* data, size_t n) override {
        if (n > expected_ - written_)
            fail("tensor '", name_, "': producer wrote more than the expected ", expected_, " bytes");
        inner_.bytes(data, n);
        written_ += n;
    }
    void finish() const {
        if (written_ != expected_)
            fail("tensor '", name_, "': producer wrote ", written_, " bytes (expected ", expected_, ")");
    }

private:
    Out& inner_;
    const std::string& name_;
    uint64_t expected_;
    uint64_t written_ = 0;
};

}  // namespace

// ---- MetaValue -------------------------------------------------------------------------------------

MetaValue MetaValue::u8(uint8_t v) { return scalar(ValueType::U8, v); }
MetaValue MetaValue::i8(int8_t v) { return scalar(ValueType::I8, v); }
MetaValue MetaValue::u16(uint16_t v) { return scalar(ValueType::U16, v); }
MetaValue MetaValue::i16(int16_t v) { return scalar(ValueType::I16, v); }
MetaValue MetaValue::u32(uint32_t v) { return scalar(ValueType::U32, v); }
MetaValue MetaValue::i32(int32_t v) { return scalar(ValueType::I32, v); }
MetaValue MetaValue::u64(uint64_t v) { return scalar(ValueType::U64, v); }
MetaValue MetaValue::i64(int64_t v) { return scalar(ValueType::I64, v); }
MetaValue MetaValue::f32(float v) { return scalar(ValueType::F32, v); }
MetaValue MetaValue::f64(double v) { return scalar(ValueType::F64, v); }
MetaValue MetaValue::boolean(bool v) { return scalar(ValueType::BOOL, static_cast<uint8_t>(v ? 1 : 0)); }

MetaValue MetaValue::string(std::string v) {
    MetaValue m;
    m.type = ValueType::STRING;
    m.str = std::move(v);
    return m;
}

MetaValue MetaValue::numeric_array(ValueType elem, const void* data, uint64_t count) {
    if (!is_numeric(elem)) fail("numeric_array: element type ", value_type_name(elem), " is not a number type");
    MetaValue m;
    m.type = ValueType::ARRAY;
    m.elem = elem;
    const uint8_t* p = static_cast<const uint8_t*>(data);
    m.raw.assign(p, p + count * value_type_size(elem));
    return m;
}

MetaValue MetaValue::f32_array(std::span<const float> v) { return numeric_array(ValueType::F32, v.data(), v.size()); }
MetaValue MetaValue::i32_array(std::span<const int32_t> v) { return numeric_array(ValueType::I32, v.data(), v.size()); }

MetaValue MetaValue::string_array(std::vector<std::string> v) {
    MetaValue m;
    m.type = ValueType::ARRAY;
    m.elem = ValueType::STRING;
    m.strings = std::move(v);
    return m;
}

MetaValue MetaValue::array_array(std::vector<MetaValue> v) {
    for (const MetaValue& a : v)
        if (a.type != ValueType::ARRAY) fail("array_array: element of type ", value_type_name(a.type), " (expected array)");
    MetaValue m;
    m.type = ValueType::ARRAY;
    m.elem = ValueType::ARRAY;
    m.arrays = std::move(v);
    return m;
}

MetaValue MetaValue::from(const Value& v) {
    switch (v.type) {
        case ValueType::STRING: return string(std::string(v.s));
        case ValueType::F32: return f32(static_cast<float>(v.f));
        case ValueType::F64: return f64(v.f);
        case ValueType::ARRAY: {
            if (v.elem == ValueType::STRING)
                return string_array(std::vector<std::string>(v.strings.begin(), v.strings.end()));
            if (v.elem == ValueType::ARRAY) {
                std::vector<MetaValue> inner;
                inner.reserve(v.arrays.size());
                for (const Value& a : v.arrays) inner.push_back(from(a));
                return array_array(std::move(inner));
            }
            return numeric_array(v.elem, v.raw, v.count);
        }
        default: {
            MetaValue m;  // integers and BOOL: the reader widened the bit pattern into u
            m.type = v.type;
            m.bits = v.u;
            size_t sz = value_type_size(v.type);
            if (sz < 8) m.bits &= (uint64_t{1} << (8 * sz)) - 1;
            return m;
        }
    }
}

uint64_t MetaValue::count() const {
    if (type != ValueType::ARRAY) return 0;
    if (elem == ValueType::STRING) return strings.size();
    if (elem == ValueType::ARRAY) return arrays.size();
    return raw.size() / value_type_size(elem);
}

// ---- Writer: metadata ------------------------------------------------------------------------------

void Writer::set(std::string_view key, MetaValue v) {
    for (auto& [k, old] : kv_)
        if (k == key) {
            old = std::move(v);
            return;
        }
    kv_.emplace_back(std::string(key), std::move(v));
}

bool Writer::remove(std::string_view key) {
    for (auto it = kv_.begin(); it != kv_.end(); ++it)
        if (it->first == key) {
            kv_.erase(it);
            return true;
        }
    return false;
}

const MetaValue* Writer::find(std::string_view key) const {
    for (const auto& [k, v] : kv_)
        if (k == key) return &v;
    return nullptr;
}

void Writer::copy_metadata(const File& f) {
    for (const auto& [k, v] : f.metadata()) set(k, MetaValue::from(v));
}

uint32_t Writer::alignment() const {
    const MetaValue* a = find("general.alignment");
    if (!a) return kDefaultAlignment;
    // The spec says u32; like the reader, accept any integer type so files copied from elsewhere round-trip.
    const bool is_int = a->type != ValueType::F32 && a->type != ValueType::F64 && a->type != ValueType::BOOL &&
                        a->type != ValueType::STRING && a->type != ValueType::ARRAY;
    if (!is_int) fail("general.alignment: expected an integer, found ", value_type_name(a->type));
    uint64_t v = a->bits;
    if ((a->type == ValueType::I8 && int8_t(v) < 0) || (a->type == ValueType::I16 && int16_t(v) < 0) ||
        (a->type == ValueType::I32 && int32_t(v) < 0))
        v = ~0ull;  // negative: refused below
    if (v == 0 || v > (1u << 20) || (v & (v - 1)) != 0)
        fail("general.alignment = ", v, " (expected a power of two, at most 1 MiB)");
    return static_cast<uint32_t>(v);
}

// ---- Writer: tensors -------------------------------------------------------------------------------

uint64_t Writer::tensor_bytes(std::string_view name, DType type, const std::vector<uint64_t>& dims) {
    auto tr = dtype_traits(static_cast<uint32_t>(type));
    if (!tr) fail("tensor '", name, "': unknown tensor type ", static_cast<uint32_t>(type));
    if (!is_file_type(type)) fail("tensor '", name, "': ", tr->name, " is an in-memory layout, not a file type");
    if (dims.empty() || dims.size() > kMaxDims)
        fail("tensor '", name, "': ", dims.size(), " dimensions (expected 1 to ", kMaxDims, ")");
    uint64_t n = 1;
    for (uint64_t d : dims) {
        if (d == 0) fail("tensor '", name, "': a dimension is 0");
        if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
            fail("tensor '", name, "': shape overflows 63 bits");
        n *= d;
    }
    if (dims[0] % tr->block_elems != 0)
        fail("tensor '", name, "': row length ", dims[0], " is not a multiple of the ", tr->name, " block size ",
             tr->block_elems);
    return n / tr->block_elems * tr->block_bytes;
}

void Writer::add(Tensor t) {
    for (const Tensor& o : tensors_)
        if (o.name == t.name) fail("duplicate tensor name '", t.name, "'");
    t.n_bytes = tensor_bytes(t.name, t.type, t.dims);
    tensors_.push_back(std::move(t));
}

void Writer::add_tensor(std::string name, DType type, std::vector<uint64_t> dims, std::vector<uint8_t> data) {
    uint64_t need = tensor_bytes(name, type, dims);
    if (data.size() != need) fail("tensor '", name, "': ", data.size(), " bytes of data (expected ", need, ")");
    Tensor t;
    t.name = std::move(name), t.type = type, t.dims = std::move(dims), t.owned = std::move(data);
    add(std::move(t));
}

void Writer::add_tensor_view(std::string name, DType type, std::vector<uint64_t> dims, const void* data,
                             size_t n_bytes) {
    uint64_t need = tensor_bytes(name, type, dims);
    if (n_bytes != need) fail("tensor '", name, "': ", n_bytes, " bytes of data (expected ", need, ")");
    Tensor t;
    t.name = std::move(name), t.type = type, t.dims = std::move(dims), t.view = static_cast<const uint8_t*>(data);
    add(std::move(t));
}

void Writer::add_tensor_stream(std::string name, DType type, std::vector<uint64_t> dims, Producer producer) {
    Tensor t;
    t.name = std::move(name), t.type = type, t.dims = std::move(dims), t.producer = std::move(producer);
    add(std::move(t));
}

// ---- Writer: output --------------------------------------------------------------------------------

void Writer::write_to(Sink& sink) const {
    const uint32_t align = alignment();
    Out o(sink);
    o.bytes("GGUF", 4);
    o.put<uint32_t>(3);
    o.put<uint64_t>(tensors_.size());
    o.put<uint64_t>(kv_.size());
    for (const auto& [key, v] : kv_) {
        o.str(key);
        o.put<uint32_t>(static_cast<uint32_t>(v.type));
        write_value(o, v);
    }
    // Offsets are relative to the data section; each tensor starts on an alignment boundary.
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        o.str(t.name);
        o.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
        for (uint64_t d : t.dims) o.put<uint64_t>(d);
        o.put<uint32_t>(static_cast<uint32_t>(t.type));
        o.put<uint64_t>(offset);
        offset += (t.n_bytes + align - 1) / align * align;
    }
    o.pad_to(align);
    for (const Tensor& t : tensors_) {
        if (t.producer) {
            CheckedSink checked(o, t.name, t.n_bytes);
            t.producer(checked);
            checked.finish();
        } else {
            o.bytes(t.view ? t.view : t.owned.data(), t.n_bytes);
        }
        o.pad_to(align);
    }
}

std::vector<uint8_t> Writer::write_buffer() const {
    VectorSink s;
    write_to(s);
    return std::move(s.buf);
}

void Writer::write_file(const std::string& path) const {
    std::string tmp = path + ".tmp" + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(path, ": cannot create output file: ", std::strerror(errno));
    std::vector<char> buf(1 << 20);
    std::setvbuf(f, buf.data(), _IOFBF, buf.size());
    try {
        FileSink sink(f, path);
        write_to(sink);
    } catch (...) {
        std::fclose(f);
        std::remove(tmp.c_str());
        throw;
    }
    // fclose flushes the last buffer: its failure (disk full) is a failed write too.
    if (std::fclose(f) != 0) {
        int e = errno;
        std::remove(tmp.c_str());
        fail(path, ": write failed: ", std::strerror(e));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        fail(path, ": cannot rename the finished file into place: ", ec.message());
    }
}

}  // namespace flint::gguf
