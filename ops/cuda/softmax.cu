// CUDA softmax / log_softmax, forward and backward, over contiguous (outer, length, inner) with
// the semantics of ops/cpu/softmax.cpp (a row holding NaN or +inf, or only -inf, gives NaN).
// inner == 1 (the softmax dim is the last one):
//   length <= 1024: one warp (or a power-of-two slice of one) per row, the row held in
//     registers: x is read once, the max and the sum come from registers. The row length is
//     a compile-time parameter (elements per lane, lanes per row), with 16-byte loads when
//     rows are aligned.
//   longer rows: one block per row; one pass computes the max and the sum of exp together
//     (the running sum is rescaled when the max grows: Milakov & Gimelshein, "Online
//     normalizer calculation for softmax", 2018), a second pass writes.
// inner > 1: threads of a block cover adjacent columns (coalesced) and split the length; the
//   online (max, sum) pairs of a column are combined in shared memory.
// Everything accumulates in acc_t: float for float32 and the half types, double for float64.
#include <algorithm>
#include <limits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/dispatch.h"
#include "ops/elementwise_math.h"
#include "ops/softmax_kernels.h"
#include "ops/softmax_math.h"

namespace lumen::cuda {
namespace {

constexpr int kMaxWarpLog2 = 10;  // rows up to 1024 elements run one warp per row
constexpr int kWarpBlock = 128;   // threads of a warp-per-row block
constexpr int kColumnThreads = 256;
constexpr int kMaxBlocks = 1 << 20;  // grid-stride loops beyond

using Layout = DimBlocks;  // (outer, length, inner) around the softmax dim
using Math = elementwise_math::LibraryMath;

int64_t next_pow2(int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

int ceil_log2(int64_t v) {
    int log2 = 0;
    while ((int64_t(1) << log2) < v) ++log2;
    return log2;
}

unsigned grid_of(int64_t blocks) { return unsigned(std::clamp<int64_t>(blocks, 1, kMaxBlocks)); }

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
    T v[V];
};

template <typename T>
constexpr int kVec = 16 / int(sizeof(T));  // elements in a 16-byte load

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename A>
__device__ __forceinline__ A negative_infinity() {
    return -std::numeric_limits<A>::infinity();
}

// Reductions over the kWidth lanes (a power of two <= 32) that share a row.
template <int kWidth, typename A>
__device__ __forceinline__ A group_max(A v) {
    for (int mask = kWidth / 2; mask > 0; mask >>= 1)
        v = nan_max(v, __shfl_xor_sync(kFullMask, v, mask));
    return v;
}
template <int kWidth, typename A>
__device__ __forceinline__ A group_sum(A v) {
    for (int mask = kWidth / 2; mask > 0; mask >>= 1) v += __shfl_xor_sync(kFullMask, v, mask);
    return v;
}

// ---- online (max, sum of exp) ----

// Adds v to a running max m and sum s = sum(exp(x - m)). -inf entries add nothing (so a
// leading -inf does not give exp(-inf - -inf) = NaN); a NaN makes s NaN; a +inf makes s NaN
// through (v - v), as exp(inf - inf) does on the CPU.
template <typename A>
__device__ __forceinline__ void online_add(A& m, A& s, A v) {
    if (v > m) {
        s = s * exp(m - v) + (v - v + A(1));
        m = v;
    } else if (v != negative_infinity<A>()) {
        s += exp(v - m);
    }
}

// Merges (m2, s2) into (m, s).
template <typename A>
__device__ __forceinline__ void online_merge(A& m, A& s, A m2, A s2) {
    A top = m > m2 ? m : m2;
    if (top == negative_infinity<A>()) {
        s += s2;  // both empty so far (0), or NaN
    } else {
        s = s * exp(m - top) + s2 * exp(m2 - top);
    }
    m = top;
}

// ---- rows in registers: one warp slice per row (inner == 1, length <= 1024) ----
// kLog2: the row fits 2^kLog2 elements, spread over kWidth lanes with kPerLane each, read as
// packs of kVec. Entries past the row end are -inf (forward) or 0 (backward): they add nothing.

template <int kLog2>
struct WarpShape {
    static constexpr int kWidth = (1 << kLog2) < kWarpSize ? (1 << kLog2) : kWarpSize;
    static constexpr int kPerLane = (1 << kLog2) / kWidth;
    static constexpr int kRowsPerBlock = kWarpBlock / kWidth;
};

// Element index of lane `lane`'s pack p, component 0.
template <int kWidth, int kVec>
__device__ __forceinline__ int pack_index(int p, int lane) {
    return (p * kWidth + lane) * kVec;
}

template <typename T, int kLog2, int kVecT>
__global__ void __launch_bounds__(kWarpBlock)
    softmax_warp_forward(const T* x, T* y, int64_t rows, int length, bool log) {
    using S = WarpShape<kLog2>;
    using A = acc_t<T>;
    constexpr int kPacks = S::kPerLane / kVecT;
    int lane = threadIdx.x % S::kWidth;
    // Rows step by whole blocks, so the loop bound is uniform across each warp's lanes.
    for (int64_t row = int64_t(blockIdx.x) * S::kRowsPerBlock + threadIdx.x / S::kWidth;
         row - threadIdx.x / S::kWidth < rows; row += int64_t(gridDim.x) * S::kRowsPerBlock) {
        bool valid = row < rows;
        const T* in = x + (valid ? row : 0) * length;
        A v[S::kPerLane];
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int at = pack_index<S::kWidth, kVecT>(p, lane);
            Pack<T, kVecT> pack;
            bool inside = valid && at < length;
            if (inside) pack = *reinterpret_cast<const Pack<T, kVecT>*>(in + at);
#pragma unroll
            for (int c = 0; c < kVecT; ++c)
                v[p * kVecT + c] = inside ? to_acc(pack.v[c]) : negative_infinity<A>();
        }
        A m = negative_infinity<A>();
#pragma unroll
        for (int i = 0; i < S::kPerLane; ++i) m = nan_max(m, v[i]);
        m = group_max<S::kWidth>(m);
        A s = 0;
#pragma unroll
        for (int i = 0; i < S::kPerLane; ++i) {
            A e = exp(v[i] - m);
            s += e;
            if (!log) v[i] = e;
        }
        s = group_sum<S::kWidth>(s);
        A factor = softmax_math::row_factor(s, log);
        if (!valid) continue;
        T* out = y + row * length;
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int at = pack_index<S::kWidth, kVecT>(p, lane);
            if (at >= length) continue;
            Pack<T, kVecT> pack;
#pragma unroll
            for (int c = 0; c < kVecT; ++c) {
                A value = v[p * kVecT + c];
                pack.v[c] = from_acc<T>(softmax_math::output(value, m, factor, log));
            }
            *reinterpret_cast<Pack<T, kVecT>*>(out + at) = pack;
        }
    }
}

// softmax: dx = y (g - sum(g y)); log_softmax: dx = g - exp(y) sum(g).
template <typename T, int kLog2, int kVecT>
__global__ void __launch_bounds__(kWarpBlock)
    softmax_warp_backward(const T* y, const T* g, T* dx, int64_t rows, int length, bool log) {
    using S = WarpShape<kLog2>;
    using A = acc_t<T>;
    constexpr int kPacks = S::kPerLane / kVecT;
    int lane = threadIdx.x % S::kWidth;
    for (int64_t row = int64_t(blockIdx.x) * S::kRowsPerBlock + threadIdx.x / S::kWidth;
         row - threadIdx.x / S::kWidth < rows; row += int64_t(gridDim.x) * S::kRowsPerBlock) {
        bool valid = row < rows;
        int64_t offset = (valid ? row : 0) * length;
        A yv[S::kPerLane], gv[S::kPerLane];
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int at = pack_index<S::kWidth, kVecT>(p, lane);
            Pack<T, kVecT> yp, gp;
            bool inside = valid && at < length;
            if (inside) {
                yp = *reinterpret_cast<const Pack<T, kVecT>*>(y + offset + at);
                gp = *reinterpret_cast<const Pack<T, kVecT>*>(g + offset + at);
            }
#pragma unroll
            for (int c = 0; c < kVecT; ++c) {
                yv[p * kVecT + c] = inside ? to_acc(yp.v[c]) : A(0);
                gv[p * kVecT + c] = inside ? to_acc(gp.v[c]) : A(0);
            }
        }
        A total = 0;
#pragma unroll
        for (int i = 0; i < S::kPerLane; ++i)
            total += softmax_math::backward_term(yv[i], gv[i], log);
        total = group_sum<S::kWidth>(total);
        if (!valid) continue;
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int at = pack_index<S::kWidth, kVecT>(p, lane);
            if (at >= length) continue;
            Pack<T, kVecT> pack;
#pragma unroll
            for (int c = 0; c < kVecT; ++c) {
                A yi = yv[p * kVecT + c], gi = gv[p * kVecT + c];
                pack.v[c] = from_acc<T>(softmax_math::grad<Math>(yi, gi, total, log));
            }
            *reinterpret_cast<Pack<T, kVecT>*>(dx + offset + at) = pack;
        }
    }
}

// Calls body.template operator()<kLog2>() for the runtime value log2 in [0, kMaxWarpLog2].
template <int kLog2 = 0, typename F>
void with_log2(int log2, F&& body) {
    if constexpr (kLog2 <= kMaxWarpLog2) {
        if (log2 == kLog2) return body.template operator()<kLog2>();
        with_log2<kLog2 + 1>(log2, body);
    }
}

// Launches the warp kernel for rows of `length` <= 1024, with 16-byte packs when every
// pointer is aligned, rows hold whole packs and each lane holds at least one pack.
template <typename T, typename Launch>
void launch_warp_rows(int64_t rows, int64_t length, bool vectorizable, Launch&& launch) {
    with_log2(ceil_log2(length), [&]<int kLog2>() {
        using S = WarpShape<kLog2>;
        unsigned blocks = grid_of((rows + S::kRowsPerBlock - 1) / S::kRowsPerBlock);
        if constexpr (S::kPerLane >= kVec<T>) {
            if (vectorizable && length % kVec<T> == 0)
                return launch.template operator()<kLog2, kVec<T>>(blocks);
        }
        launch.template operator()<kLog2, 1>(blocks);
    });
}

// ---- long rows: one block per row (inner == 1, length > 1024) ----

// Threads for a row of `units` loads: about four loads each, 128 to 1024 threads.
unsigned row_threads(int64_t units) {
    return unsigned(std::clamp<int64_t>(next_pow2((units + 3) / 4), 128, 1024));
}

// The (max, sum) pairs of the whole block, merged; every thread gets the result. `scratch`
// holds 2 * 32 values.
template <typename A>
__device__ void block_online_merge(A& m, A& s, A* scratch) {
    for (int mask = kWarpSize / 2; mask > 0; mask >>= 1) {
        A m2 = __shfl_xor_sync(kFullMask, m, mask), s2 = __shfl_xor_sync(kFullMask, s, mask);
        online_merge(m, s, m2, s2);
    }
    int warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
    __syncthreads();  // the previous row's readers are done with scratch
    if (threadIdx.x % kWarpSize == 0) {
        scratch[warp] = m;
        scratch[kWarpSize + warp] = s;
    }
    __syncthreads();
    m = negative_infinity<A>();
    s = 0;
    for (int w = 0; w < warps; ++w) online_merge(m, s, scratch[w], scratch[kWarpSize + w]);
}

template <typename T, int V>
__global__ void __launch_bounds__(1024)
    softmax_block_forward(const T* x, T* y, int64_t rows, int64_t length, bool log) {
    using A = acc_t<T>;
    __shared__ A scratch[2 * kWarpSize];
    int64_t units = length / V;  // V divides length
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* in = x + row * length;
        T* out = y + row * length;
        A m = negative_infinity<A>(), s = 0;
        for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
            Pack<T, V> pack = reinterpret_cast<const Pack<T, V>*>(in)[u];
#pragma unroll
            for (int c = 0; c < V; ++c) online_add(m, s, to_acc(pack.v[c]));
        }
        block_online_merge(m, s, scratch);
        A factor = softmax_math::row_factor(s, log);
        // The second read of the row mostly hits L2 (the row was just read).
        for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
            Pack<T, V> pack = reinterpret_cast<const Pack<T, V>*>(in)[u];
#pragma unroll
            for (int c = 0; c < V; ++c) {
                A d = to_acc(pack.v[c]) - m;
                pack.v[c] = from_acc<T>(softmax_math::output_shifted<Math>(d, factor, log));
            }
            reinterpret_cast<Pack<T, V>*>(out)[u] = pack;
        }
    }
}

template <typename T, int V>
__global__ void __launch_bounds__(1024)
    softmax_block_backward(const T* y, const T* g, T* dx, int64_t rows, int64_t length, bool log) {
    using A = acc_t<T>;
    __shared__ A scratch[kWarpSize];
    int64_t units = length / V;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const auto* yr = reinterpret_cast<const Pack<T, V>*>(y + row * length);
        const auto* gr = reinterpret_cast<const Pack<T, V>*>(g + row * length);
        auto* out = reinterpret_cast<Pack<T, V>*>(dx + row * length);
        A total = 0;
        for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
            Pack<T, V> yp = yr[u], gp = gr[u];
#pragma unroll
            for (int c = 0; c < V; ++c)
                total += softmax_math::backward_term(to_acc(yp.v[c]), to_acc(gp.v[c]), log);
        }
        total = block_sum(total, scratch);  // barriers inside: scratch is free for the next row
        for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
            Pack<T, V> yp = yr[u], gp = gr[u], pack;
#pragma unroll
            for (int c = 0; c < V; ++c) {
                A yi = to_acc(yp.v[c]), gi = to_acc(gp.v[c]);
                pack.v[c] = from_acc<T>(softmax_math::grad<Math>(yi, gi, total, log));
            }
            out[u] = pack;
        }
    }
}

// ---- columns (inner > 1) ----
// A block covers blockDim.x adjacent columns of one outer index; its blockDim.y rows of
// threads split the length (a power of two, combined by a tree in shared memory).

struct ColumnShape {
    dim3 block;
    int64_t column_blocks = 1;
    unsigned grid = 1;
};

ColumnShape column_shape(const Layout& layout) {
    ColumnShape shape;
    int64_t bx = std::min<int64_t>(next_pow2(layout.inner), kWarpSize);
    int64_t by = std::min<int64_t>(kColumnThreads / bx, next_pow2(layout.length));
    shape.block = dim3(unsigned(bx), unsigned(by));
    shape.column_blocks = (layout.inner + bx - 1) / bx;
    shape.grid = grid_of(layout.outer * shape.column_blocks);
    return shape;
}

template <typename T>
__global__ void __launch_bounds__(kColumnThreads)
    softmax_column_forward(const T* x, T* y, Layout layout, int64_t column_blocks, bool log) {
    using A = acc_t<T>;
    __shared__ A max_scratch[kColumnThreads], sum_scratch[kColumnThreads];
    int at = threadIdx.y * blockDim.x + threadIdx.x;
    for (int64_t b = blockIdx.x; b < layout.outer * column_blocks; b += gridDim.x) {
        int64_t column = b % column_blocks * blockDim.x + threadIdx.x;
        bool valid = column < layout.inner;
        int64_t base = b / column_blocks * layout.length * layout.inner + column;
        A m = negative_infinity<A>(), s = 0;
        if (valid)
            for (int64_t l = threadIdx.y; l < layout.length; l += blockDim.y)
                online_add(m, s, to_acc(x[base + l * layout.inner]));
        max_scratch[at] = m;
        sum_scratch[at] = s;
        __syncthreads();
        for (int half = blockDim.y / 2; half > 0; half >>= 1) {
            if (int(threadIdx.y) < half) {
                A m2 = max_scratch[at + half * blockDim.x],
                  s2 = sum_scratch[at + half * blockDim.x];
                online_merge(max_scratch[at], sum_scratch[at], m2, s2);
            }
            __syncthreads();
        }
        m = max_scratch[threadIdx.x];
        s = sum_scratch[threadIdx.x];
        A factor = softmax_math::row_factor(s, log);
        if (valid)
            for (int64_t l = threadIdx.y; l < layout.length; l += blockDim.y) {
                int64_t i = base + l * layout.inner;
                A d = to_acc(x[i]) - m;
                y[i] = from_acc<T>(softmax_math::output_shifted<Math>(d, factor, log));
            }
        __syncthreads();  // before the next block's values overwrite the scratch
    }
}

template <typename T>
__global__ void __launch_bounds__(kColumnThreads)
    softmax_column_backward(const T* y, const T* g, T* dx, Layout layout, int64_t column_blocks,
                            bool log) {
    using A = acc_t<T>;
    __shared__ A scratch[kColumnThreads];
    int at = threadIdx.y * blockDim.x + threadIdx.x;
    for (int64_t b = blockIdx.x; b < layout.outer * column_blocks; b += gridDim.x) {
        int64_t column = b % column_blocks * blockDim.x + threadIdx.x;
        bool valid = column < layout.inner;
        int64_t base = b / column_blocks * layout.length * layout.inner + column;
        A total = 0;
        if (valid)
            for (int64_t l = threadIdx.y; l < layout.length; l += blockDim.y) {
                int64_t i = base + l * layout.inner;
                total += softmax_math::backward_term(to_acc(y[i]), to_acc(g[i]), log);
            }
        scratch[at] = total;
        __syncthreads();
        for (int half = blockDim.y / 2; half > 0; half >>= 1) {
            if (int(threadIdx.y) < half) scratch[at] += scratch[at + half * blockDim.x];
            __syncthreads();
        }
        total = scratch[threadIdx.x];
        if (valid)
            for (int64_t l = threadIdx.y; l < layout.length; l += blockDim.y) {
                int64_t i = base + l * layout.inner;
                A yi = to_acc(y[i]), gi = to_acc(g[i]);
                dx[i] = from_acc<T>(softmax_math::grad<Math>(yi, gi, total, log));
            }
        __syncthreads();
    }
}

// ---- launchers ----

template <typename T>
void forward_typed(const Layout& layout, const T* x, T* y, bool log) {
    if (layout.inner > 1) {
        ColumnShape shape = column_shape(layout);
        softmax_column_forward<T>
            <<<shape.grid, shape.block>>>(x, y, layout, shape.column_blocks, log);
        LUMEN_CUDA_CHECK_LAUNCH("softmax_column_forward");
        return;
    }
    bool vectorizable = aligned(x) && aligned(y);
    if (layout.length <= (1 << kMaxWarpLog2)) {
        int length = int(layout.length);
        launch_warp_rows<T>(layout.outer, length, vectorizable,
                            [&]<int kLog2, int kVecT>(unsigned blocks) {
                                softmax_warp_forward<T, kLog2, kVecT>
                                    <<<blocks, kWarpBlock>>>(x, y, layout.outer, length, log);
                            });
        LUMEN_CUDA_CHECK_LAUNCH("softmax_warp_forward");
        return;
    }
    unsigned blocks = grid_of(layout.outer);
    if (vectorizable && layout.length % kVec<T> == 0) {
        softmax_block_forward<T, kVec<T>><<<blocks, row_threads(layout.length / kVec<T>)>>>(
            x, y, layout.outer, layout.length, log);
    } else {
        softmax_block_forward<T, 1>
            <<<blocks, row_threads(layout.length)>>>(x, y, layout.outer, layout.length, log);
    }
    LUMEN_CUDA_CHECK_LAUNCH("softmax_block_forward");
}

template <typename T>
void backward_typed(const Layout& layout, const T* y, const T* g, T* dx, bool log) {
    if (layout.inner > 1) {
        ColumnShape shape = column_shape(layout);
        softmax_column_backward<T>
            <<<shape.grid, shape.block>>>(y, g, dx, layout, shape.column_blocks, log);
        LUMEN_CUDA_CHECK_LAUNCH("softmax_column_backward");
        return;
    }
    bool vectorizable = aligned(y) && aligned(g) && aligned(dx);
    if (layout.length <= (1 << kMaxWarpLog2)) {
        int length = int(layout.length);
        launch_warp_rows<T>(layout.outer, length, vectorizable,
                            [&]<int kLog2, int kVecT>(unsigned blocks) {
                                softmax_warp_backward<T, kLog2, kVecT>
                                    <<<blocks, kWarpBlock>>>(y, g, dx, layout.outer, length, log);
                            });
        LUMEN_CUDA_CHECK_LAUNCH("softmax_warp_backward");
        return;
    }
    unsigned blocks = grid_of(layout.outer);
    if (vectorizable && layout.length % kVec<T> == 0) {
        softmax_block_backward<T, kVec<T>><<<blocks, row_threads(layout.length / kVec<T>)>>>(
            y, g, dx, layout.outer, layout.length, log);
    } else {
        softmax_block_backward<T, 1>
            <<<blocks, row_threads(layout.length)>>>(y, g, dx, layout.outer, layout.length, log);
    }
    LUMEN_CUDA_CHECK_LAUNCH("softmax_block_backward");
}

}  // namespace

void softmax_forward(const StridedView& x, const StridedView& y, int dim, bool log) {
    Layout layout = dim_blocks(x, dim);
    if (layout.outer * layout.length * layout.inner == 0) return;
    dispatch_floating_half(x.dtype, log ? "log_softmax" : "softmax", [&]<typename T>() {
        forward_typed<T>(layout, x.ptr<const T>(), y.ptr<T>(), log);
    });
}

void softmax_backward(const StridedView& y, const StridedView& grad_out, const StridedView& grad_x,
                      int dim, bool log) {
    Layout layout = dim_blocks(y, dim);
    if (layout.outer * layout.length * layout.inner == 0) return;
    dispatch_floating_half(y.dtype, log ? "log_softmax" : "softmax", [&]<typename T>() {
        backward_typed<T>(layout, y.ptr<const T>(), grad_out.ptr<const T>(), grad_x.ptr<T>(), log);
    });
}

}  // namespace lumen::cuda
