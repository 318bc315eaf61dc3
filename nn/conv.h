// Convolution layers (PyTorch's nn.Conv1d/2d/3d and nn.ConvTranspose2d/3d): parameters
// `weight` and `bias` with PyTorch's shapes and default initialisation; the math is in
// ops/conv.h. Options use designated initializers:
//   nn::Conv2d conv(3, 64, {3}, {.stride = {2}, .padding = {1}, .bias = false});
#pragma once

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

}  // namespace lumen::nn
