// flint/util/mapped_file.h — a whole file's bytes in memory, read-only (RAII).
// Residency::Map: a memory map — the bytes stay in the page cache, shared between processes, and RSS
// grows only with the pages touched. Residency::HugePages: read into private memory on 2 MiB pages
// (util/huge_pages.h) — a load-time copy that makes every later full pass over the weights faster.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "util/huge_pages.h"

namespace flint {

enum class Residency { Map, HugePages };

class MappedFile {
public:
    MappedFile() = default;
    // Throws flint::Error naming the path.
    explicit MappedFile(const std::string& path, Residency residency = Residency::Map);
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }
    Residency residency() const { return copy_.data() ? Residency::HugePages : Residency::Map; }
    // Bytes on huge pages right now (0 for a map, or when the kernel gave 4 KiB pages).
    size_t huge_page_bytes() const { return copy_.huge_page_bytes(); }
    // Residency::HugePages: runs fn with the bytes writable, then makes them read-only again, and returns
    // true. A map (shared with the page cache) is never written: returns false without calling fn.
    bool modify(const std::function<void(uint8_t* data)>& fn);

private:
    std::string path_;
    HugeBuffer copy_;  // Residency::HugePages: owns the bytes (then nothing is mapped)
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace flint
