// Storage: bytes on one device, shared by a tensor and all its views, plus the version
// counter that in-place ops bump so autograd can detect a saved tensor changed under it.
// CPU memory is 64-byte aligned; CUDA memory comes from core/cuda's allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/cuda_guard.h"
#include "core/device.h"

namespace lumen {

class Storage {
  public:
    // Allocates nbytes on device (uninitialized).
    Storage(size_t nbytes, Device device);
    // Wraps memory owned elsewhere (a memory-mapped file, a caller's buffer): `release` runs
    // when the last tensor using it goes away.
    Storage(void* data, size_t nbytes, Device device, std::function<void()> release);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() const { return data_; }
    size_t nbytes() const { return nbytes_; }
    Device device() const { return device_; }
    // Page-locked host memory (Tensor::pin_memory): host<->device copies from or to it can be
    // asynchronous.
    bool pinned() const { return pinned_; }
    // nbytes of page-locked host memory (cudaHostAlloc), freed with cudaFreeHost (which waits
    // for the device, so a pending asynchronous copy never reads freed memory). Throws [cuda]
    // without CUDA or a device.
    static std::shared_ptr<Storage> pinned_host(size_t nbytes);

    int64_t version() const { return version_; }
    void bump_version() { ++version_; }

  private:
    void* data_ = nullptr;
    size_t nbytes_ = 0;
    Device device_;
    std::function<void()> release_;
    int64_t version_ = 0;
    bool pinned_ = false;
};

// Raw allocation entry points used by Storage. Errors name the request size. Blocks of 256 KiB
// and more are kept in a cache for reuse (at most LUMEN_CPU_CACHE_MB, default 2048 MiB), and
// live plus cached bytes stay within the most bytes ever live at once (a block that misses the
// cache gives back cached blocks of other sizes first); cpu_free must be given the size that
// was allocated.
void* cpu_allocate(size_t nbytes);
void cpu_free(void* data, size_t nbytes);
// Uninitialised scratch memory for a kernel, from the same cache (a large block reused from
// one call to the next costs no page faults and no zeroing, as a std::vector's would).
template <typename T>
class CpuScratch {
  public:
    explicit CpuScratch(size_t count)
        : bytes_(count * sizeof(T)), data_(static_cast<T*>(cpu_allocate(bytes_))) {}
    ~CpuScratch() { cpu_free(data_, bytes_); }
    CpuScratch(const CpuScratch&) = delete;
    CpuScratch& operator=(const CpuScratch&) = delete;
    T* data() { return data_; }
    const T* data() const { return data_; }

  private:
    size_t bytes_;
    T* data_;
};
// Returns every cached CPU block to the system (the high-water mark above starts again from the
// bytes live now); the bytes the cache holds right now.
void cpu_empty_cache();
size_t cpu_cached_bytes();

// Bytes of tensor memory the CPU allocator has handed out and not yet taken back (rounded to
// its size classes), and the most there ever was since the last reset: what a forward and
// backward pass really needs, whatever the cache holds on top.
struct CpuMemoryStats {
    size_t allocated = 0, peak_allocated = 0;
    size_t cached = 0;  // freed blocks kept for reuse
};
CpuMemoryStats cpu_memory_stats();
// Sets the peak to the bytes allocated now.
void cpu_reset_peak_memory_stats();

namespace cuda {
// Byte counts of one device's allocator (core/cuda/allocator.cu). `allocated`: in live blocks
// (rounded sizes); `reserved`: in segments held from cudaMalloc (allocated + cached); peaks
// since the last reset; `segments`: cudaMalloc calls that succeeded so far; `ooms`: requests
// that failed.
struct MemoryStats {
    size_t allocated = 0, peak_allocated = 0;
    size_t reserved = 0, peak_reserved = 0;
    int64_t segments = 0, ooms = 0;
};
// All zero without the CUDA backend (cuda_built()) or for a device never used.
MemoryStats memory_stats(int device = 0);
// Peaks restart from the current values.
void reset_peak_memory_stats(int device = 0);
// Returns every segment with no live block to the driver (cudaFree).
void empty_cache(int device = 0);

// ---- the CUDA backend's entry points (core/cuda), weak: see core/cuda_guard.h. Only called
// for CUDA storage, which exists only when the backend is linked. ----

// Device memory through the caching allocator of core/cuda/allocator.cu: blocks are carved out
// of cudaMalloc'd segments and return to size-ordered free lists when their storage dies, so a
// training loop stops calling cudaMalloc/cudaFree after its first steps. Running out of memory
// throws [cuda] naming the request and the allocator's state (after returning the cache to the
// driver and trying once more).
LUMEN_CUDA_API void* allocate(size_t nbytes, int device);
LUMEN_CUDA_API void free(void* data, int device);
// memory_stats, reset_peak_memory_stats and empty_cache of the allocator.
LUMEN_CUDA_API MemoryStats allocator_stats(int device);
LUMEN_CUDA_API void allocator_reset_peak(int device);
LUMEN_CUDA_API void allocator_empty_cache(int device);

// Copies nbytes between host and device or device and device (synchronous on the stream).
LUMEN_CUDA_API void memcpy(void* dst, Device dst_device, const void* src, Device src_device,
                           size_t nbytes);
// The same, queued on the default stream and returning at once: ordered with the kernels
// launched after it; the host must not touch host memory it reads or writes before
// cuda_synchronize(). Host memory must be pinned for the copy to be truly asynchronous.
LUMEN_CUDA_API void memcpy_async(void* dst, Device dst_device, const void* src, Device src_device,
                                 size_t nbytes);
// Page-locked host memory (cudaHostAlloc / cudaFreeHost). Throws [cuda] naming the size.
LUMEN_CUDA_API void* host_allocate(size_t nbytes);
LUMEN_CUDA_API void host_free(void* data);
}  // namespace cuda

}  // namespace lumen
