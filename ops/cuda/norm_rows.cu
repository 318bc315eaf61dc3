// CUDA row normalization (layer_norm, rms_norm, group_norm, instance_norm with input
// statistics) with the semantics of ops/cpu/norm_rows.cpp. Rows of up to 1024 elements: one
// warp per row, the row held in registers (16-byte vector loads when aligned); longer rows: one
// block per row, each pass re-reading the row (from L1/L2). Statistics in float (double for
// float64), in two passes: the mean, then the squared deviations. The weight/bias gradients
// are sums over rows: per-block partials in scratch, added in a fixed order by a second kernel.
#include <algorithm>
#include <initializer_list>

#include "core/dispatch.h"
#include "ops/cuda/partial_sums.cuh"
#include "ops/norm_kernels.h"
#include "ops/norm_math.h"

namespace lumen::cuda {
namespace {

constexpr int kWarpRowMax = 1024;        // longest row kept in one warp's registers
constexpr int kWarpsPerBlock = 4;        // rows in flight per block of the warp kernels
constexpr int64_t kMaxBlocks = 65535;    // larger problems loop (grid-stride)
constexpr int kColumnRows = 8;           // threadIdx.y extent of the column-sum kernel
constexpr int64_t kTargetBlocks = 1024;  // about 8 resident blocks on each of 132 SMs

// Everything a row kernel reads and writes. Forward: y = output, mean/rstd written.
// Backward: g = grad_out, y = grad_x, mean/rstd read.
template <typename T>
struct RowArgs {
    RowNormLayout lay;
    const T* x;
    const T* w;  // null when absent (weight 1)
    const T* b;  // null when absent (bias 0)
    const T* g;
    T* y;
    acc_t<T>* mean;
    acc_t<T>* rstd;
    acc_t<T> eps;
};

// Weight or bias of the kVec elements starting at element i0 of a row: a vector of entries
// from `entry` when each element has its own (spatial == 1), else the one entry of their
// channel for all of them (a pack never crosses a channel); `fallback` when p is absent.
template <typename T, int kVec>
__device__ __forceinline__ void affine_pack(const T* p, int64_t entry, bool per_element,
                                            acc_t<T> fallback, acc_t<T>* out) {
    if (p == nullptr) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) out[e] = fallback;
    } else if (kVec > 1 && per_element) {
        load_pack<T, kVec>(p + entry, out);
    } else {
        acc_t<T> value = to_acc(p[entry]);
#pragma unroll
        for (int e = 0; e < kVec; ++e) out[e] = value;
    }
}

// The affine entry of element i0 of row r (and of its pack).
__device__ __forceinline__ int64_t affine_entry(const RowNormLayout& lay, int64_t r, int64_t i0) {
    int64_t first = (r % lay.groups) * lay.channels_per_group;
    return first + (lay.spatial == 1 ? i0 : i0 / lay.spatial);
}

// Lane `lane`'s share of a row of n elements: packs p = 0..kPacks-1 at elements
// (p * 32 + lane) * kVec; zeros past the end.
template <typename T, int kVec, int kPacks>
__device__ __forceinline__ void load_row(const T* row, int64_t n, int lane, acc_t<T>* v) {
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
        int64_t i0 = (int64_t(p) * kWarpSize + lane) * kVec;
        if (i0 < n) {
            load_pack<T, kVec>(row + i0, v + p * kVec);
        } else {
#pragma unroll
            for (int e = 0; e < kVec; ++e) v[p * kVec + e] = 0;
        }
    }
}

template <typename T, int kVec, int kPerLane>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize)
    row_warp_forward_kernel(RowArgs<T> args) {
    using A = acc_t<T>;
    constexpr int kPacks = kPerLane / kVec;
    const RowNormLayout& lay = args.lay;
    const int lane = threadIdx.x % kWarpSize;
    const int64_t n = lay.length;
    const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock;
    for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; r < lay.rows;
         r += stride) {
        A v[kPerLane];
        load_row<T, kVec, kPacks>(args.x + r * n, n, lane, v);
        A mean = 0;        // an empty row (n == 0) keeps mean 0 and variance 0, as on the CPU
        if (lay.center) {  // uniform over the launch, so every lane reaches the shuffles
            A sum = 0;
#pragma unroll
            for (int k = 0; k < kPerLane; ++k) sum += v[k];
            mean = warp_sum(sum) / A(n > 0 ? n : 1);
        }
        A squares = 0;
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            bool inside = (int64_t(p) * kWarpSize + lane) * kVec < n;
#pragma unroll
            for (int e = 0; e < kVec; ++e) {
                A d = v[p * kVec + e] - mean;
                squares += inside ? d * d : A(0);
            }
        }
        A rstd = A(norm_math::inv_std(double(warp_sum(squares) / A(n > 0 ? n : 1)), args.eps));
        if (lane == 0) {
            args.mean[r] = mean;
            args.rstd[r] = rstd;
        }
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int64_t i0 = (int64_t(p) * kWarpSize + lane) * kVec;
            if (i0 >= n) continue;
            int64_t entry = affine_entry(lay, r, i0);
            A w[kVec], b[kVec], out[kVec];
            affine_pack<T, kVec>(args.w, entry, lay.spatial == 1, A(1), w);
            affine_pack<T, kVec>(args.b, entry, lay.spatial == 1, A(0), b);
#pragma unroll
            for (int e = 0; e < kVec; ++e)
                out[e] = norm_math::affine(v[p * kVec + e], mean, rstd, w[e], b[e]);
            store_pack<T, kVec>(args.y + r * n + i0, out);
        }
    }
}

// grad_x = rstd (g w - a - (x - mean) rstd c) with a = mean(g w) (0 without centering) and
// c = mean(g w xhat), the two row sums taken by the warp.
template <typename T, int kVec, int kPerLane>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize)
    row_warp_backward_kernel(RowArgs<T> args) {
    using A = acc_t<T>;
    constexpr int kPacks = kPerLane / kVec;
    const RowNormLayout& lay = args.lay;
    const int lane = threadIdx.x % kWarpSize;
    const int64_t n = lay.length;
    const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock;
    for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; r < lay.rows;
         r += stride) {
        A x[kPerLane], gw[kPerLane];
        load_row<T, kVec, kPacks>(args.x + r * n, n, lane, x);
        load_row<T, kVec, kPacks>(args.g + r * n, n, lane, gw);
        const A mean = args.mean[r], rstd = args.rstd[r];
        A sum_gw = 0, sum_gwx = 0;
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int64_t i0 = (int64_t(p) * kWarpSize + lane) * kVec;
            if (i0 >= n) continue;  // padding holds g = 0
            A w[kVec];
            affine_pack<T, kVec>(args.w, affine_entry(lay, r, i0), lay.spatial == 1, A(1), w);
#pragma unroll
            for (int e = 0; e < kVec; ++e) {
                int k = p * kVec + e;
                gw[k] *= w[e];
                sum_gw += gw[k];
                sum_gwx += gw[k] * (x[k] - mean);
            }
        }
        sum_gw = warp_sum(sum_gw);
        sum_gwx = warp_sum(sum_gwx) * rstd;
        const A a = lay.center ? sum_gw / A(n > 0 ? n : 1) : A(0);
        const A c = sum_gwx / A(n > 0 ? n : 1);
#pragma unroll
        for (int p = 0; p < kPacks; ++p) {
            int64_t i0 = (int64_t(p) * kWarpSize + lane) * kVec;
            if (i0 >= n) continue;
            A out[kVec];
#pragma unroll
            for (int e = 0; e < kVec; ++e) {
                int k = p * kVec + e;
                out[e] = norm_math::grad_x(gw[k], x[k], mean, rstd, a, c);
            }
            store_pack<T, kVec>(args.y + r * n + i0, out);
        }
    }
}

// One block per row (grid-stride over rows, uniform per block, so every thread reaches every
// barrier). Thread t walks packs t, t + blockDim, ... with a cursor that tracks the channel.
template <typename T, int kVec>
__global__ void row_block_forward_kernel(RowArgs<T> args) {
    using A = acc_t<T>;
    __shared__ A scratch[kWarpSize];
    const RowNormLayout& lay = args.lay;
    const int64_t n = lay.length, step = int64_t(blockDim.x) * kVec;
    const bool per_element = lay.spatial == 1;
    for (int64_t r = blockIdx.x; r < lay.rows; r += gridDim.x) {
        const T* xr = args.x + r * n;
        A mean = 0;
        if (lay.center) {
            A sum = 0;
            for (int64_t i0 = int64_t(threadIdx.x) * kVec; i0 < n; i0 += step) {
                A v[kVec];
                load_pack<T, kVec>(xr + i0, v);
#pragma unroll
                for (int e = 0; e < kVec; ++e) sum += v[e];
            }
            mean = block_sum(sum, scratch) / A(n > 0 ? n : 1);
        }
        A squares = 0;
        for (int64_t i0 = int64_t(threadIdx.x) * kVec; i0 < n; i0 += step) {
            A v[kVec];
            load_pack<T, kVec>(xr + i0, v);
#pragma unroll
            for (int e = 0; e < kVec; ++e) squares += (v[e] - mean) * (v[e] - mean);
        }
        const A var = block_sum(squares, scratch) / A(n > 0 ? n : 1);  // 0 for an empty row
        const A rstd = A(norm_math::inv_std(double(var), args.eps));
        if (threadIdx.x == 0) {
            args.mean[r] = mean;
            args.rstd[r] = rstd;
        }
        const int64_t first = (r % lay.groups) * lay.channels_per_group;
        Cursor at(int64_t(threadIdx.x) * kVec, step, lay.spatial);  // (channel, position)
        for (int64_t i0 = int64_t(threadIdx.x) * kVec; i0 < n; i0 += step, at.advance()) {
            A v[kVec], w[kVec], b[kVec];
            load_pack<T, kVec>(xr + i0, v);
            affine_pack<T, kVec>(args.w, first + at.outer, per_element, A(1), w);
            affine_pack<T, kVec>(args.b, first + at.outer, per_element, A(0), b);
#pragma unroll
            for (int e = 0; e < kVec; ++e) v[e] = norm_math::affine(v[e], mean, rstd, w[e], b[e]);
            store_pack<T, kVec>(args.y + r * n + i0, v);
        }
    }
}

// Calls pack(i0, x, g, w) for this thread's packs of block row r, in order: the kVec values
// of x, grad_out and the weight (1 when absent) from element i0 on. Both passes of the
// backward walk the row this way.
template <typename T, int kVec, typename Pack>
__device__ __forceinline__ void for_each_backward_pack(const RowArgs<T>& args, int64_t r,
                                                       const Pack& pack) {
    using A = acc_t<T>;
    const RowNormLayout& lay = args.lay;
    const int64_t n = lay.length, step = int64_t(blockDim.x) * kVec;
    const int64_t first = (r % lay.groups) * lay.channels_per_group;
    const T* xr = args.x + r * n;
    const T* gr = args.g + r * n;
    Cursor at(int64_t(threadIdx.x) * kVec, step, lay.spatial);
    for (int64_t i0 = int64_t(threadIdx.x) * kVec; i0 < n; i0 += step, at.advance()) {
        A x[kVec], g[kVec], w[kVec];
        load_pack<T, kVec>(xr + i0, x);
        load_pack<T, kVec>(gr + i0, g);
        affine_pack<T, kVec>(args.w, first + at.outer, lay.spatial == 1, A(1), w);
        pack(i0, x, g, w);
    }
}

template <typename T, int kVec>
__global__ void row_block_backward_kernel(RowArgs<T> args) {
    using A = acc_t<T>;
    __shared__ A scratch[kWarpSize];
    const RowNormLayout& lay = args.lay;
    const int64_t n = lay.length;
    for (int64_t r = blockIdx.x; r < lay.rows; r += gridDim.x) {
        const A mean = args.mean[r], rstd = args.rstd[r];
        A sum_gw = 0, sum_gwx = 0;
        for_each_backward_pack<T, kVec>(args, r, [&](int64_t, A* x, A* g, A* w) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) {
                sum_gw += g[e] * w[e];
                sum_gwx += g[e] * w[e] * (x[e] - mean);
            }
        });
        sum_gw = block_sum(sum_gw, scratch);
        sum_gwx = block_sum(sum_gwx, scratch) * rstd;
        const A a = lay.center ? sum_gw / A(n > 0 ? n : 1) : A(0);
        const A c = sum_gwx / A(n > 0 ? n : 1);
        for_each_backward_pack<T, kVec>(args, r, [&](int64_t i0, A* x, A* g, A* w) {
#pragma unroll
            for (int e = 0; e < kVec; ++e)
                x[e] = norm_math::grad_x(g[e] * w[e], x[e], mean, rstd, a, c);
            store_pack<T, kVec>(args.y + r * n + i0, x);
        });
    }
}

// Weight/bias gradient partials when every element has its own affine entry (spatial == 1).
// The rows then form a matrix (rows / groups, params) with element (m, k) at m * params + k
// and statistics of row m * groups + k / channels_per_group. Block (32, kColumnRows): 32
// adjacent columns (coalesced), rows of chunk blockIdx.y split over threadIdx.y, then added
// in order of threadIdx.y. Writes part_w/part_b[blockIdx.y * params + k].
template <typename T>
__global__ void affine_columns_kernel(RowArgs<T> args, int64_t matrix_rows, int64_t params,
                                      int64_t chunk_rows, acc_t<T>* part_w, acc_t<T>* part_b) {
    using A = acc_t<T>;
    __shared__ A sums_w[kColumnRows][kWarpSize + 1];
    __shared__ A sums_b[kColumnRows][kWarpSize + 1];
    const RowNormLayout& lay = args.lay;
    const int64_t k = int64_t(blockIdx.x) * kWarpSize + threadIdx.x;
    const int64_t m0 = int64_t(blockIdx.y) * chunk_rows;
    const int64_t m1 = min(matrix_rows, m0 + chunk_rows);
    A sum_w = 0, sum_b = 0;
    if (k < params) {
        const int64_t group = k / lay.channels_per_group;
        for (int64_t m = m0 + threadIdx.y; m < m1; m += kColumnRows) {
            const int64_t stat = m * lay.groups + group, at = m * params + k;
            const A g = to_acc(args.g[at]);
            sum_w += g * ((to_acc(args.x[at]) - args.mean[stat]) * args.rstd[stat]);
            sum_b += g;
        }
    }
    sums_w[threadIdx.y][threadIdx.x] = sum_w;
    sums_b[threadIdx.y][threadIdx.x] = sum_b;
    __syncthreads();
    if (threadIdx.y != 0 || k >= params) return;
    for (int t = 1; t < kColumnRows; ++t) {
        sum_w += sums_w[t][threadIdx.x];
        sum_b += sums_b[t][threadIdx.x];
    }
    part_w[int64_t(blockIdx.y) * params + k] = sum_w;
    part_b[int64_t(blockIdx.y) * params + k] = sum_b;
}

// Weight/bias gradient partials when a channel spans `spatial` elements: one warp per
// (row, channel) segment. Segment r * cpg + j is m * params + k for row r = m * groups + group,
// entry k = group * cpg + j: the partials come out as a (rows / groups, params) matrix.
template <typename T>
__global__ void affine_segments_kernel(RowArgs<T> args, acc_t<T>* part_w, acc_t<T>* part_b) {
    using A = acc_t<T>;
    const RowNormLayout& lay = args.lay;
    const int lane = threadIdx.x % kWarpSize;
    const int64_t segments = lay.rows * lay.channels_per_group, spatial = lay.spatial;
    const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
    for (int64_t seg = int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
         seg < segments; seg += warps) {
        const int64_t r = seg / lay.channels_per_group;
        const A mean = args.mean[r];
        A sum_g = 0, sum_gx = 0;
        for (int64_t s = lane; s < spatial; s += kWarpSize) {
            const A g = to_acc(args.g[seg * spatial + s]);
            sum_g += g;
            sum_gx += g * (to_acc(args.x[seg * spatial + s]) - mean);
        }
        sum_g = warp_sum(sum_g);
        sum_gx = warp_sum(sum_gx) * args.rstd[r];
        if (lane == 0) {
            part_w[seg] = sum_gx;
            part_b[seg] = sum_g;
        }
    }
}

template <typename T>
struct AffineFinish {
    T* grad_weight;  // either may be null
    T* grad_bias;
    __device__ void operator()(int64_t k, const acc_t<T>* total) const {
        if (grad_weight) grad_weight[k] = from_acc<T>(total[0]);
        if (grad_bias) grad_bias[k] = from_acc<T>(total[1]);
    }
};

// ---- launchers ----

// Whether the row kernels may move kVec = 16 / sizeof(T) elements per access: every row
// pointer 16-byte aligned and no pack crossing a row, or a channel when spatial > 1 (a pack
// then shares one affine entry; with spatial == 1 the weight and bias are loaded as packs).
template <typename T>
bool vectorizable(const RowNormLayout& lay, std::initializer_list<const void*> rows,
                  const void* weight, const void* bias) {
    constexpr int64_t kVec = 16 / sizeof(T);
    for (const void* p : rows)
        if (!aligned16(p)) return false;
    if (lay.spatial == 1) return lay.length % kVec == 0 && aligned16(weight) && aligned16(bias);
    return lay.spatial % kVec == 0;
}

template <typename T, int kVec, bool kBackward, int kPerLane>
void launch_warp_kernel(const RowArgs<T>& args) {
    if constexpr (kPerLane % kVec == 0) {
        int64_t blocks =
            std::min<int64_t>((args.lay.rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBlocks);
        if constexpr (kBackward) {
            row_warp_backward_kernel<T, kVec, kPerLane>
                <<<unsigned(blocks), kWarpsPerBlock * kWarpSize>>>(args);
            LUMEN_CUDA_CHECK_LAUNCH("row_warp_backward_kernel");
        } else {
            row_warp_forward_kernel<T, kVec, kPerLane>
                <<<unsigned(blocks), kWarpsPerBlock * kWarpSize>>>(args);
            LUMEN_CUDA_CHECK_LAUNCH("row_warp_forward_kernel");
        }
    }
}

// The warp kernel holding per_lane (a power of two, >= kVec) elements per lane.
template <typename T, int kVec, bool kBackward>
void launch_warp(const RowArgs<T>& args, int per_lane) {
    switch (per_lane) {
        case 1: return launch_warp_kernel<T, kVec, kBackward, 1>(args);
        case 2: return launch_warp_kernel<T, kVec, kBackward, 2>(args);
        case 4: return launch_warp_kernel<T, kVec, kBackward, 4>(args);
        case 8: return launch_warp_kernel<T, kVec, kBackward, 8>(args);
        case 16: return launch_warp_kernel<T, kVec, kBackward, 16>(args);
        default: return launch_warp_kernel<T, kVec, kBackward, 32>(args);
    }
}

template <typename T, int kVec, bool kBackward>
void launch_block(const RowArgs<T>& args) {
    // Enough threads for a few packs each; 512 for very long rows.
    int threads = args.lay.length / kVec >= 4096 ? 512 : 256;
    unsigned blocks = unsigned(std::min<int64_t>(args.lay.rows, kMaxBlocks));
    if constexpr (kBackward) {
        row_block_backward_kernel<T, kVec><<<blocks, threads>>>(args);
        LUMEN_CUDA_CHECK_LAUNCH("row_block_backward_kernel");
    } else {
        row_block_forward_kernel<T, kVec><<<blocks, threads>>>(args);
        LUMEN_CUDA_CHECK_LAUNCH("row_block_forward_kernel");
    }
}

// The forward (or the grad_x pass of the backward) over every row.
template <typename T, bool kBackward>
void launch_rows(const RowArgs<T>& args, bool vectorize) {
    constexpr int kVec = 16 / sizeof(T);
    const int64_t n = args.lay.length;
    if (n > kWarpRowMax) {
        if (vectorize) return launch_block<T, kVec, kBackward>(args);
        return launch_block<T, 1, kBackward>(args);
    }
    int per_lane = 1;
    while (int64_t(per_lane) * kWarpSize < n) per_lane *= 2;
    if (vectorize) return launch_warp<T, kVec, kBackward>(args, std::max(per_lane, kVec));
    launch_warp<T, 1, kBackward>(args, per_lane);
}

template <typename T>
const T* optional_ptr(const StridedView& v) {
    return v.data ? v.ptr<const T>() : nullptr;
}

// grad_weight/grad_bias (at least one requested) as sums over rows, in two stages.
template <typename T>
void affine_backward(const RowArgs<T>& args, T* grad_weight, T* grad_bias) {
    using A = acc_t<T>;
    const RowNormLayout& lay = args.lay;
    const int64_t params = lay.groups * lay.channels_per_group;
    const int64_t matrix_rows = lay.rows / lay.groups;
    const AffineFinish<T> finish{grad_weight, grad_bias};
    if (lay.spatial == 1) {
        const int64_t column_blocks = (params + kWarpSize - 1) / kWarpSize;
        int64_t chunks = std::clamp<int64_t>((kTargetBlocks + column_blocks - 1) / column_blocks, 1,
                                             (matrix_rows + kColumnRows - 1) / kColumnRows);
        const int64_t chunk_rows = (matrix_rows + chunks - 1) / chunks;
        chunks = (matrix_rows + chunk_rows - 1) / chunk_rows;
        Scratch scratch(size_t(2 * chunks * params) * sizeof(A));
        A* part_w = scratch.as<A>();
        A* part_b = scratch.as<A>(size_t(chunks * params));
        affine_columns_kernel<T>
            <<<dim3(unsigned(column_blocks), unsigned(chunks)), dim3(kWarpSize, kColumnRows)>>>(
                args, matrix_rows, params, chunk_rows, part_w, part_b);
        LUMEN_CUDA_CHECK_LAUNCH("affine_columns_kernel");
        finish_partials<A, 2>(part_w, params, chunks, chunks * params, finish);
        return;
    }
    const int64_t segments = lay.rows * lay.channels_per_group;
    Scratch scratch(size_t(2 * segments) * sizeof(A));
    A* part_w = scratch.as<A>();
    A* part_b = scratch.as<A>(size_t(segments));
    const int64_t blocks = std::min<int64_t>((segments + 7) / 8, kMaxBlocks);  // 8 warps each
    affine_segments_kernel<T><<<unsigned(blocks), 8 * kWarpSize>>>(args, part_w, part_b);
    LUMEN_CUDA_CHECK_LAUNCH("affine_segments_kernel");
    finish_partials<A, 2>(part_w, params, matrix_rows, segments, finish);
}

}  // namespace

void row_norm_forward(const RowNormLayout& layout, const StridedView& x, const StridedView& weight,
                      const StridedView& bias, double eps, const StridedView& y,
                      const StridedView& mean, const StridedView& rstd) {
    if (layout.rows == 0) return;
    dispatch_floating_half(x.dtype, "norm", [&]<typename T>() {
        using A = acc_t<T>;
        LUMEN_ASSERT(mean.dtype == (sizeof(A) == 8 ? DType::float64 : DType::float32));
        RowArgs<T> args{layout,  x.ptr<const T>(), optional_ptr<T>(weight), optional_ptr<T>(bias),
                        nullptr, y.ptr<T>(),       mean.ptr<A>(),           rstd.ptr<A>(),
                        A(eps)};
        bool vectorize = vectorizable<T>(layout, {x.data, y.data}, weight.data, bias.data);
        launch_rows<T, false>(args, vectorize);
    });
}

void row_norm_backward(const RowNormLayout& layout, const StridedView& x, const StridedView& weight,
                       const StridedView& mean, const StridedView& rstd,
                       const StridedView& grad_out, const StridedView& grad_x,
                       const StridedView& grad_weight, const StridedView& grad_bias) {
    const int64_t params = layout.groups * layout.channels_per_group;
    dispatch_floating_half(x.dtype, "norm backward", [&]<typename T>() {
        using A = acc_t<T>;
        T* grad_w = grad_weight.data ? grad_weight.ptr<T>() : nullptr;
        T* grad_b = grad_bias.data ? grad_bias.ptr<T>() : nullptr;
        if (layout.rows == 0 || params == 0) {  // empty sums: zero gradients
            if (grad_w) LUMEN_CUDA_CHECK(cudaMemsetAsync(grad_w, 0, size_t(params) * sizeof(T)));
            if (grad_b) LUMEN_CUDA_CHECK(cudaMemsetAsync(grad_b, 0, size_t(params) * sizeof(T)));
            return;
        }
        RowArgs<T> args{
            layout,        x.ptr<const T>(),        optional_ptr<T>(weight),
            nullptr,       grad_out.ptr<const T>(), grad_x.data ? grad_x.ptr<T>() : nullptr,
            mean.ptr<A>(), rstd.ptr<A>(),           A(0)};
        if (grad_x.data) {
            bool vectorize =
                vectorizable<T>(layout, {x.data, grad_out.data, grad_x.data}, weight.data, nullptr);
            launch_rows<T, true>(args, vectorize);
        }
        if (grad_w || grad_b) affine_backward<T>(args, grad_w, grad_b);
    });
}

}  // namespace lumen::cuda
