// CUDA max, average and adaptive pooling over contiguous (planes, D, H, W), with the semantics
// of ops/cpu/pool.cpp: the same windows (ops/pool_math.h), the same NaN rule and the same
// summation order. Forward: one thread per output element. Backward: one thread per input
// element gathers the outputs whose windows cover it, in increasing output order, which is the
// order in which the CPU's scatter adds them, so no atomics are needed and the result is
// deterministic.

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/pool_kernels.h"
#include "ops/pool_math.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// [lo, hi): the outputs along dim whose window may contain input i. A superset is enough: the
// callers keep only the outputs that really read i.
__device__ void covering(PoolWindowKind kind, const PoolGeometry& g, int dim, int64_t i,
                         int64_t& lo, int64_t& hi) {
    int64_t out = g.out[dim];
    if (kind == PoolWindowKind::adaptive) {
        // floor(o in / out) <= i < ceil((o + 1) in / out)  <=>
        // floor(i out / in) <= o < ceil((i + 1) out / in)
        int64_t in = g.in[dim];
        lo = i * out / in;
        hi = ((i + 1) * out + in - 1) / in;
    } else {
        // The window of output o spans [o stride - padding, + extent), so it holds i when o stride
        // lies in [i + padding - extent + 1, i + padding].
        int64_t stride = g.stride[dim], shifted = i + g.padding[dim];
        int64_t extent =
            kind == PoolWindowKind::max ? (g.kernel[dim] - 1) * g.dilation[dim] + 1 : g.kernel[dim];
        int64_t first = shifted - extent + 1;
        lo = first <= 0 ? 0 : (first + stride - 1) / stride;
        hi = shifted / stride + 1;
    }
    lo = imax(lo, 0);
    hi = imin(hi, out);
}

struct Position {
    int64_t plane, d, h, w;
};

// Row-major (plane, d, h, w) of linear index i over (planes, sizes[0], sizes[1], sizes[2]).
__device__ Position position_of(int64_t i, const int64_t* sizes) {
    Position p;
    p.w = i % sizes[2];
    i /= sizes[2];
    p.h = i % sizes[1];
    i /= sizes[1];
    p.d = i % sizes[0];
    p.plane = i / sizes[0];
    return p;
}

// Output element i: its position and its window along each spatial dim.
struct OutputWindows {
    Position o;
    PoolWindow d, h, w;
};

__device__ __forceinline__ OutputWindows output_windows(int64_t i, PoolWindowKind kind,
                                                        const PoolGeometry& g) {
    Position o = position_of(i, g.out);
    return {o, pool_window(kind, g, 0, o.d), pool_window(kind, g, 1, o.h),
            pool_window(kind, g, 2, o.w)};
}

// Input element i: its position and, per spatial dim, the outputs [lo, hi) whose windows may
// hold it.
struct Covering {
    Position p;
    int64_t lo[3], hi[3];
};

__device__ __forceinline__ Covering covering_of(int64_t i, PoolWindowKind kind,
                                                const PoolGeometry& g) {
    Covering c;
    c.p = position_of(i, g.in);
    covering(kind, g, 0, c.p.d, c.lo[0], c.hi[0]);
    covering(kind, g, 1, c.p.h, c.lo[1], c.hi[1]);
    covering(kind, g, 2, c.p.w, c.lo[2], c.hi[2]);
    return c;
}

// pool_window_max of every output (ops/pool_math.h): the CPU's NaN and tie rules.
template <typename T>
__global__ void max_forward_kernel(const T* x, T* y, int64_t* indices, PoolGeometry g,
                                   PoolWindowKind kind, int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const OutputWindows at = output_windows(i, kind, g);
        const T* plane = x + at.o.plane * pool_in_plane(g);
        const PoolMax<T> best = pool_window_max(plane, g, at.d, at.h, at.w);
        y[i] = best.value;
        indices[i] = best.index;
    }
}

// grad_x[i] = sum of grad_out[o] over the outputs o of i's plane that picked i.
template <typename T>
__global__ void max_backward_kernel(const T* grad_out, const int64_t* indices, T* grad_x,
                                    PoolGeometry g, PoolWindowKind kind, int64_t count) {
    const int64_t out_plane = pool_out_plane(g);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const Covering c = covering_of(i, kind, g);
        const Position& p = c.p;
        int64_t flat = (p.d * g.in[1] + p.h) * g.in[2] + p.w;
        const T* go = grad_out + p.plane * out_plane;
        const int64_t* picked = indices + p.plane * out_plane;
        T total = T(0);
        for (int64_t od = c.lo[0]; od < c.hi[0]; ++od) {
            for (int64_t oh = c.lo[1]; oh < c.hi[1]; ++oh) {
                int64_t row = (od * g.out[1] + oh) * g.out[2];
                for (int64_t ow = c.lo[2]; ow < c.hi[2]; ++ow)
                    if (picked[row + ow] == flat) total += go[row + ow];
            }
        }
        grad_x[i] = total;
    }
}

// pool_window_average of every output (ops/pool_math.h), summed in the CPU's order.
template <typename T>
__global__ void avg_forward_kernel(const T* x, T* y, PoolGeometry g, PoolWindowKind kind,
                                   bool count_include_pad, int64_t divisor_override,
                                   int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const OutputWindows at = output_windows(i, kind, g);
        const T* plane = x + at.o.plane * pool_in_plane(g);
        y[i] = pool_window_average(plane, g, at.d, at.h, at.w, count_include_pad, divisor_override);
    }
}

// grad_x[i] = sum over the windows containing i of grad_out / divisor, in output order.
template <typename T>
__global__ void avg_backward_kernel(const T* grad_out, T* grad_x, PoolGeometry g,
                                    PoolWindowKind kind, bool count_include_pad,
                                    int64_t divisor_override, int64_t count) {
    const int64_t out_plane = pool_out_plane(g);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const Covering c = covering_of(i, kind, g);
        const Position& p = c.p;
        const T* go = grad_out + p.plane * out_plane;
        T total = T(0);
        for (int64_t od = c.lo[0]; od < c.hi[0]; ++od) {
            PoolWindow wd = pool_window(kind, g, 0, od);
            if (p.d < wd.begin || p.d >= wd.end) continue;
            for (int64_t oh = c.lo[1]; oh < c.hi[1]; ++oh) {
                PoolWindow wh = pool_window(kind, g, 1, oh);
                if (p.h < wh.begin || p.h >= wh.end) continue;
                for (int64_t ow = c.lo[2]; ow < c.hi[2]; ++ow) {
                    PoolWindow ww = pool_window(kind, g, 2, ow);
                    if (p.w < ww.begin || p.w >= ww.end) continue;
                    T divisor = T(pool_divisor(wd, wh, ww, count_include_pad, divisor_override));
                    total += go[(od * g.out[1] + oh) * g.out[2] + ow] / divisor;
                }
            }
        }
        grad_x[i] = total;
    }
}

// Global average pooling (one cell per plane, classifier heads): a warp per plane for the
// usual small planes (7x7, 14x14), a block per plane for large ones.
template <typename T>
__global__ void global_avg_warp_kernel(const T* x, T* y, int64_t planes, int64_t n) {
    const int lane = int(threadIdx.x % kWarpSize);
    const int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
    // p is the same for every lane of a warp, so the shuffles in warp_sum see all 32 lanes.
    for (int64_t p = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize; p < planes;
         p += warps) {
        T total = T(0);
        for (int64_t i = lane; i < n; i += kWarpSize) total += x[p * n + i];
        total = warp_sum(total);
        if (lane == 0) y[p] = total / T(n);
    }
}

template <typename T>
__global__ void global_avg_block_kernel(const T* x, T* y, int64_t planes, int64_t n) {
    __shared__ T scratch[kWarpSize];
    for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {  // uniform across the block
        T total = T(0);
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) total += x[p * n + i];
        total = block_sum(total, scratch);
        if (threadIdx.x == 0) y[p] = total / T(n);
    }
}

template <typename T>
__global__ void global_avg_backward_kernel(const T* grad_out, T* grad_x, int64_t n, int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        grad_x[i] = grad_out[i / n] / T(n);
}

void max_forward(const StridedView& x, const StridedView& y, const StridedView& indices,
                 const PoolGeometry& g, PoolWindowKind kind, const char* op) {
    int64_t count = g.planes * pool_out_plane(g);
    if (count == 0) return;
    dispatch_floating(x.dtype, op, [&]<typename T>() {
        max_forward_kernel<T><<<grid_for(count), kThreads>>>(
            x.ptr<const T>(), y.ptr<T>(), indices.ptr<int64_t>(), g, kind, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("max_forward_kernel");
}

void avg_forward(const StridedView& x, const StridedView& y, const PoolGeometry& g,
                 PoolWindowKind kind, bool count_include_pad, int64_t divisor_override,
                 const char* op) {
    int64_t count = g.planes * pool_out_plane(g);
    if (count == 0) return;
    dispatch_floating(x.dtype, op, [&]<typename T>() {
        avg_forward_kernel<T><<<grid_for(count), kThreads>>>(
            x.ptr<const T>(), y.ptr<T>(), g, kind, count_include_pad, divisor_override, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("avg_forward_kernel");
}

void avg_backward(const StridedView& grad_out, const StridedView& grad_x, const PoolGeometry& g,
                  PoolWindowKind kind, bool count_include_pad, int64_t divisor_override,
                  const char* op) {
    int64_t count = g.planes * pool_in_plane(g);
    if (count == 0) return;
    dispatch_floating(grad_x.dtype, op, [&]<typename T>() {
        avg_backward_kernel<T>
            <<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(), grad_x.ptr<T>(), g, kind,
                                            count_include_pad, divisor_override, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("avg_backward_kernel");
}

}  // namespace

void max_pool_forward(const StridedView& x, const StridedView& y, const StridedView& indices,
                      const PoolGeometry& geometry) {
    max_forward(x, y, indices, geometry, PoolWindowKind::max, "max_pool");
}

void adaptive_max_pool_forward(const StridedView& x, const StridedView& y,
                               const StridedView& indices, const PoolGeometry& geometry) {
    max_forward(x, y, indices, geometry, PoolWindowKind::adaptive, "adaptive_max_pool");
}

void max_pool_backward(const StridedView& grad_out, const StridedView& indices,
                       const StridedView& grad_x, const PoolGeometry& geometry) {
    int64_t count = geometry.planes * pool_in_plane(geometry);
    if (count == 0) return;
    PoolWindowKind kind = geometry.adaptive ? PoolWindowKind::adaptive : PoolWindowKind::max;
    dispatch_floating(grad_x.dtype, "max_pool", [&]<typename T>() {
        max_backward_kernel<T>
            <<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(), indices.ptr<const int64_t>(),
                                            grad_x.ptr<T>(), geometry, kind, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("max_backward_kernel");
}

void avg_pool_forward(const StridedView& x, const StridedView& y, const PoolGeometry& geometry,
                      bool count_include_pad, int64_t divisor_override) {
    avg_forward(x, y, geometry, PoolWindowKind::avg, count_include_pad, divisor_override,
                "avg_pool");
}

void avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                       const PoolGeometry& geometry, bool count_include_pad,
                       int64_t divisor_override) {
    avg_backward(grad_out, grad_x, geometry, PoolWindowKind::avg, count_include_pad,
                 divisor_override, "avg_pool");
}

// An adaptive cell is averaged over its own size: no padding, no override. Global pooling is
// a per-plane reduction (summed in a different order than the CPU's sequential sum).
void adaptive_avg_pool_forward(const StridedView& x, const StridedView& y,
                               const PoolGeometry& geometry) {
    const PoolGeometry& g = geometry;
    if (pool_out_plane(g) != 1 || g.planes == 0) {
        avg_forward(x, y, g, PoolWindowKind::adaptive, false, 0, "adaptive_avg_pool");
        return;
    }
    const int64_t n = pool_in_plane(g);
    dispatch_floating(x.dtype, "adaptive_avg_pool", [&]<typename T>() {
        if (n >= 4096) {
            unsigned blocks = unsigned(g.planes < 65535 ? g.planes : 65535);
            global_avg_block_kernel<T>
                <<<blocks, kThreads>>>(x.ptr<const T>(), y.ptr<T>(), g.planes, n);
        } else {
            global_avg_warp_kernel<T><<<grid_for(g.planes * kWarpSize), kThreads>>>(
                x.ptr<const T>(), y.ptr<T>(), g.planes, n);
        }
    });
    LUMEN_CUDA_CHECK_LAUNCH("global_avg_kernel");
}

void adaptive_avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                                const PoolGeometry& geometry) {
    const PoolGeometry& g = geometry;
    if (pool_out_plane(g) != 1 || g.planes == 0) {
        avg_backward(grad_out, grad_x, g, PoolWindowKind::adaptive, false, 0, "adaptive_avg_pool");
        return;
    }
    const int64_t n = pool_in_plane(g), count = g.planes * n;
    if (count == 0) return;
    dispatch_floating(grad_x.dtype, "adaptive_avg_pool", [&]<typename T>() {
        global_avg_backward_kernel<T>
            <<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(), grad_x.ptr<T>(), n, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("global_avg_backward_kernel");
}

}  // namespace lumen::cuda
