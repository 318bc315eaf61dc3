// CPU interpolate over contiguous (planes, D, H, W), forward and backward. Each spatial dim is
// turned once into a table: output o reads input index0[o] with weight lambda0[o] and, for a
// linear dim, index1[o] with lambda1[o] (PyTorch's UpSample.h formulas, computed in the
// tensor's own precision as PyTorch does). An output row (plane, d, h) is then a weighted
// sum of up to four input rows, each read through the W table. Forward runs in parallel over
// output rows; backward scatters into the input, so it runs in parallel over whole planes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/interpolate_kernels.h"
#include "ops/interpolate_math.h"

namespace lumen::cpu {

namespace {

template <typename T>
struct Axis {
    std::vector<int64_t> index0, index1;
    std::vector<T> lambda0, lambda1;
    bool two_taps = false;  // a linear dim that actually resamples (in != out)
};

// The taps of a linear dim (ops/interpolate_math.h); a dim with in == out copies.
template <typename T>
Axis<T> linear_axis(int64_t in, int64_t out, bool align_corners, double scale_factor) {
    Axis<T> axis;
    axis.two_taps = in != out;
    T scale = interpolate_scale<T>(in, out, scale_factor, align_corners);
    for (int64_t o = 0; o < out; ++o) {
        LinearTap<T> tap = axis.two_taps ? linear_source(scale, o, in, align_corners)
                                         : LinearTap<T>{o, o, T(1), T(0)};
        axis.index0.push_back(tap.i0);
        axis.index1.push_back(tap.i1);
        axis.lambda0.push_back(tap.l0);
        axis.lambda1.push_back(tap.l1);
    }
    return axis;
}

template <typename T>
Axis<T> make_axis(const InterpolateGeometry& g, int dim) {
    int64_t in = g.in[dim], out = g.out[dim];
    if (g.mode == InterpolateMode::linear)
        return linear_axis<T>(in, out, g.align_corners, g.scale_factor[dim]);
    Axis<T> axis;
    bool exact = g.mode == InterpolateMode::nearest_exact;
    T scale = interpolate_scale<T>(in, out, g.scale_factor[dim], false);
    for (int64_t o = 0; o < out; ++o) {
        axis.index0.push_back(nearest_source_index(scale, o, in, exact));
        axis.lambda0.push_back(T(1));
    }
    axis.index1 = axis.index0;
    axis.lambda1.assign(size_t(out), T(0));
    return axis;
}

// The input rows (offsets inside a plane) and weights that output row (od, oh) blends.
template <typename T>
int row_taps(const Axis<T>& depth, const Axis<T>& height, int64_t od, int64_t oh, int64_t in_height,
             int64_t width, int64_t* offsets, T* weights) {
    int taps = 0;
    for (int a = 0; a < (depth.two_taps ? 2 : 1); ++a) {
        int64_t d = a ? depth.index1[size_t(od)] : depth.index0[size_t(od)];
        T wd = a ? depth.lambda1[size_t(od)] : depth.lambda0[size_t(od)];
        for (int b = 0; b < (height.two_taps ? 2 : 1); ++b) {
            int64_t h = b ? height.index1[size_t(oh)] : height.index0[size_t(oh)];
            T wh = b ? height.lambda1[size_t(oh)] : height.lambda0[size_t(oh)];
            offsets[taps] = (d * in_height + h) * width;
            weights[taps++] = wd * wh;
        }
    }
    return taps;
}

template <typename T>
void forward_typed(const T* x, T* y, const InterpolateGeometry& g) {
    Axis<T> depth = make_axis<T>(g, 0), height = make_axis<T>(g, 1), width = make_axis<T>(g, 2);
    const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const int64_t rows = g.planes * g.out[0] * g.out[1], out_w = g.out[2];
    const int64_t* w0 = width.index0.data();
    const int64_t* w1 = width.index1.data();
    const T* l0 = width.lambda0.data();
    const T* l1 = width.lambda1.data();
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(out_w * 4, 1));
    parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
            int64_t p = r / (g.out[0] * g.out[1]), od = r / g.out[1] % g.out[0], oh = r % g.out[1];
            int64_t offsets[4];
            T weights[4];
            int taps = row_taps(depth, height, od, oh, g.in[1], g.in[2], offsets, weights);
            T* out = y + r * out_w;
            const T* plane = x + p * in_plane;
            for (int64_t ow = 0; ow < out_w; ++ow) out[ow] = T(0);
            for (int t = 0; t < taps; ++t) {
                const T* row = plane + offsets[t];
                T weight = weights[t];
                if (width.two_taps) {
                    for (int64_t ow = 0; ow < out_w; ++ow)
                        out[ow] += weight * (l0[ow] * row[w0[ow]] + l1[ow] * row[w1[ow]]);
                } else {
                    for (int64_t ow = 0; ow < out_w; ++ow) out[ow] += weight * row[w0[ow]];
                }
            }
        }
    });
}

template <typename T>
void backward_typed(const T* grad_out, T* grad_x, const InterpolateGeometry& g) {
    Axis<T> depth = make_axis<T>(g, 0), height = make_axis<T>(g, 1), width = make_axis<T>(g, 2);
    const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const int64_t out_plane = g.out[0] * g.out[1] * g.out[2], out_w = g.out[2];
    const int64_t* w0 = width.index0.data();
    const int64_t* w1 = width.index1.data();
    const T* l0 = width.lambda0.data();
    const T* l1 = width.lambda1.data();
    int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(out_plane * 4 + in_plane, 1));
    parallel_for(0, g.planes, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
            T* plane = grad_x + p * in_plane;
            std::fill(plane, plane + in_plane, T(0));
            const T* go = grad_out + p * out_plane;
            for (int64_t od = 0; od < g.out[0]; ++od) {
                for (int64_t oh = 0; oh < g.out[1]; ++oh, go += out_w) {
                    int64_t offsets[4];
                    T weights[4];
                    int taps = row_taps(depth, height, od, oh, g.in[1], g.in[2], offsets, weights);
                    for (int t = 0; t < taps; ++t) {
                        T* row = plane + offsets[t];
                        T weight = weights[t];
                        for (int64_t ow = 0; ow < out_w; ++ow) {
                            T share = weight * go[ow];
                            row[w0[ow]] += l0[ow] * share;
                            if (width.two_taps) row[w1[ow]] += l1[ow] * share;
                        }
                    }
                }
            }
        }
    });
}

// ---- linear mode, staged ----
// The W blend of an input row is computed once and shared by every output row that reads it
// (about out_h / in_h of them), then rows are blended along H (and D) in contiguous loops
// that vectorize. Backward runs the same stages transposed. Work is split by plane (by
// (plane, d) slice when D is not resampled), so each thread owns its scratch and its grad_x.

template <typename T>
struct LinearAxes {
    Axis<T> depth, height, width;
};

// out[i] = a * p[i] + b * q[i] (q unused when b is not needed).
template <typename T>
void blend_rows(T* out, const T* p, T a, const T* q, T b, bool two, int64_t n) {
    if (two) {
        for (int64_t i = 0; i < n; ++i) out[i] = a * p[i] + b * q[i];
    } else {
        for (int64_t i = 0; i < n; ++i) out[i] = a * p[i];
    }
}

// acc[i] += a * g[i]
template <typename T>
void add_scaled(T* acc, const T* g, T a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] += a * g[i];
}

// One (H, W) slice: y (out_h, out_w) from x (in_h, in_w). `rows` holds in_h blended rows of
// out_w, `done` marks those computed.
template <typename T>
void linear_slice_forward(const T* x, T* y, const LinearAxes<T>& a, int64_t in_w,
                          std::vector<T>& rows, std::vector<char>& done) {
    const int64_t out_h = int64_t(a.height.index0.size()), out_w = int64_t(a.width.index0.size());
    const Axis<T>& w = a.width;
    std::fill(done.begin(), done.end(), 0);
    auto row = [&](int64_t h) {
        T* r = rows.data() + h * out_w;
        if (!done[size_t(h)]) {
            const T* in = x + h * in_w;
            for (int64_t ow = 0; ow < out_w; ++ow)
                r[ow] = w.lambda0[size_t(ow)] * in[w.index0[size_t(ow)]] +
                        w.lambda1[size_t(ow)] * in[w.index1[size_t(ow)]];
            done[size_t(h)] = 1;
        }
        return r;
    };
    for (int64_t oh = 0; oh < out_h; ++oh) {
        const Axis<T>& h = a.height;
        bool two = h.two_taps;
        const T* first = row(h.index0[size_t(oh)]);
        const T* second = two ? row(h.index1[size_t(oh)]) : first;
        blend_rows(y + oh * out_w, first, h.lambda0[size_t(oh)], second, h.lambda1[size_t(oh)], two,
                   out_w);
    }
}

// grad_x (in_h, in_w) += the transposed blend of grad_out (out_h, out_w); `rows` (in_h x out_w)
// gathers the H stage, `done` marks rows that received anything.
template <typename T>
void linear_slice_backward(const T* grad_out, T* grad_x, const LinearAxes<T>& a, int64_t in_w,
                           std::vector<T>& rows, std::vector<char>& done) {
    const int64_t out_h = int64_t(a.height.index0.size()), out_w = int64_t(a.width.index0.size());
    const Axis<T>& h = a.height;
    const Axis<T>& w = a.width;
    std::fill(done.begin(), done.end(), 0);
    auto row = [&](int64_t i) {
        T* r = rows.data() + i * out_w;
        if (!done[size_t(i)]) std::fill(r, r + out_w, T(0));
        done[size_t(i)] = 1;
        return r;
    };
    for (int64_t oh = 0; oh < out_h; ++oh) {
        const T* g = grad_out + oh * out_w;
        add_scaled(row(h.index0[size_t(oh)]), g, h.lambda0[size_t(oh)], out_w);
        if (h.two_taps) add_scaled(row(h.index1[size_t(oh)]), g, h.lambda1[size_t(oh)], out_w);
    }
    for (size_t i = 0; i < done.size(); ++i) {
        if (!done[i]) continue;
        const T* r = rows.data() + int64_t(i) * out_w;
        T* gx = grad_x + int64_t(i) * in_w;
        for (int64_t ow = 0; ow < out_w; ++ow) {
            gx[w.index0[size_t(ow)]] += w.lambda0[size_t(ow)] * r[ow];
            gx[w.index1[size_t(ow)]] += w.lambda1[size_t(ow)] * r[ow];
        }
    }
}

// Calls body(first_slice, last_slice, scratch rows, done flags, slab, slab flags) over
// parallel chunks; a slice is one (plane, d) when D is not resampled, else a whole plane.
template <typename T, typename Body>
void for_each_linear_unit(const InterpolateGeometry& g, bool depth_two, const Body& body) {
    int64_t units = depth_two ? g.planes : g.planes * g.in[0];
    int64_t per_unit = (depth_two ? g.out[0] : 1) * g.out[1] * g.out[2] * 4;
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_unit, 1));
    parallel_for(0, units, grain, [&](int64_t lo, int64_t hi) {
        std::vector<T> rows(size_t(g.in[1] * g.out[2]));
        std::vector<char> done(size_t(g.in[1]));
        std::vector<T> slab(depth_two ? size_t(g.in[0] * g.out[1] * g.out[2]) : 0);
        std::vector<char> slab_done(depth_two ? size_t(g.in[0]) : 0);
        body(lo, hi, rows, done, slab, slab_done);
    });
}

template <typename T>
void linear_forward_typed(const T* x, T* y, const InterpolateGeometry& g) {
    LinearAxes<T> a{make_axis<T>(g, 0), make_axis<T>(g, 1), make_axis<T>(g, 2)};
    const int64_t in_slice = g.in[1] * g.in[2], out_slice = g.out[1] * g.out[2];
    const bool depth_two = a.depth.two_taps;
    for_each_linear_unit<T>(
        g, depth_two,
        [&](int64_t lo, int64_t hi, std::vector<T>& rows, std::vector<char>& done,
            std::vector<T>& slab, std::vector<char>& slab_done) {
            for (int64_t u = lo; u < hi; ++u) {
                if (!depth_two) {  // D is copied: u is one (plane, d) slice
                    linear_slice_forward(x + u * in_slice, y + u * out_slice, a, g.in[2], rows,
                                         done);
                    continue;
                }
                const T* plane = x + u * g.in[0] * in_slice;
                std::fill(slab_done.begin(), slab_done.end(), 0);
                auto slice = [&](int64_t d) {
                    T* s = slab.data() + d * out_slice;
                    if (!slab_done[size_t(d)])
                        linear_slice_forward(plane + d * in_slice, s, a, g.in[2], rows, done);
                    slab_done[size_t(d)] = 1;
                    return s;
                };
                for (int64_t od = 0; od < g.out[0]; ++od) {
                    const T* first = slice(a.depth.index0[size_t(od)]);
                    const T* second = slice(a.depth.index1[size_t(od)]);
                    blend_rows(y + (u * g.out[0] + od) * out_slice, first,
                               a.depth.lambda0[size_t(od)], second, a.depth.lambda1[size_t(od)],
                               true, out_slice);
                }
            }
        });
}

template <typename T>
void linear_backward_typed(const T* grad_out, T* grad_x, const InterpolateGeometry& g) {
    LinearAxes<T> a{make_axis<T>(g, 0), make_axis<T>(g, 1), make_axis<T>(g, 2)};
    const int64_t in_slice = g.in[1] * g.in[2], out_slice = g.out[1] * g.out[2];
    const bool depth_two = a.depth.two_taps;
    for_each_linear_unit<T>(
        g, depth_two,
        [&](int64_t lo, int64_t hi, std::vector<T>& rows, std::vector<char>& done,
            std::vector<T>& slab, std::vector<char>& slab_done) {
            for (int64_t u = lo; u < hi; ++u) {
                int64_t depth = depth_two ? g.in[0] : 1;
                T* plane = grad_x + u * depth * in_slice;
                std::fill(plane, plane + depth * in_slice, T(0));
                if (!depth_two) {
                    linear_slice_backward(grad_out + u * out_slice, plane, a, g.in[2], rows, done);
                    continue;
                }
                // D stage transposed: slab[d] += lambda * grad_out[od], then each slice's H and W.
                std::fill(slab_done.begin(), slab_done.end(), 0);
                auto slice = [&](int64_t d) {
                    T* s = slab.data() + d * out_slice;
                    if (!slab_done[size_t(d)]) std::fill(s, s + out_slice, T(0));
                    slab_done[size_t(d)] = 1;
                    return s;
                };
                for (int64_t od = 0; od < g.out[0]; ++od) {
                    const T* go = grad_out + (u * g.out[0] + od) * out_slice;
                    add_scaled(slice(a.depth.index0[size_t(od)]), go, a.depth.lambda0[size_t(od)],
                               out_slice);
                    add_scaled(slice(a.depth.index1[size_t(od)]), go, a.depth.lambda1[size_t(od)],
                               out_slice);
                }
                for (int64_t d = 0; d < g.in[0]; ++d)
                    if (slab_done[size_t(d)])
                        linear_slice_backward(slab.data() + d * out_slice, plane + d * in_slice, a,
                                              g.in[2], rows, done);
            }
        });
}

}  // namespace

void interpolate_forward(const StridedView& x, const StridedView& y,
                         const InterpolateGeometry& geometry) {
    if (y.numel() == 0) return;
    dispatch_floating(x.dtype, "interpolate", [&]<typename T>() {
        if (geometry.mode == InterpolateMode::linear) {
            linear_forward_typed<T>(x.ptr<T>(), y.ptr<T>(), geometry);
        } else {
            forward_typed<T>(x.ptr<T>(), y.ptr<T>(), geometry);
        }
    });
}

void interpolate_backward(const StridedView& grad_out, const StridedView& grad_x,
                          const InterpolateGeometry& geometry) {
    if (grad_x.numel() == 0) return;
    dispatch_floating(grad_x.dtype, "interpolate", [&]<typename T>() {
        if (geometry.mode == InterpolateMode::linear) {
            linear_backward_typed<T>(grad_out.ptr<T>(), grad_x.ptr<T>(), geometry);
        } else {
            backward_typed<T>(grad_out.ptr<T>(), grad_x.ptr<T>(), geometry);
        }
    });
}

}  // namespace lumen::cpu
