// Helpers of the CUDA norm and loss kernels: vector loads and stores, and the second stage of the
// deterministic two-stage reductions: the first stage writes one partial sum per block (or chunk of
// rows) to scratch, then finish_partials_kernel adds the partials of each output in a fixed order
// (no float atomics, so a result never depends on timing).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/scratch.cuh"
#include "core/storage.h"

namespace lumen::cuda {

// Synchronous copy of a few result bytes to the host (totals, an invalid-index flag).
inline void copy_to_host(void* host, const void* device, size_t nbytes) {
    LUMEN_CUDA_CHECK(cudaMemcpy(host, device, nbytes, cudaMemcpyDeviceToHost));
}

// Whether p is aligned for 16-byte vector accesses (an absent pointer does not matter).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// kVec consecutive values of T, aligned so that one load moves all of them.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
    T v[kVec];
};

// out[e] = p[e] in the accumulation type; p aligned to sizeof(T) * kVec.
template <typename T, int kVec>
__device__ __forceinline__ void load_pack(const T* p, acc_t<T>* out) {
    Pack<T, kVec> pack = *reinterpret_cast<const Pack<T, kVec>*>(p);
#pragma unroll
    for (int e = 0; e < kVec; ++e) out[e] = to_acc(pack.v[e]);
}

template <typename T, int kVec>
__device__ __forceinline__ void store_pack(T* p, const acc_t<T>* values) {
    Pack<T, kVec> pack;
#pragma unroll
    for (int e = 0; e < kVec; ++e) pack.v[e] = from_acc<T>(values[e]);
    *reinterpret_cast<Pack<T, kVec>*>(p) = pack;
}

// (outer, inner) of a flat index i = outer * size + inner, advanced by a fixed step without a
// division per step: the step splits once into whole `size`s and a remainder, and the
// remainder carries at most once. size > 0.
struct Cursor {
    int64_t outer, inner, step_outer, step_inner, size;
    __device__ Cursor(int64_t i, int64_t step, int64_t size_)
        : outer(i / size_),
          inner(i % size_),
          step_outer(step / size_),
          step_inner(step % size_),
          size(size_) {}
    __device__ void advance() {
        outer += step_outer;
        inner += step_inner;
        if (inner >= size) {
            inner -= size;
            ++outer;
        }
    }
};

// Second stage: for each output j of `outputs`, total[k] = sum over p < parts of
// partial[k * array_stride + p * outputs + j] (K arrays of part-major partials, added in order
// of p), then finish(j, total). One thread per output: `parts` is kept small (<= ~1024).
template <typename A, int K, typename Finish>
__global__ void finish_partials_kernel(const A* partial, int64_t outputs, int64_t parts,
                                       int64_t array_stride, Finish finish) {
    for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < outputs;
         j += int64_t(gridDim.x) * blockDim.x) {
        A total[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            A sum = 0;
            for (int64_t p = 0; p < parts; ++p) sum += partial[k * array_stride + p * outputs + j];
            total[k] = sum;
        }
        finish(j, total);
    }
}

// Launches finish_partials_kernel over `outputs` outputs.
template <typename A, int K, typename Finish>
void finish_partials(const A* partial, int64_t outputs, int64_t parts, int64_t array_stride,
                     Finish finish) {
    if (outputs == 0) return;
    int64_t blocks = (outputs + 255) / 256;
    finish_partials_kernel<A, K, Finish><<<unsigned(blocks < 65535 ? blocks : 65535), 256>>>(
        partial, outputs, parts, array_stride, finish);
    LUMEN_CUDA_CHECK_LAUNCH("finish_partials_kernel");
}

// ---- loss totals ----

// What a loss launch hands back to the host: its totals and the lowest flat index of an
// invalid element (all bits set when none).
struct DeviceTotals {
    double totals[2];
    unsigned long long first_invalid;
};

struct HostTotals {
    double totals[2] = {0, 0};
    int64_t first_invalid = -1;
};

template <typename A, int K>
struct TotalsFinish {
    DeviceTotals* result;
    __device__ void operator()(int64_t, const A* total) const {
#pragma unroll
        for (int k = 0; k < K; ++k) result->totals[k] = double(total[k]);
    }
};

// Scratch for the K totals of a loss over `blocks` blocks: block b writes its sums to
// partial()[k * blocks + b]; read() adds them in block order and copies the totals and the
// invalid flag back (one synchronizing copy).
template <typename A, int K>
class BlockTotals {
  public:
    explicit BlockTotals(int64_t blocks)
        : blocks_(blocks), scratch_(sizeof(DeviceTotals) + size_t(K * blocks) * sizeof(A)) {
        LUMEN_CUDA_CHECK(cudaMemsetAsync(first_invalid(), 0xff, sizeof(unsigned long long)));
    }
    A* partial() const { return reinterpret_cast<A*>(scratch_.as<char>() + sizeof(DeviceTotals)); }
    unsigned long long* first_invalid() const { return &result()->first_invalid; }
    HostTotals read() const {
        finish_partials<A, K>(partial(), 1, blocks_, blocks_, TotalsFinish<A, K>{result()});
        DeviceTotals device;
        copy_to_host(&device, result(), sizeof device);
        HostTotals host;
        for (int k = 0; k < K; ++k) host.totals[k] = device.totals[k];
        host.first_invalid = device.first_invalid == ~0ull ? -1 : int64_t(device.first_invalid);
        return host;
    }

  private:
    DeviceTotals* result() const { return scratch_.as<DeviceTotals>(); }
    int64_t blocks_;
    Scratch scratch_;
};

// Notes flat index i as invalid; the lowest one noted wins (as FirstInvalid on the CPU).
__device__ __forceinline__ void note_invalid(unsigned long long* first_invalid, int64_t i) {
    if (static_cast<unsigned long long>(i) <
        *reinterpret_cast<volatile unsigned long long*>(first_invalid))
        atomicMin(first_invalid, static_cast<unsigned long long>(i));
}

}  // namespace lumen::cuda
