// The up-sampling step and the full-resolution stem of PVT-GDLA (Zheng et al. 2026, Sec. 4.3.2;
// official modules/upsample.py, modules/resblk.py): a stride-2 transposed convolution and a
// two-conv residual block with batch norm.
#pragma once

#include <memory>
#include <string>

#include "nn/conv.h"
#include "nn/norm.h"

namespace lumen::nn::gdla {

// up = ConvTranspose2d(in_chs, out_chs, ks, stride 2, padding ks / 2, output_padding 1, no
// bias): (B, in_chs, H, W) -> (B, out_chs, 2H, 2W) exactly (ks odd: 3, or 5 in the Table 4
// ablation). Parameter up.weight (in_chs, out_chs, ks, ks). Throws [Upsample] for an even or
// non-positive ks; [ConvTranspose2d] for a wrong input.
class Upsample : public Module {
  public:
    Upsample(int64_t in_chs, int64_t out_chs, int64_t ks = 3);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<ConvTranspose2d> up;
};

// y = ReLU(norm2(conv2(ReLU(norm1(conv1 x)))) + s), s = norm3(conv3 x) if in_chs != out_chs
// else x. conv1 3x3 in -> in, conv2 3x3 in -> out (pad 1), conv3 1x1 in -> out, no biases;
// BatchNorm2d eps norm_eps, momentum 0.1 (batch statistics in training, running ones in eval).
// Parameters: conv{1,2,3}.weight, norm{1,2,3}.{weight, bias}; buffers norm*.running_mean,
// running_var, num_batches_tracked. Shapes: (B, in, H, W) -> (B, out, H, W).
// Throws [ResBlk] for non-positive channel counts; the layers throw for a wrong input.
class ResBlk : public Module {
  public:
    ResBlk(int64_t in_chs, int64_t out_chs, double norm_eps = 1e-5);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    std::shared_ptr<Conv2d> conv1, conv2, conv3;  // conv3/norm3 null for in == out
    std::shared_ptr<BatchNorm2d> norm1, norm2, norm3;
    int64_t in_chs, out_chs;
};

}  // namespace lumen::nn::gdla
