// CPU max, average and adaptive pooling over contiguous (planes, D, H, W), forward and backward.
// Every pool is described per spatial dim by the window of each output index (first input,
// end, step, and for averages the size counted with padding), so one max kernel and one
// average kernel serve the fixed-window and the adaptive pools, 2-D (D = 1) and 3-D alike.
// Forward runs in parallel over output rows (plane, d, h); backward scatters into the input,
// and windows of neighbouring rows overlap, so it runs in parallel over whole planes.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/pool_kernels.h"
#include "ops/pool_math.h"

namespace lumen::cpu {

namespace {

using Windows = std::array<std::vector<PoolWindow>, 3>;

// The window of every output index along each dim (ops/pool_math.h).
Windows windows_of(PoolWindowKind kind, const PoolGeometry& g) {
    Windows windows;
    for (int dim = 0; dim < 3; ++dim)
        for (int64_t o = 0; o < g.out[dim]; ++o)
            windows[dim].push_back(pool_window(kind, g, dim, o));
    return windows;
}

int64_t count(const PoolWindow& w) {
    return w.end > w.begin ? (w.end - w.begin + w.step - 1) / w.step : 0;
}

// Output elements read per window, on average, to size the parallel grain.
int64_t window_work(const Windows& windows) {
    int64_t work = 1;
    for (int dim = 0; dim < 3; ++dim) work *= std::max<int64_t>(count(windows[dim][0]), 1);
    return work;
}

// Calls row(plane, od, oh) for every output row, in parallel chunks of about kGrainSize reads.
template <typename Row>
void for_each_output_row(const PoolGeometry& g, int64_t work_per_output, const Row& row) {
    int64_t rows = g.planes * g.out[0] * g.out[1];
    int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(g.out[2] * work_per_output, 1));
    parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r)
            row(r / (g.out[0] * g.out[1]), r / g.out[1] % g.out[0], r % g.out[1]);
    });
}

// Calls plane_fn(plane) for every plane, in parallel chunks of about kGrainSize elements.
template <typename PlaneFn>
void for_each_plane(const PoolGeometry& g, int64_t work_per_plane, const PlaneFn& plane_fn) {
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work_per_plane, 1));
    parallel_for(0, g.planes, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) plane_fn(p);
    });
}

// ---- max ----

// pool_window_max of every output (ops/pool_math.h).
template <typename T>
void max_forward_typed(const T* x, T* y, int64_t* indices, const PoolGeometry& g,
                       const Windows& windows) {
    for_each_output_row(g, window_work(windows), [&](int64_t p, int64_t od, int64_t oh) {
        const T* plane = x + p * pool_in_plane(g);
        int64_t o = ((p * g.out[0] + od) * g.out[1] + oh) * g.out[2];
        const PoolWindow& wd = windows[0][size_t(od)];
        const PoolWindow& wh = windows[1][size_t(oh)];
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            PoolMax<T> best = pool_window_max(plane, g, wd, wh, windows[2][size_t(ow)]);
            y[o + ow] = best.value;
            indices[o + ow] = best.index;
        }
    });
}

void max_forward(const StridedView& x, const StridedView& y, const StridedView& indices,
                 const PoolGeometry& g, const Windows& windows, const char* op) {
    if (g.planes * pool_out_plane(g) == 0) return;
    dispatch_floating(x.dtype, op, [&]<typename T>() {
        max_forward_typed<T>(x.ptr<T>(), y.ptr<T>(), indices.ptr<int64_t>(), g, windows);
    });
}

// ---- average ----

// pool_window_average of every output (ops/pool_math.h).
template <typename T>
void avg_forward_typed(const T* x, T* y, const PoolGeometry& g, const Windows& windows,
                       bool count_include_pad, int64_t divisor_override) {
    for_each_output_row(g, window_work(windows), [&](int64_t p, int64_t od, int64_t oh) {
        const T* plane = x + p * pool_in_plane(g);
        int64_t o = ((p * g.out[0] + od) * g.out[1] + oh) * g.out[2];
        const PoolWindow& wd = windows[0][size_t(od)];
        const PoolWindow& wh = windows[1][size_t(oh)];
        for (int64_t ow = 0; ow < g.out[2]; ++ow)
            y[o + ow] = pool_window_average(plane, g, wd, wh, windows[2][size_t(ow)],
                                            count_include_pad, divisor_override);
    });
}

template <typename T>
void avg_backward_typed(const T* grad_out, T* grad_x, const PoolGeometry& g, const Windows& windows,
                        bool count_include_pad, int64_t divisor_override) {
    const int64_t height = g.in[1], width = g.in[2];
    int64_t work = pool_out_plane(g) * window_work(windows) + pool_in_plane(g);
    for_each_plane(g, work, [&](int64_t p) {
        T* plane = grad_x + p * pool_in_plane(g);
        std::fill(plane, plane + pool_in_plane(g), T(0));
        const T* go = grad_out + p * pool_out_plane(g);
        for (int64_t od = 0; od < g.out[0]; ++od) {
            const PoolWindow& wd = windows[0][size_t(od)];
            for (int64_t oh = 0; oh < g.out[1]; ++oh) {
                const PoolWindow& wh = windows[1][size_t(oh)];
                for (int64_t ow = 0; ow < g.out[2]; ++ow, ++go) {
                    const PoolWindow& ww = windows[2][size_t(ow)];
                    if (wd.begin >= wd.end || wh.begin >= wh.end || ww.begin >= ww.end) continue;
                    T share =
                        *go / T(pool_divisor(wd, wh, ww, count_include_pad, divisor_override));
                    for (int64_t d = wd.begin; d < wd.end; ++d) {
                        for (int64_t h = wh.begin; h < wh.end; ++h) {
                            T* row = plane + (d * height + h) * width;
                            for (int64_t w = ww.begin; w < ww.end; ++w) row[w] += share;
                        }
                    }
                }
            }
        }
    });
}

void avg_forward(const StridedView& x, const StridedView& y, const PoolGeometry& g,
                 const Windows& windows, bool count_include_pad, int64_t divisor_override,
                 const char* op) {
    if (g.planes * pool_out_plane(g) == 0) return;
    dispatch_floating(x.dtype, op, [&]<typename T>() {
        avg_forward_typed<T>(x.ptr<T>(), y.ptr<T>(), g, windows, count_include_pad,
                             divisor_override);
    });
}

void avg_backward(const StridedView& grad_out, const StridedView& grad_x, const PoolGeometry& g,
                  const Windows& windows, bool count_include_pad, int64_t divisor_override,
                  const char* op) {
    if (g.planes * pool_in_plane(g) == 0) return;
    dispatch_floating(grad_x.dtype, op, [&]<typename T>() {
        avg_backward_typed<T>(grad_out.ptr<T>(), grad_x.ptr<T>(), g, windows, count_include_pad,
                              divisor_override);
    });
}

}  // namespace

void max_pool_forward(const StridedView& x, const StridedView& y, const StridedView& indices,
                      const PoolGeometry& geometry) {
    max_forward(x, y, indices, geometry, windows_of(PoolWindowKind::max, geometry), "max_pool");
}

void adaptive_max_pool_forward(const StridedView& x, const StridedView& y,
                               const StridedView& indices, const PoolGeometry& geometry) {
    max_forward(x, y, indices, geometry, windows_of(PoolWindowKind::adaptive, geometry),
                "adaptive_max_pool");
}

// Windows overlap when stride < kernel, so several outputs may route to one input: add.
void max_pool_backward(const StridedView& grad_out, const StridedView& indices,
                       const StridedView& grad_x, const PoolGeometry& geometry) {
    const PoolGeometry& g = geometry;
    if (g.planes * pool_in_plane(g) == 0) return;
    dispatch_floating(grad_x.dtype, "max_pool", [&]<typename T>() {
        const T* go = grad_out.ptr<T>();
        const int64_t* index = indices.ptr<int64_t>();
        T* gx = grad_x.ptr<T>();
        const int64_t inputs = pool_in_plane(g), outputs = pool_out_plane(g);
        for_each_plane(g, inputs + outputs, [&](int64_t p) {
            T* plane = gx + p * inputs;
            std::fill(plane, plane + inputs, T(0));
            for (int64_t o = p * outputs; o < (p + 1) * outputs; ++o) {
                int64_t i = index[o];
                if (i >= 0 && i < inputs) plane[i] += go[o];
            }
        });
    });
}

void avg_pool_forward(const StridedView& x, const StridedView& y, const PoolGeometry& geometry,
                      bool count_include_pad, int64_t divisor_override) {
    avg_forward(x, y, geometry, windows_of(PoolWindowKind::avg, geometry), count_include_pad,
                divisor_override, "avg_pool");
}

void avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                       const PoolGeometry& geometry, bool count_include_pad,
                       int64_t divisor_override) {
    avg_backward(grad_out, grad_x, geometry, windows_of(PoolWindowKind::avg, geometry),
                 count_include_pad, divisor_override, "avg_pool");
}

// An adaptive cell is averaged over its own size: no padding, no override. Global pooling (one
// cell per plane, as in classifier heads) is a plain contiguous mean per plane.
void adaptive_avg_pool_forward(const StridedView& x, const StridedView& y,
                               const PoolGeometry& geometry) {
    const PoolGeometry& g = geometry;
    if (pool_out_plane(g) != 1 || g.planes == 0) {
        avg_forward(x, y, g, windows_of(PoolWindowKind::adaptive, g), false, 0,
                    "adaptive_avg_pool");
        return;
    }
    dispatch_floating(x.dtype, "adaptive_avg_pool", [&]<typename T>() {
        const T* in = x.ptr<T>();
        T* out = y.ptr<T>();
        const int64_t n = pool_in_plane(g);
        for_each_plane(g, n, [&](int64_t p) {
            T total = 0;
            for (int64_t i = 0; i < n; ++i) total += in[p * n + i];
            out[p] = total / T(n);
        });
    });
}

void adaptive_avg_pool_backward(const StridedView& grad_out, const StridedView& grad_x,
                                const PoolGeometry& geometry) {
    const PoolGeometry& g = geometry;
    if (pool_out_plane(g) != 1 || g.planes == 0) {
        avg_backward(grad_out, grad_x, g, windows_of(PoolWindowKind::adaptive, g), false, 0,
                     "adaptive_avg_pool");
        return;
    }
    dispatch_floating(grad_x.dtype, "adaptive_avg_pool", [&]<typename T>() {
        const T* go = grad_out.ptr<T>();
        T* gx = grad_x.ptr<T>();
        const int64_t n = pool_in_plane(g);
        for_each_plane(g, n,
                       [&](int64_t p) { std::fill(gx + p * n, gx + (p + 1) * n, go[p] / T(n)); });
    });
}

}  // namespace lumen::cpu
