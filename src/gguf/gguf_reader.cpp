// Parsing and validation of GGUF files. See gguf.h for the layout.
#include <cstring>
#include <limits>
#include <sstream>

#include "gguf/gguf.h"
#include "util/error.h"

namespace flint::gguf {
namespace {

constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;       // nested arrays deeper than this are refused
constexpr uint64_t kMaxStringLen = 1ull << 30;

// A bounds-checked little-endian cursor over the file bytes.
class Cursor {
public:
    Cursor(const uint8_t* base, size_t size, const std::string& name)
        : base_(base), size_(size), name_(name) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    void need(uint64_t n, std::string_view what) {
        if (n > remaining())
            fail(name_, ": truncated file: ", what, " needs ", n, " bytes at offset ", pos_, " but only ",
                 remaining(), " remain (file size ", size_, ")");
    }
    template <typename T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string_view read_string(std::string_view what) {
        uint64_t len = read<uint64_t>(what);
        if (len > kMaxStringLen || len > remaining())
            fail(name_, ": ", what, ": string length ", len, " at offset ", pos_ - 8, " runs past the end of the file (",
                 remaining(), " bytes remain)");
        std::string_view s(reinterpret_cast<const char*>(base_ + pos_), len);
        pos_ += len;
        return s;
    }
    const uint8_t* take(uint64_t n, std::string_view what) {
        need(n, what);
        const uint8_t* p = base_ + pos_;
        pos_ += n;
        return p;
    }

private:
    const uint8_t* base_;
    size_t size_;
    size_t pos_ = 0;
    const std::string& name_;
};

// "0 f32, 1 f16, 2 q4_0, …": the type ids flint knows, for the unknown-type message.
std::string known_types() {
    std::string s;
    for (uint32_t id = 0; id < 64; ++id)
        if (auto tr = dtype_traits(id)) s += (s.empty() ? "" : ", ") + std::to_string(id) + " " + std::string(tr->name);
    return s;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

Value read_value(Cursor& c, ValueType type, const std::string& file, const std::string& key, int depth);

Value read_array(Cursor& c, const std::string& file, const std::string& key, int depth) {
    if (depth >= kMaxArrayDepth) fail(file, ": key '", key, "': arrays nested deeper than ", kMaxArrayDepth);
    Value v;
    v.type = ValueType::ARRAY;
    uint32_t et = c.read<uint32_t>("array element type of key '" + key + "'");
    if (!valid_value_type(et)) fail(file, ": key '", key, "': unknown array element type ", et, " (expected 0..12)");
    v.elem = static_cast<ValueType>(et);
    v.count = c.read<uint64_t>("array length of key '" + key + "'");
    size_t es = value_type_size(v.elem);
    if (es > 0) {
        if (v.count > c.remaining() / es)
            fail(file, ": key '", key, "': array of ", v.count, " ", value_type_name(v.elem), " runs past the end of the file (",
                 c.remaining(), " bytes remain)");
        v.raw = c.take(v.count * es, "array data");
    } else {
        // Each string needs at least its 8-byte length; each nested array at least 12 bytes.
        uint64_t min_each = v.elem == ValueType::STRING ? 8 : 12;
        if (v.count > c.remaining() / min_each)
            fail(file, ": key '", key, "': array of ", v.count, " ", value_type_name(v.elem), " runs past the end of the file (",
                 c.remaining(), " bytes remain)");
        if (v.elem == ValueType::STRING) {
            v.strings.reserve(v.count);
            for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(c.read_string("string element of key '" + key + "'"));
        } else {
            v.arrays.reserve(v.count);
            for (uint64_t k = 0; k < v.count; ++k) v.arrays.push_back(read_array(c, file, key, depth + 1));
        }
    }
    return v;
}

Value read_value(Cursor& c, ValueType type, const std::string& file, const std::string& key, int depth) {
    Value v;
    v.type = type;
    std::string what = "value of key '" + key + "'";
    switch (type) {
        case ValueType::U8: v.u = c.read<uint8_t>(what); v.i = static_cast<int64_t>(v.u); break;
        case ValueType::I8: v.i = c.read<int8_t>(what); v.u = static_cast<uint64_t>(v.i); break;
        case ValueType::U16: v.u = c.read<uint16_t>(what); v.i = static_cast<int64_t>(v.u); break;
        case ValueType::I16: v.i = c.read<int16_t>(what); v.u = static_cast<uint64_t>(v.i); break;
        case ValueType::U32: v.u = c.read<uint32_t>(what); v.i = static_cast<int64_t>(v.u); break;
        case ValueType::I32: v.i = c.read<int32_t>(what); v.u = static_cast<uint64_t>(v.i); break;
        case ValueType::U64: v.u = c.read<uint64_t>(what); v.i = static_cast<int64_t>(v.u); break;
        case ValueType::I64: v.i = c.read<int64_t>(what); v.u = static_cast<uint64_t>(v.i); break;
        case ValueType::F32: v.f = c.read<float>(what); break;
        case ValueType::F64: v.f = c.read<double>(what); break;
        case ValueType::BOOL: {
            uint8_t b = c.read<uint8_t>(what);
            if (b > 1) fail(file, ": key '", key, "': bool value ", int(b), " (expected 0 or 1)");
            v.u = b;
            v.i = b;
            break;
        }
        case ValueType::STRING: v.s = c.read_string(what); break;
        case ValueType::ARRAY: return read_array(c, file, key, depth);
    }
    return v;
}

}  // namespace

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::U8: return "u8";
        case ValueType::I8: return "i8";
        case ValueType::U16: return "u16";
        case ValueType::I16: return "i16";
        case ValueType::U32: return "u32";
        case ValueType::I32: return "i32";
        case ValueType::F32: return "f32";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
        case ValueType::U64: return "u64";
        case ValueType::I64: return "i64";
        case ValueType::F64: return "f64";
    }
    return "?";
}

size_t value_type_size(ValueType t) {
    switch (t) {
        case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
        case ValueType::U16: case ValueType::I16: return 2;
        case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
        case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
        case ValueType::STRING: case ValueType::ARRAY: return 0;
    }
    return 0;
}

bool Value::is_integer() const {
    switch (type) {
        case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
        case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64: return true;
        default: return false;
    }
}

namespace {
bool is_signed(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
// Reads numeric array element k as double / int64.
double elem_f64(const Value& v, uint64_t k) {
    const uint8_t* p = v.raw + k * value_type_size(v.elem);
    switch (v.elem) {
        case ValueType::F32: { float x; std::memcpy(&x, p, 4); return x; }
        case ValueType::F64: { double x; std::memcpy(&x, p, 8); return x; }
        default: break;
    }
    return 0;
}
int64_t elem_i64(const Value& v, uint64_t k) {
    const uint8_t* p = v.raw + k * value_type_size(v.elem);
    switch (v.elem) {
        case ValueType::U8: case ValueType::BOOL: return *p;
        case ValueType::I8: return static_cast<int8_t>(*p);
        case ValueType::U16: { uint16_t x; std::memcpy(&x, p, 2); return x; }
        case ValueType::I16: { int16_t x; std::memcpy(&x, p, 2); return x; }
        case ValueType::U32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
        case ValueType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
        case ValueType::U64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<int64_t>(x); }
        case ValueType::I64: { int64_t x; std::memcpy(&x, p, 8); return x; }
        default: return 0;
    }
}
}  // namespace

std::string Value::to_string(size_t max_items) const {
    std::ostringstream os;
    switch (type) {
        case ValueType::STRING: return quoted(s);
        case ValueType::BOOL: return u ? "true" : "false";
        case ValueType::F32: case ValueType::F64: os << f; return os.str();
        case ValueType::ARRAY: {
            os << "[" << value_type_name(elem) << " × " << count << "]";
            if (max_items == 0) return os.str();
            os << " [";
            for (uint64_t k = 0; k < count && k < max_items; ++k) {
                if (k) os << ", ";
                if (elem == ValueType::STRING) os << quoted(strings[k], 24);
                else if (elem == ValueType::ARRAY) os << arrays[k].to_string(2);
                else if (elem == ValueType::F32 || elem == ValueType::F64) os << elem_f64(*this, k);
                else os << elem_i64(*this, k);
            }
            if (count > max_items) os << ", …";
            os << "]";
            return os.str();
        }
        default:
            if (is_signed(type)) os << i; else os << u;
            return os.str();
    }
}

std::string TensorInfo::shape_string() const {
    std::string s = "[";
    for (size_t k = 0; k < dims.size(); ++k) {
        if (k) s += ", ";
        s += std::to_string(dims[k]);
    }
    return s + "]";
}

std::shared_ptr<File> File::open(const std::string& path, Residency residency) {
    std::shared_ptr<File> f(new File());
    f->map_ = MappedFile(path, residency);
    f->name_ = path;
    f->base_ = f->map_.data();
    f->size_ = f->map_.size();
    f->parse_all();
    return f;
}

std::shared_ptr<File> File::parse(const uint8_t* data, size_t size, const std::string& name) {
    std::shared_ptr<File> f(new File());
    f->name_ = name;
    f->base_ = data;
    f->size_ = size;
    f->parse_all();
    return f;
}

void File::parse_all() {
    Cursor c(base_, size_, name_);
    if (size_ < 4) fail(name_, ": not a GGUF file: ", size_, " bytes, too short for the magic \"GGUF\"");
    if (std::memcmp(base_, "GGUF", 4) != 0) {
        std::string found(reinterpret_cast<const char*>(base_), 4);
        fail(name_, ": not a GGUF file: bad magic ", quoted(found), " (expected \"GGUF\")");
    }
    c.take(4, "magic");
    version_ = c.read<uint32_t>("version");
    if (version_ != 2 && version_ != 3) {
        uint32_t swapped = __builtin_bswap32(version_);
        if (swapped == 2 || swapped == 3)
            fail(name_, ": big-endian GGUF (version ", swapped, ") is not supported; flint reads little-endian files");
        fail(name_, ": unsupported GGUF version ", version_, " (flint reads versions 2 and 3)");
    }
    uint64_t n_tensors = c.read<uint64_t>("tensor count");
    uint64_t n_kv = c.read<uint64_t>("metadata count");
    // Each key/value takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info at least 8+4+4+8.
    if (n_kv > c.remaining() / 13)
        fail(name_, ": metadata count ", n_kv, " cannot fit in the ", c.remaining(), " bytes that remain");
    if (n_tensors > c.remaining() / 24)
        fail(name_, ": tensor count ", n_tensors, " cannot fit in the ", c.remaining(), " bytes that remain");

    kv_.reserve(n_kv);
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key(c.read_string("key of metadata entry " + std::to_string(k)));
        uint32_t t = c.read<uint32_t>("value type of key '" + key + "'");
        if (!valid_value_type(t)) fail(name_, ": key '", key, "': unknown value type ", t, " (expected 0..12)");
        Value v = read_value(c, static_cast<ValueType>(t), name_, key, 0);
        if (kv_index_.count(key)) fail(name_, ": duplicate metadata key '", key, "'");
        kv_index_.emplace(key, kv_.size());
        kv_.emplace_back(std::move(key), std::move(v));
    }

    if (const Value* a = find("general.alignment")) {
        if (!a->is_integer()) key_type_error("general.alignment", *a, "an integer");
        if (a->u == 0 || a->u > (1u << 20) || (a->u & (a->u - 1)) != 0)
            fail(name_, ": general.alignment = ", a->i, " (expected a power of two, at most 1 MiB)");
        alignment_ = static_cast<uint32_t>(a->u);
    }

    tensors_.reserve(n_tensors);
    for (uint64_t k = 0; k < n_tensors; ++k) {
        TensorInfo ti;
        ti.name = std::string(c.read_string("name of tensor " + std::to_string(k)));
        std::string what = "tensor '" + ti.name + "'";
        uint32_t n_dims = c.read<uint32_t>(what + " dimension count");
        if (n_dims > kMaxDims) fail(name_, ": ", what, ": ", n_dims, " dimensions (expected at most ", kMaxDims, ")");
        ti.dims.resize(n_dims);
        uint64_t n = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            ti.dims[d] = c.read<uint64_t>(what + " dimensions");
            if (ti.dims[d] == 0) fail(name_, ": ", what, ": dimension ", d, " is 0 (expected >= 1)");
            if (ti.dims[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
                n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ti.dims[d])
                fail(name_, ": ", what, ": shape ", ti.shape_string(), " overflows 63 bits");
            n *= ti.dims[d];
        }
        ti.n_elements = n;
        uint32_t type = c.read<uint32_t>(what + " type");
        auto tr = dtype_traits(type);
        if (tr && !is_file_type(static_cast<DType>(type))) tr.reset();  // flint's in-memory layouts
        if (!tr) fail(name_, ": ", what, ": unknown tensor type ", type, " (expected one of ", known_types(), ")");
        ti.type = static_cast<DType>(type);
        if (ti.dim(0) % tr->block_elems != 0)
            fail(name_, ": ", what, ": row length ", ti.dim(0), " is not a multiple of the ", tr->name, " block size ",
                 tr->block_elems);
        // The element count fits in 63 bits, but its byte count may not fit in 64 (2^62 f64s): refuse
        // instead of wrapping to a small size that would then pass the bounds check below.
        if (n / tr->block_elems > std::numeric_limits<uint64_t>::max() / tr->block_bytes)
            fail(name_, ": ", what, ": ", n, " elements of ", tr->name, " overflow a 64-bit byte count");
        ti.n_bytes = n / tr->block_elems * tr->block_bytes;
        ti.offset = c.read<uint64_t>(what + " data offset");
        if (ti.offset % alignment_ != 0)
            fail(name_, ": ", what, ": data offset ", ti.offset, " is not a multiple of the alignment ", alignment_);
        if (tensor_index_.count(ti.name)) fail(name_, ": duplicate tensor name '", ti.name, "'");
        tensor_index_.emplace(ti.name, tensors_.size());
        tensors_.push_back(std::move(ti));
    }

    uint64_t pos = c.pos();
    data_offset_ = (pos + alignment_ - 1) / alignment_ * alignment_;
    if (n_tensors > 0 && data_offset_ > size_)
        fail(name_, ": truncated file: data section starts at ", data_offset_, " but the file is ", size_, " bytes");
    for (TensorInfo& ti : tensors_) {
        uint64_t avail = size_ >= data_offset_ ? size_ - data_offset_ : 0;
        if (ti.offset > avail || ti.n_bytes > avail - ti.offset)
            fail(name_, ": tensor '", ti.name, "': data [", ti.offset, ", ", ti.offset + ti.n_bytes,
                 ") lies outside the data section of ", avail, " bytes (truncated file?)");
        ti.data = base_ + data_offset_ + ti.offset;
    }
}

const Value* File::find(std::string_view key) const {
    auto it = kv_index_.find(std::string(key));
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void File::key_type_error(std::string_view key, const Value& v, std::string_view expected) const {
    std::string found(value_type_name(v.type));
    if (v.type == ValueType::ARRAY) found = "array of " + std::string(value_type_name(v.elem));
    fail(name_, ": key '", key, "': expected ", expected, ", found ", found);
}

std::string File::get_string(std::string_view key, std::string_view def) const {
    const Value* v = find(key);
    if (!v) return std::string(def);
    if (v->type != ValueType::STRING) key_type_error(key, *v, "string");
    return std::string(v->s);
}

uint64_t File::get_u64(std::string_view key, uint64_t def) const {
    const Value* v = find(key);
    if (!v) return def;
    if (!v->is_integer()) key_type_error(key, *v, "an integer");
    if (is_signed(v->type) && v->i < 0) fail(name_, ": key '", key, "': value ", v->i, " is negative (expected >= 0)");
    return v->u;
}

std::optional<uint64_t> File::get_opt_u64(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_u64(key, 0);
}

int64_t File::get_i64(std::string_view key, int64_t def) const {
    const Value* v = find(key);
    if (!v) return def;
    if (!v->is_integer()) key_type_error(key, *v, "an integer");
    return v->i;
}

double File::get_f64(std::string_view key, double def) const {
    const Value* v = find(key);
    if (!v) return def;
    if (v->is_float()) return v->f;
    if (v->is_integer()) return is_signed(v->type) ? static_cast<double>(v->i) : static_cast<double>(v->u);
    key_type_error(key, *v, "a number");
}

bool File::get_bool(std::string_view key, bool def) const {
    const Value* v = find(key);
    if (!v) return def;
    if (v->type != ValueType::BOOL) key_type_error(key, *v, "bool");
    return v->u != 0;
}

std::vector<std::string_view> File::get_strings(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return {};
    if (v->type != ValueType::ARRAY || v->elem != ValueType::STRING) key_type_error(key, *v, "array of string");
    return v->strings;
}

std::vector<float> File::get_f32_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return {};
    if (v->type != ValueType::ARRAY || (v->elem != ValueType::F32 && v->elem != ValueType::F64))
        key_type_error(key, *v, "array of f32");
    std::vector<float> out(v->count);
    for (uint64_t k = 0; k < v->count; ++k) out[k] = static_cast<float>(elem_f64(*v, k));
    return out;
}

std::vector<int64_t> File::get_int_array(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return {};
    Value probe;
    probe.type = v->elem;
    if (v->type != ValueType::ARRAY || !(probe.is_integer() || v->elem == ValueType::BOOL))
        key_type_error(key, *v, "array of integers");
    std::vector<int64_t> out(v->count);
    for (uint64_t k = 0; k < v->count; ++k) out[k] = elem_i64(*v, k);
    return out;
}

}  // namespace flint::gguf
