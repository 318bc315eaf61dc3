// CUDA depthwise convolution (groups == in_channels == out_channels), forward and backward,
// as direct kernels: an im2col GEMM with one filter per group would copy K values per
// multiply-add. Fast path for 3x3 (2-D) and 3x3x3 (3-D) at stride 1: weights in registers,
// each thread slides down a column of kRows outputs so that every input row it loads serves
// up to three of them. Generic kernels cover any kernel, stride, padding and dilation (1-D
// Mamba causal k = 4, padding 3 included). grad_x is the adjoint as a gather (at stride 1 the
// forward with the kernel flipped); grad_w a per-channel reduction over batch and positions
// into per-block partials summed in a fixed order: no atomics, deterministic.
// Compiled but never run on a GPU (written without one).
#include <algorithm>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/conv_kernels.h"
#include "ops/cuda/conv_common.cuh"

namespace lumen::cuda {

namespace {

constexpr int kRows = 4;  // output rows per thread in the 3x3 fast path
constexpr int kThreads = 256;

// ---- forward ----

// x at (d, h, w) of one plane, zero outside.
template <typename T>
__device__ __forceinline__ T load_or_zero(const T* plane, const ConvShape& s, int64_t d, int64_t h,
                                          int64_t w) {
    bool inside = d >= 0 && d < s.input[0] && h >= 0 && h < s.input[1] && w >= 0 && w < s.input[2];
    return inside ? plane[(d * s.input[1] + h) * s.input[2] + w] : T(0);
}

// KD x 3 x 3 kernel (KD = 1: 2-D), stride 1, dilation 1, any padding. One thread per (plane,
// od, group of kRows output rows, ow): adjacent threads take adjacent ow (coalesced). Input
// row r of the window feeds output rows j with kh = r - j in [0, 3). `Flip` reverses the
// taps (the adjoint at stride 1, see depthwise_conv_backward_input).
template <typename T, int KD, bool Flip>
__global__ void depthwise3x3_kernel(const T* x, const T* weight, const T* bias, T* y, ConvShape s,
                                    int64_t count) {
    constexpr int kTaps = KD * 9;
    int64_t row_groups = (s.output[1] + kRows - 1) / kRows;
    int64_t in_size = volume(s.input), out_size = volume(s.output);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t ow = i % s.output[2], rest = i / s.output[2];
        int64_t oh0 = (rest % row_groups) * kRows;
        rest /= row_groups;
        int64_t od = rest % s.output[0], plane = rest / s.output[0];
        int64_t c = plane % s.in_channels;
        T w[kTaps];
#pragma unroll
        for (int k = 0; k < kTaps; ++k) w[k] = weight[c * kTaps + (Flip ? kTaps - 1 - k : k)];
        T out[kRows];
        T start = bias != nullptr ? bias[c] : T(0);
#pragma unroll
        for (int j = 0; j < kRows; ++j) out[j] = start;
        const T* xp = x + plane * in_size;
        int64_t iw = ow - s.padding[2];
        bool col_ok[3];  // the three input columns inside the input, checked once
#pragma unroll
        for (int k = 0; k < 3; ++k) col_ok[k] = iw + k >= 0 && iw + k < s.input[2];
#pragma unroll
        for (int kd = 0; kd < KD; ++kd) {
            int64_t id = od - s.padding[0] + kd;
            bool depth_ok = id >= 0 && id < s.input[0];
#pragma unroll
            for (int r = 0; r < kRows + 2; ++r) {
                int64_t ih = oh0 - s.padding[1] + r;
                bool row_ok = depth_ok && ih >= 0 && ih < s.input[1];
                int64_t at = (id * s.input[1] + ih) * s.input[2] + iw;  // read only when inside
                T v0 = row_ok && col_ok[0] ? xp[at] : T(0);
                T v1 = row_ok && col_ok[1] ? xp[at + 1] : T(0);
                T v2 = row_ok && col_ok[2] ? xp[at + 2] : T(0);
#pragma unroll
                for (int j = 0; j < kRows; ++j) {
                    int kh = r - j;
                    if (kh < 0 || kh > 2) continue;  // resolved at compile time
                    const T* row = w + (kd * 3 + kh) * 3;
                    out[j] += row[0] * v0 + row[1] * v1 + row[2] * v2;
                }
            }
        }
        T* yp = y + plane * out_size + (od * s.output[1] + oh0) * s.output[2] + ow;
#pragma unroll
        for (int j = 0; j < kRows; ++j)
            if (oh0 + j < s.output[1]) yp[j * s.output[2]] = out[j];
    }
}

// Any kernel, stride, padding and dilation: one thread per output element.
template <typename T>
__global__ void depthwise_forward_kernel(const T* x, const T* weight, const T* bias, T* y,
                                         ConvShape s, int64_t count) {
    int64_t in_size = volume(s.input), out_size = volume(s.output), taps = volume(s.kernel);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t plane = i / out_size, c = plane % s.in_channels;
        Position o = unravel3(i % out_size, s.output);
        const T* xp = x + plane * in_size;
        const T* w = weight + c * taps;
        T sum = bias != nullptr ? bias[c] : T(0);
        for (int64_t kd = 0; kd < s.kernel[0]; ++kd) {
            int64_t id = o.d * s.stride[0] - s.padding[0] + kd * s.dilation[0];
            if (id < 0 || id >= s.input[0]) continue;
            for (int64_t kh = 0; kh < s.kernel[1]; ++kh) {
                int64_t ih = o.h * s.stride[1] - s.padding[1] + kh * s.dilation[1];
                if (ih < 0 || ih >= s.input[1]) continue;
                const T* x_row = xp + (id * s.input[1] + ih) * s.input[2];
                const T* w_row = w + (kd * s.kernel[1] + kh) * s.kernel[2];
                for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
                    int64_t iw = o.w * s.stride[2] - s.padding[2] + kw * s.dilation[2];
                    if (iw >= 0 && iw < s.input[2]) sum += w_row[kw] * x_row[iw];
                }
            }
        }
        y[i] = sum;
    }
}

// ---- grad_x: the adjoint as a gather ----

// grad_x[i] = sum over taps k and outputs o with o * stride - padding + k * dilation = i of
// w[k] grad_y[o]: one thread per grad_x element.
template <typename T>
__global__ void depthwise_backward_input_kernel(const T* grad_y, const T* weight, T* grad_x,
                                                ConvShape s, int64_t count) {
    int64_t in_size = volume(s.input), out_size = volume(s.output), taps = volume(s.kernel);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t plane = i / in_size, c = plane % s.in_channels;
        Position in = unravel3(i % in_size, s.input);
        const T* gy = grad_y + plane * out_size;
        const T* w = weight + c * taps;
        T sum = 0;
        for_each_source(in, s, [&](int64_t tap, int64_t o) { sum += w[tap] * gy[o]; });
        grad_x[i] = sum;
    }
}

// ---- grad_w: per-channel reductions ----

// The reduction of channel c over batch * output positions is cut into `segments` blocks;
// block (c, segment) handles positions j = segment, segment + segments, ... in chunks of the
// block size, so that its threads read adjacent positions (coalesced).
struct Segments {
    int64_t count;  // per channel
    int64_t total;  // batch * output positions
};

// grad_y[b, c, o] and x's window position for element j of channel c's reduction.
struct Element {
    int64_t gy_offset, x_plane;
    Position o;
};
__device__ __forceinline__ Element element_of(int64_t j, int64_t c, const ConvShape& s,
                                              int64_t out_size) {
    int64_t b = j / out_size, o = j % out_size, plane = b * s.in_channels + c;
    return {plane * out_size + o, plane, unravel3(o, s.output)};
}

// Kernel sizes KD x KH x KW known at compile time (3x3, 3x3x3): every tap's sum in
// registers, one pass over grad_y and x. partial[(c * segments + segment) * taps + tap].
template <typename T, int KD, int KH, int KW>
__global__ void depthwise_weight_taps_kernel(const T* x, const T* grad_y, ConvShape s, Segments seg,
                                             T* partial) {
    constexpr int kTaps = KD * KH * KW;
    __shared__ T scratch[kWarpSize];
    int64_t c = blockIdx.x / seg.count, segment = blockIdx.x % seg.count;
    int64_t in_size = volume(s.input), out_size = volume(s.output);
    T sums[kTaps] = {};
    for (int64_t base = segment * blockDim.x; base < seg.total; base += seg.count * blockDim.x) {
        int64_t j = base + threadIdx.x;
        if (j >= seg.total) break;
        Element e = element_of(j, c, s, out_size);
        T g = grad_y[e.gy_offset];
        const T* xp = x + e.x_plane * in_size;
#pragma unroll
        for (int kd = 0; kd < KD; ++kd)
#pragma unroll
            for (int kh = 0; kh < KH; ++kh)
#pragma unroll
                for (int kw = 0; kw < KW; ++kw)
                    sums[(kd * KH + kh) * KW + kw] +=
                        g * load_or_zero(xp, s,
                                         e.o.d * s.stride[0] - s.padding[0] + kd * s.dilation[0],
                                         e.o.h * s.stride[1] - s.padding[1] + kh * s.dilation[1],
                                         e.o.w * s.stride[2] - s.padding[2] + kw * s.dilation[2]);
    }
    T* out = partial + blockIdx.x * int64_t(kTaps);
#pragma unroll
    for (int k = 0; k < kTaps; ++k) {
        T total = block_sum(sums[k], scratch);  // every thread takes part: no early return
        if (threadIdx.x == 0) out[k] = total;
    }
}

// Any kernel: block (c, tap, segment) sums one tap. partial as above.
template <typename T>
__global__ void depthwise_weight_tap_kernel(const T* x, const T* grad_y, ConvShape s, Segments seg,
                                            T* partial) {
    __shared__ T scratch[kWarpSize];
    int64_t taps = volume(s.kernel);
    int64_t segment = blockIdx.x % seg.count, rest = blockIdx.x / seg.count;
    int64_t tap = rest % taps, c = rest / taps;
    Position k = unravel3(tap, s.kernel);
    int64_t in_size = volume(s.input), out_size = volume(s.output);
    T sum = 0;
    for (int64_t j = segment * blockDim.x + threadIdx.x; j < seg.total;
         j += seg.count * blockDim.x) {
        Element e = element_of(j, c, s, out_size);
        sum += grad_y[e.gy_offset] *
               load_or_zero(x + e.x_plane * in_size, s,
                            e.o.d * s.stride[0] - s.padding[0] + k.d * s.dilation[0],
                            e.o.h * s.stride[1] - s.padding[1] + k.h * s.dilation[1],
                            e.o.w * s.stride[2] - s.padding[2] + k.w * s.dilation[2]);
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) partial[(c * seg.count + segment) * taps + tap] = sum;
}

// grad_w[c, tap] = sum over segments, in order, of the partials.
template <typename T>
__global__ void sum_segments_kernel(const T* partial, int64_t channels, int64_t segments,
                                    int64_t taps, T* grad_weight) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < channels * taps;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t c = i / taps, tap = i % taps;
        T sum = 0;
        for (int64_t segment = 0; segment < segments; ++segment)
            sum += partial[(c * segments + segment) * taps + tap];
        grad_weight[i] = sum;
    }
}

// ---- launchers ----

// Whether the KD x 3 x 3 sliding kernel applies: 3x3 (2-D) or 3x3x3, stride 1, dilation 1.
bool is_3x3_unit(const ConvShape& s) {
    bool unit = s.kernel[1] == 3 && s.kernel[2] == 3 && (s.kernel[0] == 1 || s.kernel[0] == 3);
    for (int d = 0; d < 3; ++d)
        unit &= s.stride[d] == 1 && (s.kernel[d] == 1 || s.dilation[d] == 1);
    return unit;
}

template <typename T, bool Flip>
void launch_3x3(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    int64_t planes = s.batch * s.in_channels;
    int64_t count = planes * s.output[0] * ((s.output[1] + kRows - 1) / kRows) * s.output[2];
    if (s.kernel[0] == 3) {
        depthwise3x3_kernel<T, 3, Flip>
            <<<grid_for(count), kThreads>>>(x, weight, bias, y, s, count);
    } else {
        depthwise3x3_kernel<T, 1, Flip>
            <<<grid_for(count), kThreads>>>(x, weight, bias, y, s, count);
    }
    LUMEN_CUDA_CHECK_LAUNCH("depthwise3x3_kernel");
}

template <typename T>
void forward_typed(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
    if (is_3x3_unit(s)) return launch_3x3<T, false>(x, weight, bias, y, s);
    int64_t count = s.batch * s.in_channels * s.output_size();
    depthwise_forward_kernel<T><<<grid_for(count), kThreads>>>(x, weight, bias, y, s, count);
    LUMEN_CUDA_CHECK_LAUNCH("depthwise_forward_kernel");
}

// At stride 1 the adjoint is a forward pass over grad_y with the kernel flipped and padding
// (kernel - 1) dilation - padding (negative padding crops): the fast path applies to it.
template <typename T>
void backward_input_typed(const T* grad_y, const T* weight, T* grad_x, const ConvShape& s) {
    if (is_3x3_unit(s)) {
        ConvShape flipped = s;
        for (int d = 0; d < 3; ++d) {
            flipped.input[d] = s.output[d];
            flipped.output[d] = s.input[d];
            flipped.padding[d] = (s.kernel[d] - 1) * s.dilation[d] - s.padding[d];
        }
        return launch_3x3<T, true>(grad_y, weight, nullptr, grad_x, flipped);
    }
    int64_t count = s.batch * s.in_channels * s.input_size();
    depthwise_backward_input_kernel<T>
        <<<grid_for(count), kThreads>>>(grad_y, weight, grad_x, s, count);
    LUMEN_CUDA_CHECK_LAUNCH("depthwise_backward_input_kernel");
}

// Segments per channel: enough blocks to fill the GPU (about 1024 in all), each reducing at
// least a few thousand elements so that the partials stay small.
Segments make_segments(const ConvShape& s, int64_t tap_blocks) {
    int64_t total = s.batch * s.output_size();
    int64_t wanted = (1024 + s.in_channels * tap_blocks - 1) / (s.in_channels * tap_blocks);
    int64_t most = std::max<int64_t>(1, total / 4096);
    return {std::clamp<int64_t>(wanted, 1, most), total};
}

template <typename T>
void backward_weight_typed(const T* x, const T* grad_y, T* grad_weight, const ConvShape& s) {
    int64_t taps = s.kernel_size(), channels = s.in_channels;
    bool fixed = s.kernel[1] == 3 && s.kernel[2] == 3 && (s.kernel[0] == 1 || s.kernel[0] == 3);
    Segments seg = make_segments(s, fixed ? 1 : taps);
    Scratch partial(size_t(channels * seg.count * taps) * sizeof(T));
    T* partial_data = static_cast<T*>(partial.data());
    if (fixed) {
        unsigned blocks = unsigned(channels * seg.count);
        if (s.kernel[0] == 3) {
            depthwise_weight_taps_kernel<T, 3, 3, 3>
                <<<blocks, kThreads>>>(x, grad_y, s, seg, partial_data);
        } else {
            depthwise_weight_taps_kernel<T, 1, 3, 3>
                <<<blocks, kThreads>>>(x, grad_y, s, seg, partial_data);
        }
        LUMEN_CUDA_CHECK_LAUNCH("depthwise_weight_taps_kernel");
    } else {
        unsigned blocks = unsigned(channels * taps * seg.count);
        depthwise_weight_tap_kernel<T><<<blocks, kThreads>>>(x, grad_y, s, seg, partial_data);
        LUMEN_CUDA_CHECK_LAUNCH("depthwise_weight_tap_kernel");
    }
    sum_segments_kernel<T><<<grid_for(channels * taps), kThreads>>>(partial_data, channels,
                                                                    seg.count, taps, grad_weight);
    LUMEN_CUDA_CHECK_LAUNCH("sum_segments_kernel");
}

}  // namespace

void depthwise_conv_forward(const StridedView& x, const StridedView& weight,
                            const StridedView& bias, const StridedView& y, const ConvShape& shape) {
    if (y.numel() == 0) return;
    dispatch_floating(y.dtype, "conv", [&]<typename T>() {
        forward_typed<T>(x.ptr<const T>(), weight.ptr<const T>(),
                         bias.data ? bias.ptr<const T>() : nullptr, y.ptr<T>(), shape);
    });
}

void depthwise_conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                                   const StridedView& grad_x, const ConvShape& shape) {
    if (grad_x.numel() == 0) return;
    dispatch_floating(grad_x.dtype, "conv", [&]<typename T>() {
        backward_input_typed<T>(grad_y.ptr<const T>(), weight.ptr<const T>(), grad_x.ptr<T>(),
                                shape);
    });
}

void depthwise_conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                    const StridedView& grad_weight, const ConvShape& shape) {
    if (grad_weight.numel() == 0) return;
    dispatch_floating(grad_weight.dtype, "conv", [&]<typename T>() {
        backward_weight_typed<T>(x.ptr<const T>(), grad_y.ptr<const T>(), grad_weight.ptr<T>(),
                                 shape);
    });
}

}  // namespace lumen::cuda
