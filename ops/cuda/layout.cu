// CUDA kernels of the layout family with the semantics of ops/cpu/layout.cpp. flip and
// tril/triu are index remaps that move bits (one thread per output element, coalesced on the
// output). cumsum scans contiguous (outer, length, inner) blocks: with inner > 1 one thread
// per column runs down its line (adjacent threads read adjacent columns, and the sums are the
// CPU's, in its order); with inner == 1 short lines get one thread each and long ones a warp,
// which scans 128 elements per step with shuffles and carries the total to the next step.

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/layout_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;

// out[i] = in[i] through both views' strides (the source may have negative strides).
template <typename T>
__global__ void remap_kernel(StridedView out, StridedView in, int64_t count) {
    T* to = static_cast<T*>(out.data);
    const T* from = static_cast<const T*>(in.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        to[strided_offset(out, i)] = from[strided_offset(in, i)];
}

// Keeps col - row <= diagonal (lower) or >= diagonal (upper) of each (rows, cols) matrix.
template <typename T>
__global__ void tril_kernel(const T* x, T* out, int64_t rows, int64_t cols, int64_t diagonal,
                            bool lower, int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t col = i % cols, row = i / cols % rows;
        bool keep = lower ? col - row <= diagonal : col - row >= diagonal;
        out[i] = keep ? x[i] : T(0);
    }
}

template <typename Acc, typename T>
__device__ __forceinline__ Acc load_acc(T value) {
    if constexpr (is_half_v<T>) {
        return to_acc(value);
    } else {
        return Acc(value);
    }
}

template <typename Out, typename Acc>
__device__ __forceinline__ Out store_acc(Acc value) {
    if constexpr (is_half_v<Out>) {
        return from_acc<Out>(value);
    } else {
        return Out(value);
    }
}

// One thread per line of `length` elements `inner` apart (a column of a block, or a whole
// short contiguous line when inner == 1).
template <typename T, typename Out, typename Acc>
__global__ void scan_lines_kernel(const T* x, Out* out, int64_t length, int64_t inner,
                                  int64_t lines, bool reverse) {
    for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < lines;
         t += int64_t(gridDim.x) * blockDim.x) {
        int64_t base = t / inner * length * inner + t % inner;
        Acc total = Acc(0);
        for (int64_t step = 0; step < length; ++step) {
            int64_t at = base + (reverse ? length - 1 - step : step) * inner;
            total += load_acc<Acc>(x[at]);
            out[at] = store_acc<Out>(total);
        }
    }
}

constexpr int kScanItems = 4;  // consecutive elements per lane and step of the warp scan

// One warp per contiguous line. Each step: every lane sums its kScanItems elements, the warp
// turns the lane totals into an exclusive prefix (shuffles), and the step's total is carried.
template <typename T, typename Out, typename Acc>
__global__ void scan_warp_kernel(const T* x, Out* out, int64_t length, int64_t lines,
                                 bool reverse) {
    const int lane = int(threadIdx.x % kWarpSize);
    const int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
    // The line is the same for all lanes of a warp, so every shuffle sees 32 lanes.
    for (int64_t line = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize; line < lines;
         line += warps) {
        const T* in = x + line * length;
        Out* to = out + line * length;
        Acc carry = Acc(0);
        for (int64_t first = 0; first < length; first += kWarpSize * kScanItems) {
            Acc partial[kScanItems];
            Acc local = Acc(0);
            for (int k = 0; k < kScanItems; ++k) {
                int64_t s = first + lane * kScanItems + k;  // position along the scan
                if (s < length) local += load_acc<Acc>(in[reverse ? length - 1 - s : s]);
                partial[k] = local;
            }
            Acc inclusive = local;
            for (int offset = 1; offset < kWarpSize; offset <<= 1) {
                Acc below = __shfl_up_sync(kFullMask, inclusive, offset);
                if (lane >= offset) inclusive += below;
            }
            Acc exclusive = __shfl_up_sync(kFullMask, inclusive, 1);
            Acc before = lane == 0 ? carry : carry + exclusive;
            for (int k = 0; k < kScanItems; ++k) {
                int64_t s = first + lane * kScanItems + k;
                if (s < length)
                    to[reverse ? length - 1 - s : s] = store_acc<Out>(before + partial[k]);
            }
            carry += __shfl_sync(kFullMask, inclusive, kWarpSize - 1);
        }
    }
}

}  // namespace

void flip_forward(const StridedView& x, const StridedView& out, uint32_t flipped) {
    int64_t count = out.numel();
    if (count == 0) return;
    // Reading x from the last element backwards along each flipped dim is a plain strided
    // copy with a negative stride there (as on the CPU).
    StridedView source = x;
    int64_t start = 0;
    for (int d = 0; d < x.ndim; ++d) {
        if (!(flipped >> d & 1u)) continue;
        start += (x.shape[d] - 1) * x.strides[d];
        source.strides[d] = -x.strides[d];
    }
    source.data = static_cast<char*>(x.data) + start * int64_t(itemsize(x.dtype));
    StridedView views[2] = {out, source};
    coalesce_dims(views, 2);
    dispatch_bits(x.dtype, [&]<typename T>() {
        remap_kernel<T><<<grid_for(count), kThreads>>>(views[0], views[1], count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("remap_kernel");
}

void tril_forward(const StridedView& x, const StridedView& out, int64_t diagonal, bool lower) {
    int64_t rows = x.shape[x.ndim - 2], cols = x.shape[x.ndim - 1];
    int64_t count = x.numel();
    if (count == 0) return;
    dispatch_bits(x.dtype, [&]<typename T>() {
        tril_kernel<T><<<grid_for(count), kThreads>>>(x.ptr<const T>(), out.ptr<T>(), rows, cols,
                                                      diagonal, lower, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("tril_kernel");
}

void cumsum_forward(const StridedView& x, const StridedView& out, int dim, bool reverse) {
    const DimBlocks b = dim_blocks(x, dim);
    const int64_t outer = b.outer, length = b.length, inner = b.inner;
    if (outer * length * inner == 0) return;
    dispatch_all(x.dtype, "cumsum", [&]<typename T>() {
        using Acc = typename CumsumTypes<T>::acc;
        using Out = typename CumsumTypes<T>::out;
        const T* in = x.ptr<const T>();
        Out* to = out.ptr<Out>();
        if (inner > 1 || length <= kWarpSize) {
            int64_t lines = outer * inner;
            scan_lines_kernel<T, Out, Acc>
                <<<grid_for(lines), kThreads>>>(in, to, length, inner, lines, reverse);
        } else {
            scan_warp_kernel<T, Out, Acc>
                <<<grid_for(outer * kWarpSize), kThreads>>>(in, to, length, outer, reverse);
        }
    });
    LUMEN_CUDA_CHECK_LAUNCH("cumsum_kernel");
}

}  // namespace lumen::cuda
