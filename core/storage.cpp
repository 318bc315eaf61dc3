// Storage lifetime and the CPU allocator (64-byte aligned for AVX-512 loads and cache lines,
// large blocks cached for reuse).
#include "core/storage.h"

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
    size_t cached_bytes = 0;
    size_t limit = [] {
        const char* text = std::getenv("LUMEN_CPU_CACHE_MB");
        return (text ? size_t(std::strtoull(text, nullptr, 10)) : size_t(2048)) << 20;
    }();

    void release_all() {
        std::lock_guard lock(mutex);
        for (auto& [size, blocks] : free_blocks)
            for (void* block : blocks) std::free(block);
        free_blocks.clear();
        cached_bytes = 0;
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

// A block of a size class: from the cache when one is free, else from the C library.
void* allocate_rounded(size_t rounded) {
    if (rounded >= kCacheMin) {
        CpuCache& cache = cpu_cache();
        std::lock_guard lock(cache.mutex);
        auto found = cache.free_blocks.find(rounded);
        if (found != cache.free_blocks.end() && !found->second.empty()) {
            void* block = found->second.back();
            found->second.pop_back();
            cache.cached_bytes -= rounded;
            return block;
        }
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
    cpu_allocated.fetch_sub(rounded, std::memory_order_relaxed);
    if (rounded >= kCacheMin) {
        CpuCache& cache = cpu_cache();
        std::lock_guard lock(cache.mutex);
        if (cache.cached_bytes + rounded <= cache.limit) {
            cache.free_blocks[rounded].push_back(data);
            cache.cached_bytes += rounded;
            return;
        }
    }
    std::free(data);
}

void cpu_empty_cache() { cpu_cache().release_all(); }

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
