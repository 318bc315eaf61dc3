// Internal: the CPU and CUDA kernels of convolution and transposed convolution. Every problem
// is seen as 3-D (1-D and 2-D convolutions have leading spatial dims of size 1), on contiguous
// NC(D)HW tensors. A transposed convolution is the adjoint of a convolution, so it runs the
// same three kernels with input and output swapped (ops/conv.cpp arranges that).
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// One convolution x (batch, in_channels, input...) -> y (batch, out_channels, output...) with
// weight (out_channels, in_channels / groups, kernel...). Spatial arrays are (D, H, W).
// `padding` is the padding before each dim (zeros); the padding after it is implied by
// `output` (asymmetric "same" padding needs no more). Output position o reads input positions
// o * stride - padding + k * dilation for k < kernel.
struct ConvShape {
    int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
    int64_t input[3] = {1, 1, 1}, output[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
    int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};

    int64_t input_size() const { return input[0] * input[1] * input[2]; }
    int64_t output_size() const { return output[0] * output[1] * output[2]; }
    int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
    // groups == in_channels == out_channels: each channel is convolved with its own filter.
    bool is_depthwise() const { return groups == in_channels && groups == out_channels; }
};

namespace cpu {

// y = conv(x, weight) + bias (bias.data == nullptr for none). All views contiguous, one
// float dtype. Depthwise problems run direct loops, the others im2col + GEMM.
void conv_forward(const StridedView& x, const StridedView& weight, const StridedView& bias,
                  const StridedView& y, const ConvShape& shape);

// grad_x = conv^T(grad_y, weight): every grad_y element scattered back through the kernel
// taps (GEMM + col2im). Overwrites grad_x. Also the forward of transposed convolution.
void conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                         const StridedView& grad_x, const ConvShape& shape);

// grad_weight = sum over the batch of grad_y (x) im2col(x)^T. Overwrites grad_weight.
void conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                          const StridedView& grad_weight, const ConvShape& shape);

// grad_bias[c] = sum of grad_y over the batch and every spatial position of channel c.
// grad_y (batch, channels, spatial...) contiguous; grad_bias (channels). Overwrites.
void conv_backward_bias(const StridedView& grad_y, const StridedView& grad_bias);

// Adds bias[c] to every element of channel c of y (batch, channels, spatial...), contiguous.
void conv_add_bias(const StridedView& y, const StridedView& bias);

// The direct dense kernels of ops/cpu/conv_direct.cpp, which conv_forward,
// conv_backward_input and conv_backward_weight use when conv_direct_applies (for float32). The
// kernels handle stride 1, dilation 1, one group, any kernel of 2 taps or more, any padding and a
// multiple of 32 channels written (grad_x writes the input channels), on an x86-64 machine with
// AVX-512; by default (ConvDirect::automatic) they run where they measured faster: 3-D kernels
// (27 taps or more) reading 8 channels or more, forward and grad_x up to 256 channels written
// along rows of 16 positions or more, grad_weight up to 64 output channels along rows of 32 or
// more, and the two gradients of 2-D 3x3 kernels up to 64 channels written along rows of 128
// or more. Pointers to contiguous tensors; grad_x is overwritten.
enum class ConvDirect { automatic, always, never };
enum class ConvPass { forward, input_gradient, weight_gradient };
void set_conv_direct(ConvDirect mode);  // tests: always, or never (im2col + GEMM everywhere)
ConvDirect conv_direct_mode();
bool conv_direct_applies(const ConvShape& shape, ConvPass pass);
void conv_direct_forward(const float* x, const float* weight, const float* bias, float* y,
                         const ConvShape& shape);
void conv_direct_backward_input(const float* grad_y, const float* weight, float* grad_x,
                                const ConvShape& shape);
void conv_direct_backward_weight(const float* x, const float* grad_y, float* grad_weight,
                                 const ConvShape& shape);

// The direct depthwise kernels behind the three above (shape.is_depthwise()), any kernel
// size, stride, padding and dilation; in ops/cpu/conv_rows.cpp.
void depthwise_conv_forward(const StridedView& x, const StridedView& weight,
                            const StridedView& bias, const StridedView& y, const ConvShape& shape);
void depthwise_conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                                   const StridedView& grad_x, const ConvShape& shape);
void depthwise_conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                    const StridedView& grad_weight, const ConvShape& shape);

// 3x3x3 and 3x3 convolutions at stride 1 by Winograd's F(2x2x2, 3x3x3) and F(2x2, 3x3)
// (ops/cpu/conv_winograd.cpp), the forward and the input gradient, which conv_forward and
// conv_backward_input use before the kernels above when conv_winograd_applies: one group,
// padding 0 to 2, any float dtype; by default 16 channels or more read and written along rows
// of 32 or more (3x3x3) or 64 or more (3x3). set_conv_winograd: never turns it off, always on
// for every such problem (tests).
void set_conv_winograd(ConvDirect mode);
bool conv_winograd_applies(const ConvShape& shape, ConvPass pass);
void conv_winograd_forward(const StridedView& x, const StridedView& weight, const StridedView& bias,
                           const StridedView& y, const ConvShape& shape);
void conv_winograd_backward_input(const StridedView& grad_y, const StridedView& weight,
                                  const StridedView& grad_x, const ConvShape& shape);

// Dense convolutions writing few channels (a segmentation head's classes), as direct loops over
// rows (ops/cpu/conv_rows.cpp), which conv_forward, conv_backward_input and
// conv_backward_weight use when few_channels_conv_applies and the AVX-512 kernels above do not:
// one group, stride 1, padding from 0 to (kernel - 1) * dilation, any dtype; by default 4 output
// channels or fewer (kFewChannels with 27 taps or more), 2 taps or more, rows of 16 outputs or
// more. ConvDirect::never turns them off too; always runs them for every such problem.
constexpr int64_t kFewChannels = 8;
bool few_channels_conv_applies(const ConvShape& shape, ConvPass pass);
void few_channels_conv_forward(const StridedView& x, const StridedView& weight,
                               const StridedView& bias, const StridedView& y,
                               const ConvShape& shape);
void few_channels_conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                                      const StridedView& grad_x, const ConvShape& shape);
void few_channels_conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                       const StridedView& grad_weight, const ConvShape& shape);

}  // namespace cpu

namespace cuda {

// The same eight kernels on the GPU, same arguments and semantics, float32 and float64
// (ops/cuda/conv.cu, ops/cuda/conv_depthwise.cu). Dense problems run im2col + cuBLAS GEMM over
// bounded chunks of the batch (grad_x by GEMM + a gathering col2im, grad_weight by per-sample
// GEMMs summed in a fixed order); depthwise ones direct kernels, with a fast path for 3x3 and
// 3x3x3 at stride 1. Deterministic: no atomics. Everything on the default stream.
LUMEN_CUDA_API void conv_forward(const StridedView& x, const StridedView& weight,
                                 const StridedView& bias, const StridedView& y,
                                 const ConvShape& shape);
LUMEN_CUDA_API void conv_backward_input(const StridedView& grad_y, const StridedView& weight,
                                        const StridedView& grad_x, const ConvShape& shape);
LUMEN_CUDA_API void conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                         const StridedView& grad_weight, const ConvShape& shape);
LUMEN_CUDA_API void conv_backward_bias(const StridedView& grad_y, const StridedView& grad_bias);
LUMEN_CUDA_API void conv_add_bias(const StridedView& y, const StridedView& bias);
LUMEN_CUDA_API void depthwise_conv_forward(const StridedView& x, const StridedView& weight,
                                           const StridedView& bias, const StridedView& y,
                                           const ConvShape& shape);
LUMEN_CUDA_API void depthwise_conv_backward_input(const StridedView& grad_y,
                                                  const StridedView& weight,
                                                  const StridedView& grad_x,
                                                  const ConvShape& shape);
LUMEN_CUDA_API void depthwise_conv_backward_weight(const StridedView& x, const StridedView& grad_y,
                                                   const StridedView& grad_weight,
                                                   const ConvShape& shape);

// The bound on the dense kernels' im2col buffer (default 256 MiB; the per-sample weight
// gradient partials get a quarter of it). Returns the previous value. The tests lower it so
// that small problems run the chunked paths (several chunks of samples, or of the output
// positions of one sample); at least one output position is always processed.
LUMEN_CUDA_API int64_t set_conv_scratch_limit(int64_t bytes);

}  // namespace cuda

}  // namespace lumen
