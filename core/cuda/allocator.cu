// The CUDA caching allocator. cudaMalloc and cudaFree are slow and synchronize the device, so
// device memory is taken from the driver in segments and handed out in blocks:
//   - every block size is a multiple of 512 bytes;
//   - requests up to 1 MiB are carved from 2 MiB segments (the small pool), requests up to
//     10 MiB from 20 MiB segments, larger ones get a segment of their own rounded to 2 MiB
//     (the large pool);
//   - a free block is found best-fit in a free list ordered by size, and split when what is
//     left over is worth keeping (any remainder in the small pool, > 1 MiB in the large one);
//   - a freed block merges with free neighbours of its segment and goes back to its list.
// All lumen work runs on the legacy default stream, so a freed block can be handed out again
// at once: kernels that used it are ordered before any kernel that reuses it. When cudaMalloc
// fails, segments without a live block are returned to the driver and the request is tried
// once more; if it fails again, the error names the request and the allocator's state.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/device.h"
#include "core/storage.h"

namespace lumen::cuda {
namespace {

constexpr size_t kAlignment = 512;
constexpr size_t kSmallRequest = size_t(1) << 20;  // largest request of the small pool
constexpr size_t kSmallSegment = size_t(2) << 20;
constexpr size_t kMidRequest = size_t(10) << 20;   // largest request sharing a kMidSegment
constexpr size_t kMidSegment = size_t(20) << 20;
constexpr size_t kLargeRounding = size_t(2) << 20;

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string format_bytes(size_t bytes) {
    char text[32];
    if (bytes >= (size_t(1) << 30)) {
        std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(size_t(1) << 30));
    } else if (bytes >= (size_t(1) << 20)) {
        std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(size_t(1) << 20));
    } else {
        std::snprintf(text, sizeof text, "%zu bytes", bytes);
    }
    return text;
}

// A piece of a segment, linked to its neighbours in address order.
struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    bool small = false;      // which pool it belongs to
    bool allocated = false;
    Block* prev = nullptr;
    Block* next = nullptr;
};

struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
        return a->size != b->size ? a->size < b->size : std::less<char*>()(a->ptr, b->ptr);
    }
};
using FreeList = std::set<Block*, BySizeThenAddress>;

// Makes `device` current for the lifetime of the guard.
class DeviceGuard {
  public:
    explicit DeviceGuard(int device) {
        cudaGetDevice(&previous_);
        if (previous_ != device) cudaSetDevice(device);
    }
    ~DeviceGuard() { cudaSetDevice(previous_); }

  private:
    int previous_ = 0;
};

class DeviceAllocator {
  public:
    explicit DeviceAllocator(int device) : device_(device) {}

    void* allocate(size_t nbytes) {
        size_t size = round_up(std::max<size_t>(nbytes, 1), kAlignment);
        bool small = size <= kSmallRequest;
        FreeList& pool = small ? small_free_ : large_free_;
        Block* block = take_best_fit(pool, size);
        if (block == nullptr) block = new_segment(nbytes, size, small);
        split(block, size, pool);
        block->allocated = true;
        live_[block->ptr] = block;
        stats_.allocated += block->size;
        stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
        return block->ptr;
    }

    void free(void* data) {
        auto it = live_.find(static_cast<char*>(data));
        if (it == live_.end()) return;  // not ours: nothing sensible to do in a destructor
        Block* block = it->second;
        live_.erase(it);
        block->allocated = false;
        stats_.allocated -= block->size;
        FreeList& pool = block->small ? small_free_ : large_free_;
        if (Block* prev = block->prev; prev != nullptr && !prev->allocated) {
            pool.erase(prev);  // before its size changes: the list is ordered by size
            prev->size += block->size;
            unlink(block);
            block = prev;
        }
        if (Block* next = block->next; next != nullptr && !next->allocated) {
            pool.erase(next);
            block->size += next->size;
            unlink(next);
        }
        pool.insert(block);
    }

    // Returns every segment that is one free block to the driver.
    void release_cached() {
        for (FreeList* pool : {&small_free_, &large_free_}) {
            for (auto it = pool->begin(); it != pool->end();) {
                Block* block = *it;
                if (block->prev != nullptr || block->next != nullptr) {
                    ++it;
                    continue;
                }
                {
                    DeviceGuard guard(device_);
                    cudaFree(block->ptr);
                }
                stats_.reserved -= block->size;
                it = pool->erase(it);
                delete block;
            }
        }
    }

    MemoryStats stats() const { return stats_; }
    void reset_peaks() {
        stats_.peak_allocated = stats_.allocated;
        stats_.peak_reserved = stats_.reserved;
    }

  private:
    Block* take_best_fit(FreeList& pool, size_t size) {
        Block key;
        key.size = size;
        auto it = pool.lower_bound(&key);
        if (it == pool.end()) return nullptr;
        Block* block = *it;
        pool.erase(it);
        return block;
    }

    // Cuts `size` bytes off the front of `block` when the rest is worth keeping.
    void split(Block* block, size_t size, FreeList& pool) {
        size_t rest = block->size - size;
        if (block->small ? rest < kAlignment : rest <= kSmallRequest) return;
        auto* tail = new Block{block->ptr + size, rest, block->small, false, block, block->next};
        if (block->next != nullptr) block->next->prev = tail;
        block->next = tail;
        block->size = size;
        pool.insert(tail);
    }

    // Removes `block` from its segment's chain and deletes it (its bytes went to a neighbour).
    static void unlink(Block* block) {
        if (block->prev != nullptr) block->prev->next = block->next;
        if (block->next != nullptr) block->next->prev = block->prev;
        delete block;
    }

    Block* new_segment(size_t requested, size_t size, bool small) {
        size_t segment = small ? kSmallSegment
                         : size <= kMidRequest ? kMidSegment
                                               : round_up(size, kLargeRounding);
        void* ptr = nullptr;
        DeviceGuard guard(device_);
        cudaError_t status = cudaMalloc(&ptr, segment);
        if (status != cudaSuccess) {
            cudaGetLastError();  // clear it, give the cache back and try once more
            release_cached();
            status = cudaMalloc(&ptr, segment);
        }
        if (status != cudaSuccess) {
            cudaGetLastError();
            ++stats_.ooms;
            size_t free_bytes = 0, total_bytes = 0;
            cudaMemGetInfo(&free_bytes, &total_bytes);
            LUMEN_FAIL("cuda", "out of memory allocating ", requested, " bytes (",
                       format_bytes(requested), ", a segment of ", format_bytes(segment),
                       ") on cuda:", device_, ". lumen holds ", format_bytes(stats_.allocated),
                       " in live tensors and ", format_bytes(stats_.reserved),
                       " reserved in total; the GPU has ", format_bytes(free_bytes), " free of ",
                       format_bytes(total_bytes), " (", cudaGetErrorString(status), ")");
        }
        ++stats_.segments;
        stats_.reserved += segment;
        stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
        return new Block{static_cast<char*>(ptr), segment, small, false, nullptr, nullptr};
    }

    int device_;
    FreeList small_free_, large_free_;
    std::unordered_map<char*, Block*> live_;
    MemoryStats stats_;
};

std::mutex& allocator_mutex() {
    static std::mutex mutex;
    return mutex;
}

// One allocator per device, created on first use and never destroyed: storages released
// during static destruction must still find it (and the driver may be gone by then anyway).
DeviceAllocator* find_allocator(int device, bool create) {
    static auto* allocators = new std::vector<std::unique_ptr<DeviceAllocator>>();
    if (device < 0) return nullptr;
    if (size_t(device) >= allocators->size()) {
        if (!create) return nullptr;
        allocators->resize(size_t(device) + 1);
    }
    auto& slot = (*allocators)[size_t(device)];
    if (!slot && create) slot = std::make_unique<DeviceAllocator>(device);
    return slot.get();
}

int visible_devices() {
    static const int count = cuda_device_count();
    return count;
}

}  // namespace

void* allocate(size_t nbytes, int device) {
    LUMEN_CHECK(device >= 0 && device < visible_devices(), "cuda", "cannot allocate ", nbytes,
                " bytes on cuda:", device, ": ", visible_devices(), " CUDA device(s) visible");
    std::lock_guard lock(allocator_mutex());
    return find_allocator(device, true)->allocate(nbytes);
}

void free(void* data, int device) {
    std::lock_guard lock(allocator_mutex());
    if (DeviceAllocator* allocator = find_allocator(device, false)) allocator->free(data);
}

MemoryStats allocator_stats(int device) {
    std::lock_guard lock(allocator_mutex());
    DeviceAllocator* allocator = find_allocator(device, false);
    return allocator ? allocator->stats() : MemoryStats{};
}

void allocator_reset_peak(int device) {
    std::lock_guard lock(allocator_mutex());
    if (DeviceAllocator* allocator = find_allocator(device, false)) allocator->reset_peaks();
}

void allocator_empty_cache(int device) {
    std::lock_guard lock(allocator_mutex());
    if (DeviceAllocator* allocator = find_allocator(device, false)) allocator->release_cached();
}

}  // namespace lumen::cuda
