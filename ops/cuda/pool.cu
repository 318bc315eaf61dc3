// CUDA max, average and adaptive pooling over contiguous (planes, D, H, W), with the semantics
// of ops/cpu/pool.cpp: the same windows, the same NaN rule and the same summation order.
// Forward: one thread per output element. Backward: one thread per input element gathers the
// outputs whose windows cover it, in increasing output order, which is the order in which the
// CPU's scatter adds them, so no atomics are needed and the result is deterministic.
#include <cmath>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/pool_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;

enum class WindowKind { max, avg, adaptive };

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// The inputs begin, begin + step, ... (< end) along one dim; `padded` is the window size
// counting padded positions (the count_include_pad divisor).
struct Window {
    int64_t begin, end, step, padded;
};

// The window of output o along dim, exactly as the CPU's max_windows / avg_windows /
// adaptive_cells build it.
__device__ Window window_of(WindowKind kind, const PoolGeometry& g, int dim, int64_t o) {
    Window w{0, 0, 1, 0};
    if (kind == WindowKind::adaptive) {
        int64_t in = g.in[dim], out = g.out[dim];
        w.begin = o * in / out;
        w.end = ((o + 1) * in + out - 1) / out;
        w.padded = w.end - w.begin;
    } else if (kind == WindowKind::max) {
        // Dilated taps from o * stride - padding; the first visited one is the first >= 0.
        w.step = g.dilation[dim];
        w.begin = o * g.stride[dim] - g.padding[dim];
        w.end = imin(w.begin + (g.kernel[dim] - 1) * w.step + 1, g.in[dim]);
        if (w.begin < 0) w.begin += (-w.begin + w.step - 1) / w.step * w.step;
    } else {
        int64_t start = o * g.stride[dim] - g.padding[dim];
        int64_t end = imin(start + g.kernel[dim], g.in[dim] + g.padding[dim]);
        w.padded = end - start;
        w.begin = imax(start, 0);
        w.end = imin(end, g.in[dim]);
    }
    return w;
}

// [lo, hi): the outputs along dim whose window may contain input i. A superset is enough: the
// callers keep only the outputs that really read i.
__device__ void covering(WindowKind kind, const PoolGeometry& g, int dim, int64_t i, int64_t& lo,
                         int64_t& hi) {
    int64_t out = g.out[dim];
    if (kind == WindowKind::adaptive) {
        // floor(o in / out) <= i < ceil((o + 1) in / out)  <=>
        // floor(i out / in) <= o < ceil((i + 1) out / in)
        int64_t in = g.in[dim];
        lo = i * out / in;
        hi = ((i + 1) * out + in - 1) / in;
    } else {
        // Window o spans [o stride - padding, + extent), so it holds i when o stride lies in
        // [i + padding - extent + 1, i + padding].
        int64_t stride = g.stride[dim], shifted = i + g.padding[dim];
        int64_t extent =
            kind == WindowKind::max ? (g.kernel[dim] - 1) * g.dilation[dim] + 1 : g.kernel[dim];
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

__device__ __forceinline__ int64_t volume(const int64_t* sizes) {
    return sizes[0] * sizes[1] * sizes[2];
}

// The first maximum wins; a NaN replaces any maximum (PyTorch's `val > max || isnan(val)`).
// An empty window keeps -inf and the position of its first tap, as on the CPU.
template <typename T>
__global__ void max_forward_kernel(const T* x, T* y, int64_t* indices, PoolGeometry g,
                                   WindowKind kind, int64_t count) {
    const int64_t height = g.in[1], width = g.in[2];
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position o = position_of(i, g.out);
        Window wd = window_of(kind, g, 0, o.d), wh = window_of(kind, g, 1, o.h);
        Window ww = window_of(kind, g, 2, o.w);
        const T* plane = x + o.plane * volume(g.in);
        T best = T(-INFINITY);
        int64_t best_index = (wd.begin * height + wh.begin) * width + ww.begin;
        for (int64_t d = wd.begin; d < wd.end; d += wd.step) {
            for (int64_t h = wh.begin; h < wh.end; h += wh.step) {
                int64_t row = (d * height + h) * width;
                for (int64_t w = ww.begin; w < ww.end; w += ww.step) {
                    T v = plane[row + w];
                    if (v > best || v != v) {
                        best = v;
                        best_index = row + w;
                    }
                }
            }
        }
        y[i] = best;
        indices[i] = best_index;
    }
}

// grad_x[i] = sum of grad_out[o] over the outputs o of i's plane that picked i.
template <typename T>
__global__ void max_backward_kernel(const T* grad_out, const int64_t* indices, T* grad_x,
                                    PoolGeometry g, WindowKind kind, int64_t count) {
    const int64_t out_plane = volume(g.out);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position p = position_of(i, g.in);
        int64_t flat = (p.d * g.in[1] + p.h) * g.in[2] + p.w;
        int64_t d_lo, d_hi, h_lo, h_hi, w_lo, w_hi;
        covering(kind, g, 0, p.d, d_lo, d_hi);
        covering(kind, g, 1, p.h, h_lo, h_hi);
        covering(kind, g, 2, p.w, w_lo, w_hi);
        const T* go = grad_out + p.plane * out_plane;
        const int64_t* picked = indices + p.plane * out_plane;
        T total = T(0);
        for (int64_t od = d_lo; od < d_hi; ++od) {
            for (int64_t oh = h_lo; oh < h_hi; ++oh) {
                int64_t row = (od * g.out[1] + oh) * g.out[2];
                for (int64_t ow = w_lo; ow < w_hi; ++ow)
                    if (picked[row + ow] == flat) total += go[row + ow];
            }
        }
        grad_x[i] = total;
    }
}

__device__ int64_t divisor_of(const Window& wd, const Window& wh, const Window& ww,
                              bool count_include_pad, int64_t divisor_override) {
    if (divisor_override != 0) return divisor_override;
    if (count_include_pad) return wd.padded * wh.padded * ww.padded;
    return (wd.end - wd.begin) * (wh.end - wh.begin) * (ww.end - ww.begin);
}

// An empty window (only possible in ceil mode) gives 0, as in PyTorch.
template <typename T>
__global__ void avg_forward_kernel(const T* x, T* y, PoolGeometry g, WindowKind kind,
                                   bool count_include_pad, int64_t divisor_override,
                                   int64_t count) {
    const int64_t height = g.in[1], width = g.in[2];
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position o = position_of(i, g.out);
        Window wd = window_of(kind, g, 0, o.d), wh = window_of(kind, g, 1, o.h);
        Window ww = window_of(kind, g, 2, o.w);
        if (wd.begin >= wd.end || wh.begin >= wh.end || ww.begin >= ww.end) {
            y[i] = T(0);
            continue;
        }
        const T* plane = x + o.plane * volume(g.in);
        T total = T(0);
        for (int64_t d = wd.begin; d < wd.end; ++d) {
            for (int64_t h = wh.begin; h < wh.end; ++h) {
                const T* row = plane + (d * height + h) * width;
                for (int64_t w = ww.begin; w < ww.end; ++w) total += row[w];
            }
        }
        y[i] = total / T(divisor_of(wd, wh, ww, count_include_pad, divisor_override));
    }
}

// grad_x[i] = sum over the windows containing i of grad_out / divisor, in output order.
template <typename T>
__global__ void avg_backward_kernel(const T* grad_out, T* grad_x, PoolGeometry g, WindowKind kind,
                                    bool count_include_pad, int64_t divisor_override,
                                    int64_t count) {
    const int64_t out_plane = volume(g.out);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position p = position_of(i, g.in);
        int64_t d_lo, d_hi, h_lo, h_hi, w_lo, w_hi;
        covering(kind, g, 0, p.d, d_lo, d_hi);
        covering(kind, g, 1, p.h, h_lo, h_hi);
        covering(kind, g, 2, p.w, w_lo, w_hi);
        const T* go = grad_out + p.plane * out_plane;
        T total = T(0);
        for (int64_t od = d_lo; od < d_hi; ++od) {
            Window wd = window_of(kind, g, 0, od);
            if (p.d < wd.begin || p.d >= wd.end) continue;
            for (int64_t oh = h_lo; oh < h_hi; ++oh) {
                Window wh = window_of(kind, g, 1, oh);
                if (p.h < wh.begin || p.h >= wh.end) continue;
                for (int64_t ow = w_lo; ow < w_hi; ++ow) {
                    Window ww = window_of(kind, g, 2, ow);
                    if (p.w < ww.begin || p.w >= ww.end) continue;
                    T divisor = T(divisor_of(wd, wh, ww, count_include_pad, divisor_override));
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

int64_t in_plane(const PoolGeometry& g) { return g.in[0] * g.in[1] * g.in[2]; }
int64_t out_plane(const PoolGeometry& g) { return g.out[0] * g.out[1] * g.out[2]; }

void max_forward(const StridedView& x, const StridedView& y, const StridedView& indices,
                 const PoolGeometry& g, WindowKind kind, const char* op) {
    int64_t count = g.planes * out_plane(g);
    if (count == 0) return;
    dispatch_floating(x.dtype, op, [&]<typename T>() {
        max_forward_kernel<T><<<grid_for(count), kThreads>>>(
            x.ptr<const T>(), y.ptr<T>(), indices.ptr<int64_t>(), g, kind, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("max_forward_kernel");
}

void avg_forward(const StridedView& x, const StridedView& y, const PoolGeometry& g, WindowKind kind,
                 bool count_include_pad, int64_t divisor_override, const char* op) {
    int64_t count = g.planes * out_plane(g);
    if (count == 0) return;
    dispatch_floating(x.dtype, op, [&]<typename T>() {
        avg_forward_kernel<T><<<grid_for(count), kThreads>>>(
            x.ptr<const T>(), y.ptr<T>(), g, kind, count_include_pad, divisor_override, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("avg_forward_kernel");
}

void avg_backward(const StridedView& grad_out, const StridedView& grad_x, const PoolGeometry& g,
                  WindowKind kind, bool count_include_pad, int64_t divisor_override,
                  const char* op) {
    int64_t count = g.planes * in_plane(g);
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
    max_forward(x, y, indices, geometry, WindowKind::max, "max_pool");
}

void adaptive_max_pool_forward(const StridedView& x, const StridedView& y,
                               const StridedView& indices, const PoolGeometry& geometry) {
    max_forward(x, y, indices, geometry, WindowKind::adaptive, "adaptive_max_pool");
}

void max_pool_backward(const StridedView& grad_out, const StridedView& indices,
                       const StridedView& grad_x, const PoolGeometry& geometry) {
    int64_t count = geometry.planes * in_plane(geometry);
    if (count == 0) return;
    WindowKind kind = geometry.adaptive ? WindowKind::adaptive : WindowKind::max;
    dispatch_floating(grad_x.dtype, "max_pool", [&]<typename T>() {
        max_backward_kernel<T>
            <<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(), indices.ptr<const int64_t>(),
                                            grad_x.ptr<T>(), geometry, kind, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("max_backward_kernel");
}

void avg_pool_forward(const StridedView& x, const StridedView& y, const PoolGeometry& geometry,
                      bool count_include_pad, int64_t divisor_override) {
    avg_forward(x, y, geometry, WindowKind::avg, count_include_pad, divisor_override, "avg_pool");
}

void avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                       const PoolGeometry& geometry, bool count_include_pad,
                       int64_t divisor_override) {
    avg_backward(grad_out, grad_x, geometry, WindowKind::avg, count_include_pad, divisor_override,
                 "avg_pool");
}

// An adaptive cell is averaged over its own size: no padding, no override. Global pooling is
// a per-plane reduction (summed in a different order than the CPU's sequential sum).
void adaptive_avg_pool_forward(const StridedView& x, const StridedView& y,
                               const PoolGeometry& geometry) {
    const PoolGeometry& g = geometry;
    if (out_plane(g) != 1 || g.planes == 0) {
        avg_forward(x, y, g, WindowKind::adaptive, false, 0, "adaptive_avg_pool");
        return;
    }
    const int64_t n = in_plane(g);
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
    if (out_plane(g) != 1 || g.planes == 0) {
        avg_backward(grad_out, grad_x, g, WindowKind::adaptive, false, 0, "adaptive_avg_pool");
        return;
    }
    const int64_t n = in_plane(g), count = g.planes * n;
    if (count == 0) return;
    dispatch_floating(grad_x.dtype, "adaptive_avg_pool", [&]<typename T>() {
        global_avg_backward_kernel<T>
            <<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(), grad_x.ptr<T>(), n, count);
    });
    LUMEN_CUDA_CHECK_LAUNCH("global_avg_backward_kernel");
}

}  // namespace lumen::cuda
