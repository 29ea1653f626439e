#include "util/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

namespace flint {

MappedFile::MappedFile(const std::string& path, Residency residency) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        fail(path, ": cannot stat: ", std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, ": not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (residency == Residency::HugePages && size_ > 0) {
        try {
            copy_ = HugeBuffer(size_);
        } catch (...) {
            ::close(fd);
            throw;
        }
        for (size_t done = 0; done < size_;) {
            const ssize_t n = ::pread(fd, copy_.data() + done, size_ - done, static_cast<off_t>(done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const int e = n < 0 ? errno : 0;
                ::close(fd);
                fail(path, ": read failed at byte ", done, " of ", size_, ": ", e ? std::strerror(e) : "file shrank");
            }
            done += static_cast<size_t>(n);
        }
        copy_.seal();
        data_ = copy_.data();
    } else if (size_ > 0) {
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            ::close(fd);
            fail(path, ": cannot mmap ", size_, " bytes: ", std::strerror(e));
        }
        data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
}

bool MappedFile::modify(const std::function<void(uint8_t* data)>& fn) {
    if (!copy_.data()) return false;
    copy_.unseal();
    try {
        fn(copy_.data());
    } catch (...) {
        copy_.seal();
        throw;
    }
    copy_.seal();
    return true;
}

MappedFile::~MappedFile() {
    if (data_ && !copy_.data()) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), copy_(std::move(o.copy_)), data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (data_ && !copy_.data()) ::munmap(const_cast<uint8_t*>(data_), size_);
        path_ = std::move(o.path_);
        copy_ = std::move(o.copy_);
        data_ = o.data_;
        size_ = o.size_;
        o.data_ = nullptr;
        o.size_ = 0;
    }
    return *this;
}

}  // namespace flint
