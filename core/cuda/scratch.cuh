// Scratch: temporary device memory for a kernel launcher, taken from the caching allocator
// (core/storage.h) and handed back when it goes out of scope. Everything runs on the default
// stream, so kernels queued before the release finish before the block is reused.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/storage.h"

namespace lumen::cuda {

class Scratch {
  public:
    // `count` elements of T on the current device (none for count 0).
    template <typename T>
    static Scratch of(int64_t count) {
        return Scratch(size_t(count > 0 ? count : 0) * sizeof(T));
    }
    explicit Scratch(size_t nbytes) {
        LUMEN_CUDA_CHECK(cudaGetDevice(&device_));
        if (nbytes > 0) data_ = allocate(nbytes, device_);
    }
    ~Scratch() {
        if (data_) cuda::free(data_, device_);
    }
    Scratch(Scratch&& other) noexcept : data_(other.data_), device_(other.device_) {
        other.data_ = nullptr;
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    Scratch& operator=(Scratch&&) = delete;

    void* data() const { return data_; }
    // The memory as T, `offset` elements in.
    template <typename T>
    T* as(size_t offset = 0) const {
        return static_cast<T*>(data_) + offset;
    }

  private:
    void* data_ = nullptr;
    int device_ = 0;
};

}  // namespace lumen::cuda
