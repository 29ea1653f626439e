// flint/util/huge_pages.h — large read-mostly buffers backed by transparent huge pages.
//
// On this machine (a VM: every TLB miss is a two-level page walk) a plain read of 4 KiB-paged memory
// runs at 13-15 GB/s and of 2 MiB-paged memory at 18-25 GB/s (BENCHMARKS.md, Engine). Decode streams
// all the weights once per token, so where they live decides its speed. The region is 2 MiB-aligned
// and advised MADV_HUGEPAGE; the kernel still decides (THP "never" or fragmented memory: 4 KiB pages).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flint {

class HugeBuffer {
public:
    HugeBuffer() = default;
    explicit HugeBuffer(size_t bytes);  // zero-filled; throws flint::Error when the memory is not there
    ~HugeBuffer();
    HugeBuffer(HugeBuffer&& o) noexcept;
    HugeBuffer& operator=(HugeBuffer&& o) noexcept;
    HugeBuffer(const HugeBuffer&) = delete;
    HugeBuffer& operator=(const HugeBuffer&) = delete;

    uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    // Makes the buffer read-only (after filling it): a stray write then faults instead of corrupting.
    void seal();
    // Makes a sealed buffer writable again (a load-time rewrite, e.g. tensor/repack.h); seal() after.
    void unseal();
    // Bytes of the buffer the kernel currently backs with huge pages (from /proc/self/smaps; 0 if unknown).
    size_t huge_page_bytes() const;

private:
    void release();

    uint8_t* map_ = nullptr;  // what mmap returned (alignment slack included)
    size_t map_size_ = 0;
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace flint
