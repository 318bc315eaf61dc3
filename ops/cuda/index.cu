// CUDA kernels of the index family with the semantics of ops/cpu/index.cpp: one thread per
// element of the index (gather, scatter_add, one_hot) or of the moved block (index_select,
// index_add), in grid-stride loops. Out-of-range indices are skipped and the first one (in the
// index's row-major order) is recorded with atomicMin in device memory; the launcher reads it
// back after the launch, so the op reports the same value as the CPU. Data movement goes by
// element size, so every dtype works; adds go through atomics (floating sums with repeated
// indices are therefore not bit-reproducible; integer sums are exact).
#include <climits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/scratch.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "core/storage.h"
#include "ops/index_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNoBadIndex = ~0ull;

// The first bad position of a launch (kNoBadIndex until a kernel lowers it).
class BadIndexReport {
  public:
    BadIndexReport() : scratch_(sizeof(unsigned long long)) {
        LUMEN_CUDA_CHECK(cudaMemset(device(), 0xff, sizeof(unsigned long long)));
    }

    unsigned long long* device() const { return scratch_.as<unsigned long long>(); }

    // After the launch (the copy waits for it): the value of the first bad element of
    // `index`, read from the device as well.
    BadIndex read(const StridedView& index) const {
        unsigned long long first = kNoBadIndex;
        LUMEN_CUDA_CHECK(cudaMemcpy(&first, device(), sizeof first, cudaMemcpyDeviceToHost));
        if (first == kNoBadIndex) return {};
        size_t bytes = itemsize(index.dtype);
        const char* at = static_cast<const char*>(index.data) +
                         strided_offset(index, int64_t(first)) * int64_t(bytes);
        BadIndex bad{true, 0};
        if (index.dtype == DType::int32) {
            int32_t value = 0;
            LUMEN_CUDA_CHECK(cudaMemcpy(&value, at, bytes, cudaMemcpyDeviceToHost));
            bad.value = value;
        } else {
            LUMEN_CUDA_CHECK(cudaMemcpy(&bad.value, at, bytes, cudaMemcpyDeviceToHost));
        }
        return bad;
    }

  private:
    Scratch scratch_;
};

__device__ __forceinline__ bool out_of_range(int64_t k, int64_t size) {
    return uint64_t(k) >= uint64_t(size);  // negatives wrap to huge values
}

// k when it lies in [0, size); otherwise records index position i in *first_bad (the lowest
// wins) and returns -1, and the caller skips the element.
__device__ __forceinline__ int64_t checked_pick(int64_t k, int64_t size, int64_t i,
                                                unsigned long long* first_bad) {
    if (!out_of_range(k, size)) return k;
    atomicMin(first_bad, (unsigned long long)i);
    return -1;
}

// ---- atomics ----

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int32_t* p, int32_t v) { atomicAdd(p, v); }
// Two's complement: an unsigned 64-bit add is the signed add, wrapping alike.
__device__ __forceinline__ void atomic_add(int64_t* p, int64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
// No byte atomics: compare-and-swap the aligned 32-bit word that holds the byte. Device blocks
// are multiples of 512 bytes (core/cuda/allocator.cu), so the word lies inside the allocation.
__device__ void atomic_add(uint8_t* p, uint8_t v) {
    uintptr_t address = reinterpret_cast<uintptr_t>(p);
    unsigned* word = reinterpret_cast<unsigned*>(address & ~uintptr_t(3));
    unsigned shift = unsigned(address & 3) * 8;
    unsigned old = *word, assumed = 0;
    do {
        assumed = old;
        unsigned byte = ((assumed >> shift) + v) & 0xffu;
        old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (byte << shift));
    } while (old != assumed);
}

// ---- checks ----

template <typename I>
__global__ void find_out_of_range_kernel(StridedView index, int64_t size, int64_t count,
                                         unsigned long long* first) {
    const I* data = static_cast<const I*>(index.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        if (out_of_range(data[strided_offset(index, i)], size))
            atomicMin(first, (unsigned long long)i);
}

// Per-thread extremes, then per warp (every lane reaches the shuffles), then one atomic each.
template <typename I>
__global__ void min_max_kernel(StridedView index, int64_t count, long long* extremes) {
    const I* data = static_cast<const I*>(index.data);
    long long low = LLONG_MAX, high = LLONG_MIN;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        long long value = data[strided_offset(index, i)];
        low = value < low ? value : low;
        high = value > high ? value : high;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        long long other_low = __shfl_xor_sync(0xffffffffu, low, offset);
        long long other_high = __shfl_xor_sync(0xffffffffu, high, offset);
        low = other_low < low ? other_low : low;
        high = other_high > high ? other_high : high;
    }
    if (threadIdx.x % 32 == 0) {
        atomicMin(&extremes[0], low);
        atomicMax(&extremes[1], high);
    }
}

// ---- gather / scatter_add ----

// Offsets of element i (row-major over index's shape) in `index`, in `full` (every
// coordinate) and in `base` (every coordinate but `dim`: the index value supplies that one).
struct Offsets {
    int64_t index = 0, full = 0, base = 0;
};

__device__ __forceinline__ Offsets offsets_of(int64_t i, const StridedView& index,
                                              const StridedView& full, const StridedView& base,
                                              int dim) {
    Offsets at;
    for (int d = index.ndim - 1; d >= 0; --d) {
        int64_t c = i % index.shape[d];
        i /= index.shape[d];
        at.index += c * index.strides[d];
        at.full += c * full.strides[d];
        if (d != dim) at.base += c * base.strides[d];
    }
    return at;
}

// out[p] = x[p with coordinate `dim` replaced by index[p]], p over index's shape.
template <typename T, typename I>
__global__ void gather_kernel(StridedView x, StridedView index, StridedView out, int dim,
                              int64_t count, unsigned long long* first_bad) {
    const T* from = static_cast<const T*>(x.data);
    const I* picks = static_cast<const I*>(index.data);
    T* to = static_cast<T*>(out.data);
    const int64_t size = x.ndim ? x.shape[dim] : 1, step = x.ndim ? x.strides[dim] : 0;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Offsets at = offsets_of(i, index, out, x, dim);
        int64_t k = checked_pick(picks[at.index], size, i, first_bad);
        if (k >= 0) to[at.full] = from[at.base + k * step];
    }
}

// out[p with coordinate `dim` replaced by index[p]] += src[p], p over index's shape.
template <typename T, typename I>
__global__ void scatter_add_kernel(StridedView out, StridedView index, StridedView src, int dim,
                                   int64_t count, unsigned long long* first_bad) {
    T* to = static_cast<T*>(out.data);
    const I* picks = static_cast<const I*>(index.data);
    const T* from = static_cast<const T*>(src.data);
    const int64_t size = out.ndim ? out.shape[dim] : 1, step = out.ndim ? out.strides[dim] : 0;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Offsets at = offsets_of(i, index, src, out, dim);
        int64_t k = checked_pick(picks[at.index], size, i, first_bad);
        if (k >= 0) atomic_add(to + at.base + k * step, from[at.full]);
    }
}

// ---- index_select / index_add over contiguous (outer, length, inner) blocks ----

// out row (o, i) = x row (o, index[i]); rows are `inner` units of U (a whole row moves as
// 16-, 8-, 4-, 2- or 1-byte units, whichever divides it and both base addresses).
template <typename U, typename I>
__global__ void index_select_kernel(const U* x, const I* index, int64_t index_step, U* out,
                                    DimBlocks b, int64_t count, int64_t total) {
    for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
         t += int64_t(gridDim.x) * blockDim.x) {
        int64_t c = t % b.inner, rest = t / b.inner;
        int64_t i = rest % count, o = rest / count;
        out[t] = x[(o * b.length + index[i * index_step]) * b.inner + c];
    }
}

// out row (o, index[i]) += alpha * source row (o, i); alpha == 1 adds the value itself, as
// the CPU does.
template <typename T, typename I>
__global__ void index_add_kernel(T* out, const I* index, int64_t index_step, const T* source,
                                 DimBlocks b, int64_t count, int64_t total, T scale, bool unit) {
    for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
         t += int64_t(gridDim.x) * blockDim.x) {
        int64_t c = t % b.inner, rest = t / b.inner;
        int64_t i = rest % count, o = rest / count;
        T value = unit ? source[t] : T(scale * source[t]);
        atomic_add(out + (o * b.length + index[i * index_step]) * b.inner + c, value);
    }
}

template <typename I>
__global__ void one_hot_kernel(StridedView index, int64_t* out, int64_t num_classes,
                               int64_t count) {
    const I* data = static_cast<const I*>(index.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        out[i * num_classes + data[strided_offset(index, i)]] = 1;
}

// The widest unit (bytes) that divides a row and both base addresses.
int move_unit(size_t row_bytes, const void* a, const void* b) {
    for (int unit : {16, 8, 4, 2}) {
        bool fits = row_bytes % size_t(unit) == 0 && reinterpret_cast<uintptr_t>(a) % unit == 0 &&
                    reinterpret_cast<uintptr_t>(b) % unit == 0;
        if (fits) return unit;
    }
    return 1;
}

template <typename F>
decltype(auto) dispatch_unit(int unit, F&& body) {
    switch (unit) {
        case 16: return body.template operator()<uint4>();
        case 8: return body.template operator()<uint64_t>();
        case 4: return body.template operator()<uint32_t>();
        case 2: return body.template operator()<uint16_t>();
        default: return body.template operator()<uint8_t>();
    }
}

}  // namespace

BadIndex find_out_of_range(const StridedView& index, int64_t size) {
    int64_t count = index.numel();
    if (count == 0) return {};
    BadIndexReport report;
    dispatch_index(index.dtype, [&]<typename I>() {
        find_out_of_range_kernel<I>
            <<<grid_for(count), kThreads>>>(index, size, count, report.device());
    });
    LUMEN_CUDA_CHECK_LAUNCH("find_out_of_range_kernel");
    return report.read(index);
}

void index_min_max(const StridedView& index, int64_t& min, int64_t& max) {
    int64_t count = index.numel();
    long long host[2] = {LLONG_MAX, LLONG_MIN};
    Scratch extremes(sizeof host);
    LUMEN_CUDA_CHECK(
        cudaMemcpy(extremes.as<long long>(), host, sizeof host, cudaMemcpyHostToDevice));
    dispatch_index(index.dtype, [&]<typename I>() {
        min_max_kernel<I><<<grid_for(count), kThreads>>>(index, count, extremes.as<long long>());
    });
    LUMEN_CUDA_CHECK_LAUNCH("min_max_kernel");
    LUMEN_CUDA_CHECK(
        cudaMemcpy(host, extremes.as<long long>(), sizeof host, cudaMemcpyDeviceToHost));
    min = host[0];
    max = host[1];
}

BadIndex gather_forward(const StridedView& x, const StridedView& index, const StridedView& out,
                        int dim) {
    int64_t count = index.numel();
    if (count == 0) return {};
    BadIndexReport report;
    dispatch_bits(x.dtype, [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            gather_kernel<T, I>
                <<<grid_for(count), kThreads>>>(x, index, out, dim, count, report.device());
        });
    });
    LUMEN_CUDA_CHECK_LAUNCH("gather_kernel");
    return report.read(index);
}

BadIndex scatter_add_forward(const StridedView& out, const StridedView& index,
                             const StridedView& src, int dim) {
    int64_t count = index.numel();
    if (count == 0) return {};
    BadIndexReport report;
    dispatch_numeric(out.dtype, "scatter_add", [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            scatter_add_kernel<T, I>
                <<<grid_for(count), kThreads>>>(out, index, src, dim, count, report.device());
        });
    });
    LUMEN_CUDA_CHECK_LAUNCH("scatter_add_kernel");
    return report.read(index);
}

void index_select_forward(const StridedView& x, const StridedView& index, const StridedView& out,
                          int dim) {
    DimBlocks b = dim_blocks(x, dim);
    int64_t count = index.numel(), index_step = index.ndim ? index.strides[0] : 0;
    if (b.outer * count * b.inner == 0) return;
    size_t row_bytes = size_t(b.inner) * itemsize(x.dtype);
    int unit = move_unit(row_bytes, x.data, out.data);
    b.inner = int64_t(row_bytes / size_t(unit));
    int64_t total = b.outer * count * b.inner;
    dispatch_unit(unit, [&]<typename U>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            index_select_kernel<U, I><<<grid_for(total), kThreads>>>(
                x.ptr<const U>(), index.ptr<const I>(), index_step, out.ptr<U>(), b, count, total);
        });
    });
    LUMEN_CUDA_CHECK_LAUNCH("index_select_kernel");
}

void index_add_forward(const StridedView& out, const StridedView& index, const StridedView& source,
                       int dim, double alpha) {
    DimBlocks b = dim_blocks(out, dim);
    int64_t count = index.numel(), index_step = index.ndim ? index.strides[0] : 0;
    int64_t total = b.outer * count * b.inner;
    if (total == 0) return;
    dispatch_numeric(out.dtype, "index_add", [&]<typename T>() {
        dispatch_index(index.dtype, [&]<typename I>() {
            index_add_kernel<T, I><<<grid_for(total), kThreads>>>(
                out.ptr<T>(), index.ptr<const I>(), index_step, source.ptr<const T>(), b, count,
                total, T(alpha), alpha == 1.0);
        });
    });
    LUMEN_CUDA_CHECK_LAUNCH("index_add_kernel");
}

void one_hot_forward(const StridedView& index, const StridedView& out, int64_t num_classes) {
    int64_t count = index.numel();
    if (count == 0) return;
    dispatch_index(index.dtype, [&]<typename I>() {
        one_hot_kernel<I>
            <<<grid_for(count), kThreads>>>(index, out.ptr<int64_t>(), num_classes, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("one_hot_kernel");
}

}  // namespace lumen::cuda
