// Storage lifetime and the CPU allocator (64-byte aligned for AVX-512 loads and cache lines).
#include "core/storage.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace lumen {

constexpr size_t kCpuAlignment = 64;

void* cpu_allocate(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* data = std::aligned_alloc(kCpuAlignment, rounded);
    LUMEN_CHECK(data != nullptr, "allocator", "out of CPU memory allocating ", nbytes, " bytes");
    return data;
}

void cpu_free(void* data) { std::free(data); }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
    if (device.is_cpu()) {
        data_ = cpu_allocate(nbytes);
    } else {
        data_ = nbytes ? cuda::allocate(nbytes, device.index) : nullptr;
    }
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void()> release)
    : data_(data), nbytes_(nbytes), device_(device), release_(std::move(release)) {}

Storage::~Storage() {
    if (release_) {
        release_();
    } else if (device_.is_cpu()) {
        cpu_free(data_);
    } else if (data_) {
        cuda::free(data_, device_.index);
    }
}

#if !LUMEN_CUDA
namespace cuda {
void* allocate(size_t nbytes, int) {
    LUMEN_FAIL("cuda", "cannot allocate ", nbytes, " bytes on a CUDA device: lumen was built without "
               "CUDA (LUMEN_CUDA=OFF)");
}
void free(void*, int) {}
void memcpy(void*, Device, const void*, Device, size_t nbytes) {
    LUMEN_FAIL("cuda", "cannot copy ", nbytes, " bytes to or from a CUDA device: lumen was built "
               "without CUDA (LUMEN_CUDA=OFF)");
}
}  // namespace cuda
#endif

}  // namespace lumen
