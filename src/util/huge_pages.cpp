#include "util/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace flint {

namespace {
constexpr size_t kHuge = size_t(2) << 20;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

HugeBuffer::HugeBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    // Over-allocate by one huge page so the data can start on a 2 MiB boundary (THP needs aligned
    // 2 MiB ranges), then advise before the first touch so the faults allocate huge pages.
    map_size_ = round_up(bytes, kHuge) + kHuge;
    void* p = ::mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) fail("cannot allocate ", bytes, " bytes: ", std::strerror(errno));
    map_ = static_cast<uint8_t*>(p);
    data_ = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(map_), kHuge));
#ifdef MADV_HUGEPAGE
    ::madvise(data_, round_up(bytes, kHuge), MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
#endif
}

HugeBuffer::~HugeBuffer() { release(); }

void HugeBuffer::release() {
    if (map_) ::munmap(map_, map_size_);
    map_ = data_ = nullptr;
    map_size_ = size_ = 0;
}

HugeBuffer::HugeBuffer(HugeBuffer&& o) noexcept
    : map_(o.map_), map_size_(o.map_size_), data_(o.data_), size_(o.size_) {
    o.map_ = o.data_ = nullptr;
    o.map_size_ = o.size_ = 0;
}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& o) noexcept {
    if (this != &o) {
        release();
        map_ = o.map_;
        map_size_ = o.map_size_;
        data_ = o.data_;
        size_ = o.size_;
        o.map_ = o.data_ = nullptr;
        o.map_size_ = o.size_ = 0;
    }
    return *this;
}

void HugeBuffer::unseal() {
    if (data_) ::mprotect(data_, round_up(size_, size_t(4096)), PROT_READ | PROT_WRITE);
}

void HugeBuffer::seal() {
    if (data_) ::mprotect(data_, round_up(size_, size_t(4096)), PROT_READ);
}

size_t HugeBuffer::huge_page_bytes() const {
    if (!data_) return 0;
    std::FILE* f = std::fopen("/proc/self/smaps", "r");
    if (!f) return 0;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(data_), hi = lo + size_;
    size_t total = 0;
    bool inside = false;
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
        uintptr_t a = 0, b = 0;
        if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2) {
            inside = a < hi && b > lo;  // a mapping line; mprotect may have split the region in several
            continue;
        }
        size_t kb = 0;
        if (inside && std::sscanf(line, "AnonHugePages: %zu kB", &kb) == 1) total += kb * 1024;
    }
    std::fclose(f);
    return total;
}

}  // namespace flint
