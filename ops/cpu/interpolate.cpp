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

namespace lumen::cpu {

namespace {

template <typename T>
struct Axis {
    std::vector<int64_t> index0, index1;
    std::vector<T> lambda0, lambda1;
    bool two_taps = false;  // a linear dim that actually resamples (in != out)
};

// PyTorch's legacy nearest (and nearest-exact): the scale is float whatever the dtype, and
// out == in or out == 2 in are special-cased to avoid float error.
int64_t nearest_index(int64_t o, int64_t in, int64_t out, double scale_factor, bool exact) {
    float scale = scale_factor > 0 ? float(1.0 / scale_factor) : float(in) / float(out);
    if (exact) {
        return std::min(int64_t(std::floor(float((double(o) + 0.5) * scale))), in - 1);
    }
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    return std::min(int64_t(std::floor(float(o) * scale)), in - 1);
}

// area_pixel_compute_scale and compute_source_index_and_lambda, with T as opmath type.
template <typename T>
Axis<T> linear_axis(int64_t in, int64_t out, bool align_corners, double scale_factor) {
    Axis<T> axis;
    axis.two_taps = in != out;
    T scale;
    if (align_corners) {
        scale = out > 1 ? T(in - 1) / T(out - 1) : T(0);
    } else {
        scale = scale_factor > 0 ? T(1.0 / scale_factor) : T(in) / T(out);
    }
    for (int64_t o = 0; o < out; ++o) {
        if (!axis.two_taps) {
            axis.index0.push_back(o);
            axis.index1.push_back(o);
            axis.lambda0.push_back(T(1));
            axis.lambda1.push_back(T(0));
            continue;
        }
        // Half-pixel centres: (o + 0.5) is a double in PyTorch, the result is rounded to T;
        // negative positions clamp to 0 (both taps are then input 0 anyway).
        T source = align_corners ? scale * T(o) : T(double(scale) * (double(o) + 0.5) - 0.5);
        if (!align_corners && source < T(0)) source = T(0);
        int64_t index0 = std::min(int64_t(source), in - 1);
        T lambda1 = std::clamp(source - T(index0), T(0), T(1));
        axis.index0.push_back(index0);
        axis.index1.push_back(index0 + (index0 < in - 1 ? 1 : 0));
        axis.lambda0.push_back(T(1) - lambda1);
        axis.lambda1.push_back(lambda1);
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
    for (int64_t o = 0; o < out; ++o) {
        axis.index0.push_back(nearest_index(o, in, out, g.scale_factor[dim], exact));
        axis.lambda0.push_back(T(1));
    }
    axis.index1 = axis.index0;
    axis.lambda1.assign(size_t(out), T(0));
    return axis;
}

// The input rows (offsets inside a plane) and weights that output row (od, oh) blends.
template <typename T>
int row_taps(const Axis<T>& depth, const Axis<T>& height, int64_t od, int64_t oh,
             int64_t in_height, int64_t width, int64_t* offsets, T* weights) {
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
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(out_plane * 4 + in_plane, 1));
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

}  // namespace

void interpolate_forward(const StridedView& x, const StridedView& y,
                         const InterpolateGeometry& geometry) {
    if (y.numel() == 0) return;
    dispatch_floating(x.dtype, "interpolate",
                      [&]<typename T>() { forward_typed<T>(x.ptr<T>(), y.ptr<T>(), geometry); });
}

void interpolate_backward(const StridedView& grad_out, const StridedView& grad_x,
                          const InterpolateGeometry& geometry) {
    if (grad_x.numel() == 0) return;
    dispatch_floating(grad_x.dtype, "interpolate", [&]<typename T>() {
        backward_typed<T>(grad_out.ptr<T>(), grad_x.ptr<T>(), geometry);
    });
}

}  // namespace lumen::cpu
