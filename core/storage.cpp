// Storage lifetime and the CPU allocator (64-byte aligned for AVX-512 loads and cache lines,
// large blocks cached for reuse).
#include "core/storage.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/profiler.h"

namespace lumen {

constexpr size_t kCpuAlignment = 64;

namespace {

// Why a program may lack the CUDA backend (core/cuda_guard.h).
constexpr const char* kNoBackend =
    "lumen was built without CUDA, or the program does not link lumen::cuda";

// Large CPU blocks are cached instead of returned to the C library: glibc gives allocations of
// many megabytes straight back to the kernel, so every new activation would page-fault its way
// in again (at 16M floats that costs more than the op itself). Blocks of at least kCacheMin
// bytes are rounded up to a size class (four classes per power of two, <= 25% slack) and freed
// blocks wait in a free list per class, up to a total of LUMEN_CPU_CACHE_MB (default 2048).
// A free list serves its own class and the two below it (a block up to 1.5x the size asked
// for), so a cache left to grow holds, at the end of a training step, about every class's own
// peak: the forward's activations and the backward's gradients are
// different sizes, and the sum of those peaks can exceed the live peak by half (the process's
// memory with it). So live plus cached bytes are kept within the most ever live (the high-water
// mark): a block that misses the cache first gives back cached blocks of other classes until
// the new one fits under that mark. A training loop's steady state then holds what its peak
// needs, as a non-caching allocator would, and still reuses the blocks that repeat.
constexpr size_t kCacheMin = size_t(1) << 18;

size_t size_class(size_t nbytes) {
    if (nbytes < kCacheMin) return (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    size_t power = size_t(1) << (63 - __builtin_clzll(nbytes - 1));  // largest 2^k < nbytes
    size_t quarter = power / 4;
    return (nbytes + quarter - 1) / quarter * quarter;
}

struct CpuCache {
    std::mutex mutex;
    std::unordered_map<size_t, std::vector<void*>> free_blocks;  // size class -> blocks
    // Live blocks lent to a smaller class (allocate_rounded) -> their own class.
    std::unordered_map<void*, size_t> lent;
    size_t cached_bytes = 0;
    size_t high_water = 0;  // the most bytes live at once since the last cpu_empty_cache
    size_t limit = [] {
        const char* text = std::getenv("LUMEN_CPU_CACHE_MB");
        return (text ? size_t(std::strtoull(text, nullptr, 10)) : size_t(2048)) << 20;
    }();

    // Frees cached blocks, the largest class first, until at most `keep` bytes stay cached.
    // The caller holds the mutex.
    void release_to(size_t keep) {
        while (cached_bytes > keep) {
            auto largest = free_blocks.end();
            for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
                if (!it->second.empty() &&
                    (largest == free_blocks.end() || it->first > largest->first))
                    largest = it;
            std::free(largest->second.back());
            largest->second.pop_back();
            cached_bytes -= largest->first;
        }
    }

    // Frees every cached block; the high-water mark starts again from the bytes live now.
    void release_all(size_t live) {
        std::lock_guard lock(mutex);
        for (auto& [size, blocks] : free_blocks)
            for (void* block : blocks) std::free(block);
        free_blocks.clear();
        cached_bytes = 0;
        high_water = live;
    }
};

CpuCache& cpu_cache() {
    static CpuCache* cache = new CpuCache();  // never destroyed: storages may outlive statics
    return *cache;
}

std::atomic<size_t> cpu_allocated{0};
std::atomic<size_t> cpu_peak{0};

void count_allocation(size_t rounded) {
    size_t now = cpu_allocated.fetch_add(rounded, std::memory_order_relaxed) + rounded;
    size_t peak = cpu_peak.load(std::memory_order_relaxed);
    while (now > peak && !cpu_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

// A block of a size class (at least `rounded` bytes; its own class's bytes, which count as
// allocated, in `rounded`): from the cache when one of this class is free, or one of the next
// two classes (up to 1.5x: a step's forward and backward ask for slightly different sizes, and
// each such miss had given a cached block back and page-faulted a fresh one in, 8 % of a
// SimA training step), else from the C library, after giving back the cached blocks that
// would push live + cached bytes over the high-water mark.
void* allocate_rounded(size_t& rounded) {
    if (rounded >= kCacheMin) {
        CpuCache& cache = cpu_cache();
        std::lock_guard lock(cache.mutex);
        for (size_t size = rounded; size <= rounded + rounded / 2; size = size_class(size + 1)) {
            auto found = cache.free_blocks.find(size);
            if (found == cache.free_blocks.end() || found->second.empty()) continue;
            void* block = found->second.back();
            found->second.pop_back();
            cache.cached_bytes -= size;
            if (size != rounded) cache.lent.emplace(block, size);
            rounded = size;
            return block;
        }
        const size_t live = cpu_allocated.load(std::memory_order_relaxed) + rounded;
        cache.high_water = std::max(cache.high_water, live);
        cache.release_to(cache.high_water - live);
    }
    void* data = std::aligned_alloc(kCpuAlignment, rounded);
    if (data == nullptr) {  // give the cache back and try once more
        cpu_empty_cache();
        data = std::aligned_alloc(kCpuAlignment, rounded);
    }
    LUMEN_CHECK(data != nullptr, "allocator", "out of CPU memory allocating ", rounded, " bytes");
    return data;
}

}  // namespace

void* cpu_allocate(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    size_t rounded = size_class(nbytes);
    void* data = allocate_rounded(rounded);
    count_allocation(rounded);
    return data;
}

void cpu_free(void* data, size_t nbytes) {
    if (data == nullptr) return;
    size_t rounded = size_class(nbytes);
    if (rounded >= kCacheMin) {
        CpuCache& cache = cpu_cache();
        std::lock_guard lock(cache.mutex);
        if (auto lent = cache.lent.find(data); lent != cache.lent.end()) {
            rounded = lent->second;  // back to its own class
            cache.lent.erase(lent);
        }
        cpu_allocated.fetch_sub(rounded, std::memory_order_relaxed);
        if (cache.cached_bytes + rounded <= cache.limit) {
            cache.free_blocks[rounded].push_back(data);
            cache.cached_bytes += rounded;
            return;
        }
    } else {
        cpu_allocated.fetch_sub(rounded, std::memory_order_relaxed);
    }
    std::free(data);
}

void cpu_empty_cache() { cpu_cache().release_all(cpu_allocated.load(std::memory_order_relaxed)); }

size_t cpu_cached_bytes() {
    std::lock_guard lock(cpu_cache().mutex);
    return cpu_cache().cached_bytes;
}

CpuMemoryStats cpu_memory_stats() {
    return {cpu_allocated.load(std::memory_order_relaxed), cpu_peak.load(std::memory_order_relaxed),
            cpu_cached_bytes()};
}

void cpu_reset_peak_memory_stats() {
    cpu_peak.store(cpu_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
    profiler::on_allocate(nbytes);
    if (device.is_cpu()) {
        data_ = cpu_allocate(nbytes);
    } else {
        LUMEN_CHECK(cuda_built(), "cuda", "cannot allocate ", nbytes, " bytes on ", device,
                    ": this program has no CUDA backend (", kNoBackend, ")");
        data_ = nbytes ? cuda::allocate(nbytes, device.index) : nullptr;
    }
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void()> release)
    : data_(data), nbytes_(nbytes), device_(device), release_(std::move(release)) {}

std::shared_ptr<Storage> Storage::pinned_host(size_t nbytes) {
    LUMEN_CHECK(cuda_built(), "cuda", "cannot allocate ", nbytes,
                " bytes of pinned host memory: this program has no CUDA backend (", kNoBackend,
                ")");
    void* data = nbytes ? cuda::host_allocate(nbytes) : nullptr;
    auto storage = std::make_shared<Storage>(data, nbytes, Device::cpu(), [data] {
        if (data) cuda::host_free(data);
    });
    storage->pinned_ = true;
    return storage;
}

Storage::~Storage() {
    if (release_) {
        release_();
    } else if (device_.is_cpu()) {
        cpu_free(data_, nbytes_);
    } else if (data_) {
        cuda::free(data_, device_.index);
    }
}

namespace cuda {
MemoryStats memory_stats(int device) {
    return cuda_built() ? allocator_stats(device) : MemoryStats{};
}
void reset_peak_memory_stats(int device) {
    if (cuda_built()) allocator_reset_peak(device);
}
void empty_cache(int device) {
    if (cuda_built()) allocator_empty_cache(device);
}
}  // namespace cuda

}  // namespace lumen
