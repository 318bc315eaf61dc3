// CUDA interpolate over contiguous (planes, D, H, W), forward and backward, with the index
// formulas of ops/cpu/interpolate.cpp (PyTorch's UpSample.h): the scales are computed on the
// host exactly as the CPU computes them, the per-output source index on the device with the
// same roundings (nearest: exact; linear: the same explicit fma), so every output reads the
// same inputs as on the CPU. Forward: one thread per output element; linear blends along W,
// then H, then D, as the CPU's staged kernel. Backward: one thread per input element gathers
// the outputs that read it (found by binary search: source indices grow with the output
// index), so there are no atomics and the result is deterministic.
#include <cmath>

#include "core/cuda/cuda_check.h"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/interpolate_kernels.h"
#include "ops/interpolate_math.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;

// One spatial dim: sizes, the scale in T (as the CPU's tables use it), and whether a linear dim
// resamples (in != out; otherwise it is the identity).
template <typename T>
struct Axis {
    int64_t in = 1, out = 1;
    T scale = T(0);
    bool two_taps = false;
};

template <typename T>
struct Axes {
    Axis<T> dim[3];  // D, H, W
    int64_t planes = 1;
    bool align_corners = false;
    bool exact = false;  // nearest-exact
};

// The scales of every dim, on the host in T (ops/interpolate_math.h).
template <typename T>
Axes<T> make_axes(const InterpolateGeometry& g) {
    Axes<T> axes;
    axes.planes = g.planes;
    axes.align_corners = g.align_corners;
    axes.exact = g.mode == InterpolateMode::nearest_exact;
    for (int d = 0; d < 3; ++d) {
        Axis<T>& a = axes.dim[d];
        a.in = g.in[d];
        a.out = g.out[d];
        bool linear = g.mode == InterpolateMode::linear;
        a.two_taps = linear && a.in != a.out;
        a.scale = interpolate_scale<T>(a.in, a.out, g.scale_factor[d], linear && g.align_corners);
    }
    return axes;
}

template <typename T>
__device__ int64_t nearest_source(const Axis<T>& a, int64_t o, bool exact) {
    return nearest_source_index(a.scale, o, a.in, exact);
}

// The taps of output o; a dim with in == out copies.
template <typename T>
__device__ LinearTap<T> linear_tap(const Axis<T>& a, int64_t o, bool align_corners) {
    if (!a.two_taps) return {o, o, T(1), T(0)};
    return linear_source(a.scale, o, a.in, align_corners);
}

// The weight with which output tap t reads input i (both taps may be i at the last input).
template <typename T>
__device__ T tap_weight(const LinearTap<T>& t, int64_t i) {
    return (t.i0 == i ? t.l0 : T(0)) + (t.i1 == i ? t.l1 : T(0));
}

// The first output o in [0, out] whose source index is >= target (sources never decrease).
template <typename Source>
__device__ int64_t first_reaching(int64_t out, int64_t target, const Source& source) {
    int64_t lo = 0, hi = out;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (source(mid) >= target) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

struct Position {
    int64_t plane, c[3];  // c = (d, h, w)
};

template <typename T>
__device__ Position position_of(int64_t i, const Axes<T>& axes, bool output) {
    Position p;
    for (int d = 2; d >= 0; --d) {
        int64_t size = output ? axes.dim[d].out : axes.dim[d].in;
        p.c[d] = i % size;
        i /= size;
    }
    p.plane = i;
    return p;
}

template <typename T>
__device__ int64_t volume(const Axes<T>& axes, bool output) {
    int64_t n = 1;
    for (int d = 0; d < 3; ++d) n *= output ? axes.dim[d].out : axes.dim[d].in;
    return n;
}

// y = 0 + x[source]: the CPU adds the one tap to a zeroed output (so -0 becomes +0 there too).
template <typename T>
__global__ void nearest_forward_kernel(const T* x, T* y, Axes<T> axes, int64_t count) {
    const int64_t in_plane = volume(axes, false);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position o = position_of(i, axes, true);
        int64_t s[3];
        for (int d = 0; d < 3; ++d) s[d] = nearest_source(axes.dim[d], o.c[d], axes.exact);
        y[i] =
            T(0) + x[o.plane * in_plane + (s[0] * axes.dim[1].in + s[1]) * axes.dim[2].in + s[2]];
    }
}

// grad_x[i] = the sum of grad_out over the outputs that copied i, in output order (the CPU's).
template <typename T>
__global__ void nearest_backward_kernel(const T* grad_out, T* grad_x, Axes<T> axes, int64_t count) {
    const int64_t out_plane = volume(axes, true);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position p = position_of(i, axes, false);
        int64_t lo[3], hi[3];
        for (int d = 0; d < 3; ++d) {
            const Axis<T>& a = axes.dim[d];
            auto source = [&](int64_t o) { return nearest_source(a, o, axes.exact); };
            lo[d] = first_reaching(a.out, p.c[d], source);
            hi[d] = first_reaching(a.out, p.c[d] + 1, source);
        }
        const T* go = grad_out + p.plane * out_plane;
        T total = T(0);
        for (int64_t od = lo[0]; od < hi[0]; ++od)
            for (int64_t oh = lo[1]; oh < hi[1]; ++oh)
                for (int64_t ow = lo[2]; ow < hi[2]; ++ow)
                    total += go[(od * axes.dim[1].out + oh) * axes.dim[2].out + ow];
        grad_x[i] = total;
    }
}

// One output of the separable linear blend: each input row is blended along W, rows along H,
// slices along D (the CPU's staging; dims with in == out copy).
template <typename T>
__global__ void linear_forward_kernel(const T* x, T* y, Axes<T> axes, int64_t count) {
    const int64_t in_plane = volume(axes, false);
    const int64_t in_h = axes.dim[1].in, in_w = axes.dim[2].in;
    const bool ac = axes.align_corners;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position o = position_of(i, axes, true);
        LinearTap<T> td = linear_tap(axes.dim[0], o.c[0], ac);
        LinearTap<T> th = linear_tap(axes.dim[1], o.c[1], ac);
        LinearTap<T> tw = linear_tap(axes.dim[2], o.c[2], ac);
        const T* plane = x + o.plane * in_plane;
        auto row = [&](int64_t d, int64_t h) {
            const T* r = plane + (d * in_h + h) * in_w;
            return tw.l0 * r[tw.i0] + tw.l1 * r[tw.i1];
        };
        auto slice = [&](int64_t d) {
            T first = th.l0 * row(d, th.i0);
            return axes.dim[1].two_taps ? first + th.l1 * row(d, th.i1) : first;
        };
        y[i] = axes.dim[0].two_taps ? td.l0 * slice(td.i0) + td.l1 * slice(td.i1) : slice(td.i0);
    }
}

// grad_x[i] = sum over the outputs o that read i of w_D(o, i) w_H(o, i) w_W(o, i) grad_out[o].
// Along a resampling dim those outputs have i0 in {i - 1, i}: a contiguous range.
template <typename T>
__global__ void linear_backward_kernel(const T* grad_out, T* grad_x, Axes<T> axes, int64_t count) {
    const int64_t out_plane = volume(axes, true);
    const int64_t out_h = axes.dim[1].out, out_w = axes.dim[2].out;
    const bool ac = axes.align_corners;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position p = position_of(i, axes, false);
        int64_t lo[3], hi[3];
        for (int d = 0; d < 3; ++d) {
            const Axis<T>& a = axes.dim[d];
            if (!a.two_taps) {
                lo[d] = p.c[d];
                hi[d] = p.c[d] + 1;
                continue;
            }
            auto first = [&](int64_t o) { return linear_tap(a, o, ac).i0; };
            lo[d] = first_reaching(a.out, p.c[d] - 1, first);
            hi[d] = first_reaching(a.out, p.c[d] + 1, first);
        }
        const T* go = grad_out + p.plane * out_plane;
        T total = T(0);
        for (int64_t od = lo[0]; od < hi[0]; ++od) {
            T wd = tap_weight(linear_tap(axes.dim[0], od, ac), p.c[0]);
            for (int64_t oh = lo[1]; oh < hi[1]; ++oh) {
                T wdh = wd * tap_weight(linear_tap(axes.dim[1], oh, ac), p.c[1]);
                const T* row = go + (od * out_h + oh) * out_w;
                T sum = T(0);
                for (int64_t ow = lo[2]; ow < hi[2]; ++ow)
                    sum += tap_weight(linear_tap(axes.dim[2], ow, ac), p.c[2]) * row[ow];
                total += wdh * sum;
            }
        }
        grad_x[i] = total;
    }
}

}  // namespace

void interpolate_forward(const StridedView& x, const StridedView& y,
                         const InterpolateGeometry& geometry) {
    int64_t count = y.numel();
    if (count == 0) return;
    dispatch_floating(x.dtype, "interpolate", [&]<typename T>() {
        Axes<T> axes = make_axes<T>(geometry);
        if (geometry.mode == InterpolateMode::linear) {
            linear_forward_kernel<T>
                <<<grid_for(count), kThreads>>>(x.ptr<const T>(), y.ptr<T>(), axes, count);
        } else {
            nearest_forward_kernel<T>
                <<<grid_for(count), kThreads>>>(x.ptr<const T>(), y.ptr<T>(), axes, count);
        }
    });
    LUMEN_CUDA_CHECK_LAUNCH("interpolate_forward_kernel");
}

void interpolate_backward(const StridedView& grad_out, const StridedView& grad_x,
                          const InterpolateGeometry& geometry) {
    int64_t count = grad_x.numel();
    if (count == 0) return;
    dispatch_floating(grad_x.dtype, "interpolate", [&]<typename T>() {
        Axes<T> axes = make_axes<T>(geometry);
        if (geometry.mode == InterpolateMode::linear) {
            linear_backward_kernel<T><<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(),
                                                                     grad_x.ptr<T>(), axes, count);
        } else {
            nearest_backward_kernel<T><<<grid_for(count), kThreads>>>(grad_out.ptr<const T>(),
                                                                      grad_x.ptr<T>(), axes, count);
        }
    });
    LUMEN_CUDA_CHECK_LAUNCH("interpolate_backward_kernel");
}

}  // namespace lumen::cuda
