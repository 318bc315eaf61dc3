// CPU dense convolution through im2col + GEMM (Eigen), forward and both backward products,
// plus the bias kernels. The output positions of each (sample, group) are cut into column
// chunks so that the im2col scratch stays bounded (kColBytes per thread) and every thread
// gets work even for a single sample. Depthwise problems are sent to conv_rows.cpp; most
// float32 stride-1 3-D ones (and the gradients of some 2-D 3x3 ones), on AVX-512 machines, to
// conv_direct.cpp (conv_direct_applies says exactly which); stride-1 ones writing few channels
// to conv_rows.cpp too (few_channels_conv_applies).
// A 1x1 convolution with stride 1 and no padding reads x in place (its im2col is x itself).

// Tune generically, as ops/cpu/matmul.cpp explains: GCC's znver3 tuning slows Eigen's GEMM
// kernel by about 30%. It has to precede every include.
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC target("tune=generic")
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include <Eigen/Core>

#include "core/dispatch.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/storage.h"
#include "ops/conv_kernels.h"

namespace lumen::cpu {

namespace {

// The im2col chunk of one task: about L2-sized, so that the GEMM reads it back from cache.
constexpr int64_t kColBytes = 1 << 20;
// Fewer output columns than this per chunk make the GEMM inefficient.
constexpr int64_t kMinChunkColumns = 64;
// Multiply-adds per thread below which a problem stays on one thread: starting a parallel
// region costs about as much (the same threshold as matmul's).
constexpr int64_t kParallelWork = 100000;

// The grain (in tasks) that gives each thread at least kParallelWork multiply-adds.
int64_t task_grain(int64_t work_per_task) {
    return std::max<int64_t>(1, kParallelWork / std::max<int64_t>(1, work_per_task));
}

template <typename T>
using RowMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ConstRowMap =
    Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
               Eigen::Unaligned, Eigen::OuterStride<>>;

// The output indices o in [0, count) whose input index o * stride + offset lies in
// [0, size): a contiguous range [lo, hi), possibly empty.
struct Range {
    int64_t lo, hi;
};
Range valid_range(int64_t count, int64_t stride, int64_t offset, int64_t size) {
    int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t last = size - 1 - offset;  // o * stride <= last
    int64_t hi = last < 0 ? 0 : std::min(count, last / stride + 1);
    return {lo, std::max(lo, hi)};
}

// The sizes every task of one problem shares.
struct Plan {
    int64_t in_group, out_group;  // channels per group
    int64_t rows;                 // in_group * kernel taps: the rows of im2col, the GEMM depth
    int64_t columns;              // output positions
    int64_t chunk, chunks;        // columns per chunk, chunks per (sample, group)
    bool pointwise;               // 1x1, stride 1, no padding: im2col is x itself
};

Plan make_plan(const ConvShape& s, int64_t element_bytes) {
    Plan p;
    p.in_group = s.in_channels / s.groups;
    p.out_group = s.out_channels / s.groups;
    p.rows = p.in_group * s.kernel_size();
    p.columns = s.output_size();
    p.pointwise = s.kernel_size() == 1;
    // Equal sizes too: a transposed 1x1 convolution with output_padding (allowed when the
    // dilation exceeds it) has more input than output positions, and x is then no im2col.
    for (int d = 0; d < 3; ++d)
        p.pointwise &= s.stride[d] == 1 && s.padding[d] == 0 && s.input[d] == s.output[d];
    int64_t chunk =
        std::max(kMinChunkColumns, kColBytes / std::max<int64_t>(1, p.rows * element_bytes));
    // Enough chunks for every thread even when there are fewer (sample, group) pairs.
    int64_t units = s.batch * s.groups, threads = get_num_threads();
    if (units < threads) chunk = std::min(chunk, (p.columns * units + threads - 1) / threads);
    chunk = std::max<int64_t>(std::min(chunk, p.columns), std::min(kMinChunkColumns, p.columns));
    p.chunks = std::max<int64_t>(1, (p.columns + chunk - 1) / chunk);
    p.chunk = (p.columns + p.chunks - 1) / p.chunks;  // balanced
    return p;
}

// Calls run(input_row_offset or -1, first_w, count, column) for the output positions
// [first, last) of tap (kd, kh), one output row (fixed od, oh) at a time. The input row is
// offset in elements from the channel start, -1 when the tap falls in the padding.
template <typename Run>
void for_each_output_row(const ConvShape& s, int64_t kd, int64_t kh, int64_t first, int64_t last,
                         const Run& run) {
    int64_t ow = first % s.output[2], rest = first / s.output[2];
    int64_t oh = rest % s.output[1], od = rest / s.output[1];
    for (int64_t pos = first; pos < last;) {
        int64_t count = std::min(s.output[2] - ow, last - pos);
        int64_t id = od * s.stride[0] - s.padding[0] + kd * s.dilation[0];
        int64_t ih = oh * s.stride[1] - s.padding[1] + kh * s.dilation[1];
        bool inside = id >= 0 && id < s.input[0] && ih >= 0 && ih < s.input[1];
        run(inside ? (id * s.input[1] + ih) * s.input[2] : -1, ow, count, pos - first);
        pos += count;
        ow = 0;
        if (++oh == s.output[1]) {
            oh = 0;
            ++od;
        }
    }
}

// Calls tap(c, kd, kh, kw, row) for each im2col row of channels [0, channels).
template <typename Tap>
void for_each_tap(const ConvShape& s, int64_t channels, const Tap& tap) {
    int64_t row = 0;
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t kd = 0; kd < s.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < s.kernel[1]; ++kh)
                for (int64_t kw = 0; kw < s.kernel[2]; ++kw) tap(c, kd, kh, kw, row++);
}

// col (channels * taps, last - first), row-major = the input values each output position in
// [first, last) reads, zero in the padding. x points at the group's first channel.
template <typename T>
void im2col(const T* x, const ConvShape& s, int64_t channels, int64_t first, int64_t last, T* col) {
    int64_t width = last - first, in_size = s.input_size(), sw = s.stride[2];
    for_each_tap(s, channels, [&](int64_t c, int64_t kd, int64_t kh, int64_t kw, int64_t row) {
        const T* channel = x + c * in_size;
        T* out = col + row * width;
        int64_t offset = kw * s.dilation[2] - s.padding[2];
        Range w = valid_range(s.output[2], sw, offset, s.input[2]);
        for_each_output_row(s, kd, kh, first, last,
                            [&](int64_t in_row, int64_t ow, int64_t count, int64_t column) {
                                T* dst = out + column;
                                if (in_row < 0) {
                                    std::fill(dst, dst + count, T(0));
                                    return;
                                }
                                int64_t a = std::clamp(w.lo - ow, int64_t(0), count);
                                int64_t b = std::clamp(w.hi - ow, a, count);
                                const T* src = channel + in_row + offset + ow * sw;
                                std::fill(dst, dst + a, T(0));
                                if (sw == 1) {
                                    std::copy(src + a, src + b, dst + a);
                                } else {
                                    for (int64_t j = a; j < b; ++j) dst[j] = src[j * sw];
                                }
                                std::fill(dst + b, dst + count, T(0));
                            });
    });
}

// The adjoint of im2col: adds every col entry into the input element it was read from.
template <typename T>
void col2im(const T* col, const ConvShape& s, int64_t channels, int64_t first, int64_t last, T* x) {
    int64_t width = last - first, in_size = s.input_size(), sw = s.stride[2];
    for_each_tap(s, channels, [&](int64_t c, int64_t kd, int64_t kh, int64_t kw, int64_t row) {
        T* channel = x + c * in_size;
        const T* in = col + row * width;
        int64_t offset = kw * s.dilation[2] - s.padding[2];
        Range w = valid_range(s.output[2], sw, offset, s.input[2]);
        for_each_output_row(s, kd, kh, first, last,
                            [&](int64_t in_row, int64_t ow, int64_t count, int64_t column) {
                                if (in_row < 0) return;
                                int64_t a = std::clamp(w.lo - ow, int64_t(0), count);
                                int64_t b = std::clamp(w.hi - ow, a, count);
                                T* dst = channel + in_row + offset + ow * sw;
                                const T* src = in + column;
                                for (int64_t j = a; j < b; ++j) dst[j * sw] += src[j];
                            });
    });
}

// ---- forward: y[b, g] (out_group, columns) = W[g] (out_group, rows) @ col (rows, columns) ----

template <typename T>
void forward_typed(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    Plan p = make_plan(s, sizeof(T));
    int64_t tasks = s.batch * s.groups * p.chunks;
    int64_t grain = task_grain(p.out_group * p.rows * p.chunk);
    parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
        CpuScratch<T> col(p.pointwise ? 0 : size_t(p.rows * p.chunk));
        for (int64_t task = lo; task < hi; ++task) {
            int64_t chunk = task % p.chunks, unit = task / p.chunks;
            int64_t g = unit % s.groups, b = unit / s.groups;
            int64_t first = chunk * p.chunk, last = std::min(p.columns, first + p.chunk);
            int64_t width = last - first;
            if (width <= 0) continue;
            const T* x_group = x + (b * s.in_channels + g * p.in_group) * s.input_size();
            T* y_group = y + (b * s.out_channels + g * p.out_group) * p.columns + first;
            RowMap<T> out(y_group, p.out_group, width, Eigen::OuterStride<>(p.columns));
            ConstRowMap<T> w(weight + g * p.out_group * p.rows, p.out_group, p.rows,
                             Eigen::OuterStride<>(p.rows));
            // Starting from the bias fuses its add into the GEMM's accumulation.
            for (int64_t o = 0; o < p.out_group; ++o)
                out.row(o).setConstant(bias ? bias[g * p.out_group + o] : T(0));
            if (p.pointwise) {
                ConstRowMap<T> in(x_group + first, p.rows, width, Eigen::OuterStride<>(p.columns));
                out.noalias() += w * in;
            } else {
                im2col(x_group, s, p.in_group, first, last, col.data());
                ConstRowMap<T> in(col.data(), p.rows, width, Eigen::OuterStride<>(width));
                out.noalias() += w * in;
            }
        }
    });
}

// ---- grad_x: col = W[g]^T @ grad_y[b, g], then col2im ----
// Tasks are (sample, group, block of input channels): col rows of different channels land
// in different grad_x channels, so tasks never write the same element.

template <typename T>
void backward_input_typed(const T* grad_y, const T* weight, T* grad_x, const ConvShape& s) {
    Plan p = make_plan(s, sizeof(T));
    int64_t units = s.batch * s.groups, threads = get_num_threads();
    if (units == 0) return;
    int64_t blocks = units >= threads ? 1 : std::min(p.in_group, (threads + units - 1) / units);
    int64_t per_block = (p.in_group + blocks - 1) / blocks;
    int64_t taps = s.kernel_size();
    if (!p.pointwise) std::fill(grad_x, grad_x + s.batch * s.in_channels * s.input_size(), T(0));
    int64_t grain = task_grain(p.out_group * per_block * taps * p.columns);
    parallel_for(0, units * blocks, grain, [&](int64_t lo, int64_t hi) {
        CpuScratch<T> col(p.pointwise ? 0 : size_t(per_block * taps * p.chunk));
        for (int64_t task = lo; task < hi; ++task) {
            int64_t block = task % blocks, unit = task / blocks;
            int64_t g = unit % s.groups, b = unit / s.groups;
            int64_t c0 = block * per_block, c1 = std::min(p.in_group, c0 + per_block);
            if (c0 >= c1) continue;
            int64_t rows = (c1 - c0) * taps;
            T* x_block = grad_x + (b * s.in_channels + g * p.in_group + c0) * s.input_size();
            // W[g] is (out_group, rows) row-major; its columns [c0 taps, c1 taps) transposed.
            ConstRowMap<T> w(weight + g * p.out_group * p.rows + c0 * taps, p.out_group, rows,
                             Eigen::OuterStride<>(p.rows));
            for (int64_t chunk = 0; chunk < p.chunks; ++chunk) {
                int64_t first = chunk * p.chunk, last = std::min(p.columns, first + p.chunk);
                int64_t width = last - first;
                if (width <= 0) continue;
                ConstRowMap<T> gy(
                    grad_y + (b * s.out_channels + g * p.out_group) * p.columns + first,
                    p.out_group, width, Eigen::OuterStride<>(p.columns));
                if (p.pointwise) {
                    RowMap<T> out(x_block + first, rows, width, Eigen::OuterStride<>(p.columns));
                    out.noalias() = w.transpose() * gy;
                } else {
                    RowMap<T> out(col.data(), rows, width, Eigen::OuterStride<>(width));
                    out.noalias() = w.transpose() * gy;
                    col2im(col.data(), s, c1 - c0, first, last, x_block);
                }
            }
        }
    });
}

// ---- grad_weight: sum over samples and chunks of grad_y[b, g] @ col^T ----
// The tasks are cut into one part per thread; each part accumulates into its own copy of
// grad_weight and the copies are added in part order, so the result depends only on the
// thread count.

template <typename T>
void backward_weight_typed(const T* x, const T* grad_y, T* grad_weight, const ConvShape& s) {
    Plan p = make_plan(s, sizeof(T));
    int64_t tasks = s.batch * s.groups * p.chunks;
    int64_t work = tasks * p.out_group * p.rows * p.chunk;
    int64_t parts =
        std::clamp<int64_t>(work / kParallelWork, 1, std::min<int64_t>(get_num_threads(), tasks));
    int64_t weight_size = s.out_channels * p.rows;
    std::vector<T> partials(size_t(std::max<int64_t>(0, parts - 1) * weight_size), T(0));
    std::fill(grad_weight, grad_weight + weight_size, T(0));
    if (tasks == 0) return;
    parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
        CpuScratch<T> col(p.pointwise ? 0 : size_t(p.rows * p.chunk));
        for (int64_t part = lo; part < hi; ++part) {
            T* target = part == 0 ? grad_weight : partials.data() + (part - 1) * weight_size;
            for (int64_t task = part * tasks / parts; task < (part + 1) * tasks / parts; ++task) {
                int64_t chunk = task % p.chunks, unit = task / p.chunks;
                int64_t g = unit % s.groups, b = unit / s.groups;
                int64_t first = chunk * p.chunk, last = std::min(p.columns, first + p.chunk);
                int64_t width = last - first;
                if (width <= 0) continue;
                const T* x_group = x + (b * s.in_channels + g * p.in_group) * s.input_size();
                ConstRowMap<T> gy(
                    grad_y + (b * s.out_channels + g * p.out_group) * p.columns + first,
                    p.out_group, width, Eigen::OuterStride<>(p.columns));
                RowMap<T> gw(target + g * p.out_group * p.rows, p.out_group, p.rows,
                             Eigen::OuterStride<>(p.rows));
                if (p.pointwise) {
                    ConstRowMap<T> in(x_group + first, p.rows, width,
                                      Eigen::OuterStride<>(p.columns));
                    gw.noalias() += gy * in.transpose();
                } else {
                    im2col(x_group, s, p.in_group, first, last, col.data());
                    ConstRowMap<T> in(col.data(), p.rows, width, Eigen::OuterStride<>(width));
                    gw.noalias() += gy * in.transpose();
                }
            }
        }
    });
    for (int64_t part = 1; part < parts; ++part) {
        const T* partial = partials.data() + (part - 1) * weight_size;
        for (int64_t i = 0; i < weight_size; ++i) grad_weight[i] += partial[i];
    }
}

}  // namespace

void conv_forward(const StridedView& x, const StridedView& weight, const StridedView& bias,
                  const StridedView& y, const ConvShape& shape) {
    if (shape.is_depthwise()) return depthwise_conv_forward(x, weight, bias, y, shape);
    if (conv_winograd_applies(shape, ConvPass::forward))
        return conv_winograd_forward(x, weight, bias, y, shape);
    if (y.dtype == DType::float32 && conv_direct_applies(shape, ConvPass::forward))
        return conv_direct_forward(x.ptr<const float>(), weight.ptr<const float>(),
                                   bias.data ? bias.ptr<const float>() : nullptr, y.ptr<float>(),
                                   shape);
    if (few_channels_conv_applies(shape, ConvPass::forward))
        return few_channels_conv_forward(x, weight, bias, y, shape);
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        forward_typed<T>(x.ptr<const T>(), weight.ptr<const T>(),
                         bias.data ? bias.ptr<const T>() : nullptr, y.ptr<T>(), shape);
    });
}

void conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                         const StridedView& grad_x, const ConvShape& shape) {
    if (shape.is_depthwise()) return depthwise_conv_backward_input(grad_y, weight, grad_x, shape);
    if (conv_winograd_applies(shape, ConvPass::input_gradient))
        return conv_winograd_backward_input(grad_y, weight, grad_x, shape);
    if (grad_x.dtype == DType::float32 && conv_direct_applies(shape, ConvPass::input_gradient))
        return conv_direct_backward_input(grad_y.ptr<const float>(), weight.ptr<const float>(),
                                          grad_x.ptr<float>(), shape);
    if (few_channels_conv_applies(shape, ConvPass::input_gradient))
        return few_channels_conv_backward_input(grad_y, weight, grad_x, shape);
    dispatch_floating(grad_x.dtype, "conv", [&]<typename T>() {
        backward_input_typed<T>(grad_y.ptr<const T>(), weight.ptr<const T>(), grad_x.ptr<T>(),
                                shape);
    });
}

void conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                          const StridedView& grad_weight, const ConvShape& shape) {
    if (shape.is_depthwise()) return depthwise_conv_backward_weight(x, grad_y, grad_weight, shape);
    if (grad_weight.dtype == DType::float32 &&
        conv_direct_applies(shape, ConvPass::weight_gradient))
        return conv_direct_backward_weight(x.ptr<const float>(), grad_y.ptr<const float>(),
                                           grad_weight.ptr<float>(), shape);
    if (few_channels_conv_applies(shape, ConvPass::weight_gradient))
        return few_channels_conv_backward_weight(x, grad_y, grad_weight, shape);
    dispatch_floating(grad_weight.dtype, "conv", [&]<typename T>() {
        backward_weight_typed<T>(x.ptr<const T>(), grad_y.ptr<const T>(), grad_weight.ptr<T>(),
                                 shape);
    });
}

// Shapes: grad_y (B, C, S...) -> grad_bias (C); one channel per task, samples in order.
void conv_backward_bias(const StridedView& grad_y, const StridedView& grad_bias) {
    int64_t batch = grad_y.shape[0], channels = grad_y.shape[1];
    int64_t size = batch * channels == 0 ? 0 : grad_y.numel() / (batch * channels);
    dispatch_floating(grad_bias.dtype, "conv", [&]<typename T>() {
        const T* g = grad_y.ptr<const T>();
        T* out = grad_bias.ptr<T>();
        int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, batch * size));
        parallel_for(0, channels, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t c = lo; c < hi; ++c) {
                T total = 0;
                for (int64_t b = 0; b < batch; ++b) {
                    const T* plane = g + (b * channels + c) * size;
                    T sum = 0;
                    for (int64_t i = 0; i < size; ++i) sum += plane[i];
                    total += sum;
                }
                out[c] = total;
            }
        });
    });
}

void conv_add_bias(const StridedView& y, const StridedView& bias) {
    int64_t batch = y.shape[0], channels = y.shape[1];
    int64_t size = batch * channels == 0 ? 0 : y.numel() / (batch * channels);
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        T* out = y.ptr<T>();
        const T* b = bias.ptr<const T>();
        int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, size));
        parallel_for(0, batch * channels, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t plane = lo; plane < hi; ++plane) {
                T value = b[plane % channels];
                T* row = out + plane * size;
                for (int64_t i = 0; i < size; ++i) row[i] += value;
            }
        });
    });
}

}  // namespace lumen::cpu
