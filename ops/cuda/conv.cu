// CUDA dense convolution (ops/conv_kernels.h): im2col + cuBLAS GEMM for the forward and both
// backward products, a gathering col2im, and the bias kernels; depthwise problems go to
// ops/cuda/conv_depthwise.cu. The batch is cut into chunks of samples (or, for one huge
// sample, of output positions) so that the column buffer stays under 256 MiB; scratch
// comes from lumen's caching allocator. No atomics: results are deterministic.
// Compiled but never run on a GPU (written without one).
#include <algorithm>
#include <atomic>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/conv_kernels.h"
#include "ops/cuda/blas.cuh"
#include "ops/cuda/conv_common.cuh"

namespace lumen::cuda {

namespace {

// Bound on the im2col buffer (set_conv_scratch_limit); the per-sample weight-gradient
// partials get a quarter of it.
std::atomic<int64_t> column_bytes{int64_t(256) << 20};

// The sizes every chunk of one problem shares. Column buffer layout: (samples, col_rows,
// chunk_columns), row c * taps + tap = the input value that tap of channel c reads for each
// output position (group g owns rows [g rows, (g + 1) rows)).
struct Plan {
    int64_t in_group, out_group, taps;
    int64_t rows;           // in_group * taps: the GEMM depth of one group
    int64_t col_rows;       // in_channels * taps
    int64_t columns;        // output positions of one sample
    int64_t samples;        // samples per chunk
    int64_t chunk_columns;  // output positions per chunk (all of them when samples > 1)
    bool pointwise;         // 1x1, stride 1, no padding: x itself is the column matrix
};

Plan make_plan(const ConvShape& s, size_t element) {
    int64_t budget = column_bytes.load();
    Plan p;
    p.in_group = s.in_channels / s.groups;
    p.out_group = s.out_channels / s.groups;
    p.taps = s.kernel_size();
    p.rows = p.in_group * p.taps;
    p.col_rows = s.in_channels * p.taps;
    p.columns = s.output_size();
    p.pointwise = p.taps == 1;
    // (A transposed 1x1 convolution with output_padding has more input than output positions.)
    for (int d = 0; d < 3; ++d)
        p.pointwise &= s.stride[d] == 1 && s.padding[d] == 0 && s.input[d] == s.output[d];
    int64_t sample_bytes = std::max<int64_t>(1, p.col_rows * p.columns * int64_t(element));
    if (p.pointwise || sample_bytes <= budget) {
        p.samples = std::clamp<int64_t>(budget / sample_bytes, 1, std::max<int64_t>(1, s.batch));
        if (p.pointwise) p.samples = s.batch;  // no buffer at all
        p.chunk_columns = p.columns;
    } else {
        p.samples = 1;
        int64_t row_bytes = std::max<int64_t>(1, p.col_rows * int64_t(element));
        p.chunk_columns = std::clamp<int64_t>(budget / row_bytes, 1, p.columns);
    }
    return p;
}

// Calls chunk(first_sample, samples, first_column, columns) for every chunk, in order.
template <typename Chunk>
void for_each_chunk(const ConvShape& s, const Plan& p, const Chunk& chunk) {
    for (int64_t b0 = 0; b0 < s.batch; b0 += p.samples)
        for (int64_t c0 = 0; c0 < p.columns; c0 += p.chunk_columns)
            chunk(b0, std::min(p.samples, s.batch - b0), c0,
                  std::min(p.chunk_columns, p.columns - c0));
}

// col[sample][row][column] for samples [b0, b0 + samples) and output positions [c0, c0 +
// width): one thread per entry, the column fastest, so that writes are coalesced and reads
// are too at stride 1. Zero where the tap falls in the padding.
template <typename T>
__global__ void im2col_kernel(const T* x, ConvShape s, int64_t b0, int64_t c0, int64_t width,
                              int64_t col_rows, int64_t count, T* col) {
    int64_t in_size = volume(s.input);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t rest = i / width, row = rest % col_rows, sample = rest / col_rows;
        Position o = unravel3(c0 + i % width, s.output);
        Position k = unravel3(row, s.kernel);  // k.d also carries the channel: row / (kH kW)
        int64_t c = k.d / s.kernel[0], kd = k.d % s.kernel[0];
        int64_t id = o.d * s.stride[0] - s.padding[0] + kd * s.dilation[0];
        int64_t ih = o.h * s.stride[1] - s.padding[1] + k.h * s.dilation[1];
        int64_t iw = o.w * s.stride[2] - s.padding[2] + k.w * s.dilation[2];
        bool inside =
            id >= 0 && id < s.input[0] && ih >= 0 && ih < s.input[1] && iw >= 0 && iw < s.input[2];
        int64_t plane = (b0 + sample) * s.in_channels + c;
        col[i] = inside ? x[plane * in_size + (id * s.input[1] + ih) * s.input[2] + iw] : T(0);
    }
}

// The adjoint of im2col as a gather: each grad_x element (one thread) sums the column
// entries that read it, so no two threads write one element. `accumulate` adds to grad_x
// (later column chunks of a sample), otherwise it is overwritten.
template <typename T>
__global__ void col2im_kernel(const T* col, ConvShape s, int64_t b0, int64_t c0, int64_t width,
                              int64_t col_rows, int64_t count, bool accumulate, T* grad_x) {
    int64_t in_size = volume(s.input);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        Position in = unravel3(i % in_size, s.input);
        int64_t plane = i / in_size, c = plane % s.in_channels, sample = plane / s.in_channels;
        const T* sample_col =
            col + (sample * col_rows + c * s.kernel[0] * s.kernel[1] * s.kernel[2]) * width;
        T sum = 0;
        for_each_source(in, s, [&](int64_t tap, int64_t o) {
            int64_t column = o - c0;  // the chunk holds output positions [c0, c0 + width)
            if (column >= 0 && column < width) sum += sample_col[tap * width + column];
        });
        T* out = grad_x + (b0 * s.in_channels) * in_size + i;
        *out = accumulate ? *out + sum : sum;
    }
}

// y[b, c, p] = bias[c] (or += when `add`); `plane_size` positions per (b, c).
template <typename T>
__global__ void channel_bias_kernel(T* y, const T* bias, int64_t channels, int64_t plane_size,
                                    int64_t count, bool add) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        T value = bias[(i / plane_size) % channels];
        y[i] = add ? y[i] + value : value;
    }
}

// grad_bias[c] = sum of grad_y over batch and positions: one block per channel, a block sum.
template <typename T>
__global__ void bias_grad_kernel(const T* grad_y, int64_t batch, int64_t channels,
                                 int64_t plane_size, T* grad_bias) {
    __shared__ T scratch[kWarpSize];
    int64_t c = blockIdx.x;
    T sum = 0;
    for (int64_t j = threadIdx.x; j < batch * plane_size; j += blockDim.x)
        sum += grad_y[((j / plane_size) * channels + c) * plane_size + j % plane_size];
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) grad_bias[c] = sum;
}

// target[i] (= or +=) sum over s < parts of partial[s * size + i], s in order.
template <typename T>
__global__ void sum_partials_kernel(const T* partial, int64_t parts, int64_t size, bool accumulate,
                                    T* target) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
         i += int64_t(gridDim.x) * blockDim.x) {
        T sum = accumulate ? target[i] : T(0);
        for (int64_t part = 0; part < parts; ++part) sum += partial[part * size + i];
        target[i] = sum;
    }
}

template <typename T>
void launch_im2col(const T* x, const ConvShape& s, const Plan& p, int64_t b0, int64_t samples,
                   int64_t c0, int64_t width, T* col) {
    int64_t count = samples * p.col_rows * width;
    im2col_kernel<T><<<grid_for(count), 256>>>(x, s, b0, c0, width, p.col_rows, count, col);
    LUMEN_CUDA_CHECK_LAUNCH("im2col_kernel");
}

// ---- forward: y[b, g] (out_group, columns) = W[g] (out_group, rows) @ col[b, g] ----

template <typename T>
void forward_typed(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    Plan p = make_plan(s, sizeof(T));
    int64_t y_count = s.batch * s.out_channels * p.columns;
    if (bias != nullptr) {  // y starts as the bias and the GEMMs add to it (beta = 1)
        channel_bias_kernel<T>
            <<<grid_for(y_count), 256>>>(y, bias, s.out_channels, p.columns, y_count, false);
        LUMEN_CUDA_CHECK_LAUNCH("channel_bias_kernel");
    }
    if (p.rows == 0) {  // no input channels: y is the bias alone
        if (bias == nullptr)
            LUMEN_CUDA_CHECK(cudaMemsetAsync(y, 0, size_t(y_count) * sizeof(T), 0));
        return;
    }
    Scratch col(p.pointwise ? 0 : size_t(p.samples * p.col_rows * p.chunk_columns) * sizeof(T));
    T* col_data = static_cast<T*>(col.data());
    double beta = bias != nullptr ? 1.0 : 0.0;
    for_each_chunk(s, p, [&](int64_t b0, int64_t samples, int64_t c0, int64_t width) {
        if (!p.pointwise) launch_im2col(x, s, p, b0, samples, c0, width, col_data);
        for (int64_t g = 0; g < s.groups; ++g) {
            GemmMatrix w{weight + g * p.out_group * p.rows, p.rows, false, 0};
            GemmMatrix in =
                p.pointwise
                    ? GemmMatrix{x + (b0 * s.in_channels + g * p.in_group) * p.columns, p.columns,
                                 false, s.in_channels * p.columns}
                    : GemmMatrix{col_data + g * p.rows * width, width, false, p.col_rows * width};
            GemmOutput out{y + (b0 * s.out_channels + g * p.out_group) * p.columns + c0,
                           p.out_group, width, p.columns, s.out_channels * p.columns};
            gemm(dtype_of<T>(), w, in, out, p.rows, beta, samples, false);
        }
    });
}

// ---- grad_x: col[b, g] (rows, columns) = W[g]^T @ grad_y[b, g], then col2im ----

template <typename T>
void backward_input_typed(const T* grad_y, const T* weight, T* grad_x, const ConvShape& s) {
    Plan p = make_plan(s, sizeof(T));
    int64_t in_size = s.input_size();
    // No output channels, or no output positions (a transposed convolution of an input with
    // an empty spatial dim): nothing flows back, and the chunk loop below would not run.
    if (p.out_group == 0 || p.columns == 0) {
        size_t bytes = size_t(s.batch * s.in_channels * in_size) * sizeof(T);
        LUMEN_CUDA_CHECK(cudaMemsetAsync(grad_x, 0, bytes, 0));
        return;
    }
    Scratch col(p.pointwise ? 0 : size_t(p.samples * p.col_rows * p.chunk_columns) * sizeof(T));
    T* col_data = static_cast<T*>(col.data());
    for_each_chunk(s, p, [&](int64_t b0, int64_t samples, int64_t c0, int64_t width) {
        for (int64_t g = 0; g < s.groups; ++g) {
            // W[g]^T read in place: W[g] is its transpose, row-major with rows per row.
            GemmMatrix w{weight + g * p.out_group * p.rows, p.rows, true, 0};
            GemmMatrix gy{grad_y + (b0 * s.out_channels + g * p.out_group) * p.columns + c0,
                          p.columns, false, s.out_channels * p.columns};
            GemmOutput out =
                p.pointwise ? GemmOutput{grad_x + (b0 * s.in_channels + g * p.in_group) * in_size,
                                         p.rows, width, in_size, s.in_channels * in_size}
                            : GemmOutput{col_data + g * p.rows * width, p.rows, width, width,
                                         p.col_rows * width};
            gemm(dtype_of<T>(), w, gy, out, p.out_group, 0.0, samples, false);
        }
        if (p.pointwise) return;
        int64_t count = samples * s.in_channels * in_size;
        col2im_kernel<T><<<grid_for(count), 256>>>(col_data, s, b0, c0, width, p.col_rows, count,
                                                   c0 > 0, grad_x);
        LUMEN_CUDA_CHECK_LAUNCH("col2im_kernel");
    });
}

// ---- grad_weight: sum over samples of grad_y[b, g] (out_group, columns) @ col[b, g]^T ----
// Up to `parts` samples run as one batched GEMM into per-sample partials, which are then
// summed in sample order into grad_weight; a single sample accumulates into it directly.

template <typename T>
void backward_weight_typed(const T* x, const T* grad_y, T* grad_weight, const ConvShape& s) {
    Plan p = make_plan(s, sizeof(T));
    int64_t weight_size = s.out_channels * p.rows;
    if (s.batch == 0 || p.columns == 0 || weight_size == 0) {
        LUMEN_CUDA_CHECK(cudaMemsetAsync(grad_weight, 0, size_t(weight_size) * sizeof(T), 0));
        return;
    }
    int64_t partial_bytes = column_bytes.load() / 4;
    int64_t parts = std::clamp<int64_t>(
        partial_bytes / std::max<int64_t>(1, weight_size * int64_t(sizeof(T))), 1, p.samples);
    Scratch col(p.pointwise ? 0 : size_t(p.samples * p.col_rows * p.chunk_columns) * sizeof(T));
    Scratch partial(parts > 1 ? size_t(parts * weight_size) * sizeof(T) : 0);
    T* col_data = static_cast<T*>(col.data());
    T* partial_data = static_cast<T*>(partial.data());
    bool accumulate = false;  // grad_weight holds a partial sum already
    for_each_chunk(s, p, [&](int64_t b0, int64_t samples, int64_t c0, int64_t width) {
        if (!p.pointwise) launch_im2col(x, s, p, b0, samples, c0, width, col_data);
        for (int64_t first = 0; first < samples; first += parts) {
            int64_t count = std::min(parts, samples - first);
            bool direct = count == 1;
            T* target = direct ? grad_weight : partial_data;
            for (int64_t g = 0; g < s.groups; ++g) {
                int64_t b = b0 + first;
                GemmMatrix gy{grad_y + (b * s.out_channels + g * p.out_group) * p.columns + c0,
                              p.columns, false, s.out_channels * p.columns};
                // col^T (width, rows) read in place from col (rows, width).
                GemmMatrix in =
                    p.pointwise ? GemmMatrix{x + (b * s.in_channels + g * p.in_group) * p.columns,
                                             p.columns, true, s.in_channels * p.columns}
                                : GemmMatrix{col_data + (first * p.col_rows + g * p.rows) * width,
                                             width, true, p.col_rows * width};
                GemmOutput out{target + g * p.out_group * p.rows, p.out_group, p.rows, p.rows,
                               weight_size};
                gemm(dtype_of<T>(), gy, in, out, width, direct && accumulate ? 1.0 : 0.0, count,
                     false);
            }
            if (!direct) {
                sum_partials_kernel<T><<<grid_for(weight_size), 256>>>(
                    partial_data, count, weight_size, accumulate, grad_weight);
                LUMEN_CUDA_CHECK_LAUNCH("sum_partials_kernel");
            }
            accumulate = true;
        }
    });
}

}  // namespace

int64_t set_conv_scratch_limit(int64_t bytes) {
    return column_bytes.exchange(std::max<int64_t>(bytes, 1));
}

void conv_forward(const StridedView& x, const StridedView& weight, const StridedView& bias,
                  const StridedView& y, const ConvShape& shape) {
    if (shape.is_depthwise()) return depthwise_conv_forward(x, weight, bias, y, shape);
    if (y.numel() == 0) return;
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        forward_typed<T>(x.ptr<const T>(), weight.ptr<const T>(),
                         bias.data ? bias.ptr<const T>() : nullptr, y.ptr<T>(), shape);
    });
}

void conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                         const StridedView& grad_x, const ConvShape& shape) {
    if (shape.is_depthwise()) return depthwise_conv_backward_input(grad_y, weight, grad_x, shape);
    if (grad_x.numel() == 0) return;
    dispatch_floating(grad_x.dtype, "conv", [&]<typename T>() {
        backward_input_typed<T>(grad_y.ptr<const T>(), weight.ptr<const T>(), grad_x.ptr<T>(),
                                shape);
    });
}

void conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                          const StridedView& grad_weight, const ConvShape& shape) {
    if (shape.is_depthwise()) return depthwise_conv_backward_weight(x, grad_y, grad_weight, shape);
    if (grad_weight.numel() == 0) return;
    dispatch_floating(grad_weight.dtype, "conv", [&]<typename T>() {
        backward_weight_typed<T>(x.ptr<const T>(), grad_y.ptr<const T>(), grad_weight.ptr<T>(),
                                 shape);
    });
}

// Shapes: grad_y (B, C, S...) -> grad_bias (C).
void conv_backward_bias(const StridedView& grad_y, const StridedView& grad_bias) {
    int64_t batch = grad_y.shape[0], channels = grad_y.shape[1];
    if (channels == 0) return;
    int64_t size = batch == 0 ? 0 : grad_y.numel() / (batch * channels);
    dispatch_floating(grad_bias.dtype, "conv", [&]<typename T>() {
        bias_grad_kernel<T><<<unsigned(channels), 256>>>(grad_y.ptr<const T>(), batch, channels,
                                                         size, grad_bias.ptr<T>());
    });
    LUMEN_CUDA_CHECK_LAUNCH("bias_grad_kernel");
}

void conv_add_bias(const StridedView& y, const StridedView& bias) {
    int64_t count = y.numel(), channels = y.shape[1];
    if (count == 0) return;
    int64_t size = count / (y.shape[0] * channels);
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        channel_bias_kernel<T><<<grid_for(count), 256>>>(y.ptr<T>(), bias.ptr<const T>(), channels,
                                                         size, count, true);
    });
    LUMEN_CUDA_CHECK_LAUNCH("channel_bias_kernel");
}

}  // namespace lumen::cuda
