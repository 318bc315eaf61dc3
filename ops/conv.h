// Convolution and transposed convolution over 1, 2 and 3 spatial dims, as torch.nn.functional:
// NC(D)HW layout, cross-correlation (no kernel flip), zero padding. Dense problems run im2col +
// GEMM, depthwise ones (groups == in == out channels) direct loops; kernels in
// ops/cpu/conv*.cpp and ops/cuda/conv*.cu. Inputs, weight and bias share one device.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/tensor.h"

namespace lumen {

// PyTorch's string padding: "valid" (no padding) or "same" (output size = input size, stride 1
// only; an odd total padding puts the extra element after, as PyTorch does). Converts from any
// string (conv2d(x, w, b, {1}, "same")) but not from a braced list, so {0} stays numeric.
struct ConvPadding {
    std::string mode;
    template <typename Text,
              typename = std::enable_if_t<std::is_convertible_v<const Text&, std::string_view>>>
    ConvPadding(const Text& text) : mode(std::string_view(text)) {}  // NOLINT: implicit
};

// y[b, o] = bias[o] + sum over the group's input channels c and taps k of
//   weight[o, c, k] * x[b, c, pos * stride - padding + k * dilation]   (zero outside x)
// Shapes: input (B, C_in, L) or unbatched (C_in, L); weight (C_out, C_in / groups, k);
// bias (C_out) or undefined for none -> (B, C_out, L_out) with
//   L_out = (L + 2 padding - dilation (k - 1) - 1) / stride + 1.
// stride, padding, dilation: one value for every spatial dim, or one per dim. float32/float64,
// all of one dtype; gradients for input, weight and bias. Throws [conv1d] for a wrong rank,
// dtype or channel count, groups not dividing the channels, a non-positive stride/dilation, a
// negative padding, or a dilated kernel larger than the padded input.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
// The same with padding "same" or "valid"; "same" with a stride > 1 throws, as in PyTorch.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);

// conv1d over two spatial dims. Shapes: input (B, C_in, H, W) or (C_in, H, W); weight
// (C_out, C_in / groups, kH, kW); bias (C_out) -> (B, C_out, H_out, W_out). Throws [conv2d].
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);

// conv1d over three spatial dims. Shapes: input (B, C_in, D, H, W) or (C_in, D, H, W); weight
// (C_out, C_in / groups, kD, kH, kW); bias (C_out) -> (B, C_out, D_out, H_out, W_out).
// Throws [conv3d].
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);

// Transposed convolution: the adjoint (gradient with respect to the input) of the convolution
// with the same weight, stride, padding and dilation, plus bias. Each input element scatters
// weight[c, o, k] * x[b, c, i] to output position i * stride - padding + k * dilation.
// Shapes: input (B, C_in, H, W) or (C_in, H, W); weight (C_in, C_out / groups, kH, kW); bias
// (C_out) -> (B, C_out, H_out, W_out) with
//   H_out = (H - 1) stride - 2 padding + dilation (kH - 1) + output_padding + 1.
// output_padding (< stride or < dilation) adds rows/columns at the end that only the bias
// reaches. Gradients for input, weight and bias. Throws [conv_transpose2d].
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const std::vector<int64_t>& stride = {1},
                        const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});

// conv_transpose2d over three spatial dims. Shapes: input (B, C_in, D, H, W) or unbatched;
// weight (C_in, C_out / groups, kD, kH, kW); bias (C_out). Throws [conv_transpose3d].
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const std::vector<int64_t>& stride = {1},
                        const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});

}  // namespace lumen
