// Convolution layers (PyTorch's nn.Conv1d/2d/3d and nn.ConvTranspose2d/3d): parameters
// `weight` and `bias` with PyTorch's shapes and default initialisation; the math is in
// ops/conv.h. Also DepthwiseSeparableConv (a depthwise 3x3 then a pointwise 1x1). Options use
// designated initializers:
//   nn::Conv2d conv(3, 64, {3}, {.stride = {2}, .padding = {1}, .bias = false});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/int_list.h"
#include "nn/module.h"

namespace lumen::nn {

// Per-dim lists take one value for every dim or one per spatial dim.
struct ConvOptions {
    std::vector<int64_t> stride = {1};
    std::vector<int64_t> padding = {0};
    std::string padding_mode;  // "same" or "valid" instead of `padding` (not for transposed)
    std::vector<int64_t> dilation = {1};
    int64_t groups = 1;
    bool bias = true;
    std::vector<int64_t> output_padding = {0};  // transposed convolution only
};

// An nd-dimensional convolution (nd = 1, 2, 3), or its transpose. Shapes:
//   conv:       x (B, in, *spatial) -> (B, out, *spatial'); weight (out, in / groups, *kernel)
//   transposed: x (B, in, *spatial) -> (B, out, *spatial'); weight (in, out / groups, *kernel)
// bias (out). Unbatched inputs (no B) work as in PyTorch. Throws [<type>] for channel counts
// not divisible by groups or a kernel list of the wrong length.
class Conv : public Module {
  public:
    Conv(const char* type_name, int nd, bool transposed, int64_t in_channels, int64_t out_channels,
         const std::vector<int64_t>& kernel_size, ConvOptions options);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    Tensor weight, bias;
    int64_t in_channels, out_channels;
    std::vector<int64_t> kernel_size;
    ConvOptions options;

  private:
    int nd_;
    bool transposed_;
};

struct Conv1d : Conv {
    Conv1d(int64_t in, int64_t out, IntList kernel, ConvOptions o = {})
        : Conv("Conv1d", 1, false, in, out, kernel.values, std::move(o)) {}
};
struct Conv2d : Conv {
    Conv2d(int64_t in, int64_t out, IntList kernel, ConvOptions o = {})
        : Conv("Conv2d", 2, false, in, out, kernel.values, std::move(o)) {}
};
struct Conv3d : Conv {
    Conv3d(int64_t in, int64_t out, IntList kernel, ConvOptions o = {})
        : Conv("Conv3d", 3, false, in, out, kernel.values, std::move(o)) {}
};
struct ConvTranspose2d : Conv {
    ConvTranspose2d(int64_t in, int64_t out, IntList kernel, ConvOptions o = {})
        : Conv("ConvTranspose2d", 2, true, in, out, kernel.values, std::move(o)) {}
};
struct ConvTranspose3d : Conv {
    ConvTranspose3d(int64_t in, int64_t out, IntList kernel, ConvOptions o = {})
        : Conv("ConvTranspose3d", 3, true, in, out, kernel.values, std::move(o)) {}
};

// y = pointwise(depthwise(x)): a 3x3 depthwise conv (pad 1, groups = in, no bias) then a 1x1
// conv (no bias). Shapes: x (B, in, H, W) -> (B, out, H, W); depthwise.weight (in, 1, 3, 3),
// pointwise.weight (out, in, 1, 1). Throws [Conv2d] for a wrong channel count.
// (MobileNet's separable conv; UTNet's attention projects with it.)
class DepthwiseSeparableConv : public Module {
  public:
    DepthwiseSeparableConv(int64_t in_ch, int64_t out_ch);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<Conv2d> depthwise, pointwise;
};

}  // namespace lumen::nn
