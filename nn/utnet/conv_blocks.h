// UTNet's convolutional pieces (Gao et al. 2021, Sec. 2.4; official yhygao/UTNet
// conv_trans_utils.py / unet_utils.py): the pre-activation residual block and the
// pure-convolution down/up stages. Its attention's depthwise-separable projection is
// nn/conv.h's DepthwiseSeparableConv, the transformer blocks and stages are in
// nn/utnet/trans_blocks.h. All maps are NCHW, ReLU everywhere.
#pragma once

#include <memory>
#include <vector>

#include "nn/container.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/norm.h"

namespace lumen::nn::utnet {

// Pre-activation residual block:
//   y = conv2(relu(bn2(conv1(relu(bn1(x)))))) + shortcut(x)
// conv1 3x3 stride s, conv2 3x3 (no biases); shortcut = identity when s == 1 and
// inplanes == planes, else shortcut.0 BN -> ReLU -> shortcut.2 1x1 conv stride s (no bias).
// Shapes: x (B, inplanes, H, W) -> (B, planes, ceil(H / s), ceil(W / s)).
// Throws [BasicBlock] for non-positive sizes, [BatchNorm2d] for a wrong input. checkpointed:
// the forward runs through nn::checkpoint (recomputed in backward; the model sets it).
class BasicBlock : public Module {
  public:
    BasicBlock(int64_t inplanes, int64_t planes, int64_t stride = 1);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<BatchNorm2d> bn1, bn2;
    std::shared_ptr<Conv2d> conv1, conv2;
    std::shared_ptr<Sequential> shortcut;  // null for the identity shortcut (no parameters)
    bool checkpointed = false;
};

// Encoder stage without transformer (official `down_block`): conv.0 MaxPool2d(2) (or, with
// pool = false, a stride-2 conv.0 BasicBlock), conv.1 BasicBlock(in, out), then
// num_block - 1 further BasicBlock(out, out). Shapes: (B, in, H, W) -> (B, out, H/2, W/2).
class DownBlock : public Module {
  public:
    DownBlock(int64_t in_ch, int64_t out_ch, int64_t num_block, bool pool = true);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<Sequential> conv;
};

// A decoder stage: y = stage(x1 low-res feature, x2 high-res skip). UpBlock and UpBlockTrans
// (nn/utnet/trans_blocks.h) implement it, so UTNet picks either per level by config.
class UpStage : public Module {
  public:
    using Module::Module;
    virtual Tensor forward(const Tensor& x1, const Tensor& x2) = 0;
    using Module::forward;
};

// Decoder stage without transformer (official `up_block`): x1 (low-res) is resized by a
// factor 2 (bilinear, align_corners) and projected by conv_ch (1x1, bias), then
//   y = conv(cat([x2, conv_ch(up(x1))], channels))      (the skip x2 FIRST)
// with conv.0 BasicBlock(2 out, out) and num_block - 1 further BasicBlock(out, out).
// Shapes: x1 (B, in, h, w), x2 (B, out, 2h, 2w) -> (B, out, 2h, 2w).
// Throws [UpBlock] when x2 is not (B, out, 2h, 2w).
class UpBlock : public UpStage {
  public:
    UpBlock(int64_t in_ch, int64_t out_ch, int64_t num_block = 2);
    Tensor forward(const Tensor& x1, const Tensor& x2) override;
    using UpStage::forward;
    std::shared_ptr<Conv2d> conv_ch;
    std::shared_ptr<Sequential> conv;
    int64_t out_ch;
};

// Throws [<who>] unless x is a 4-D map (B, channels, H, W).
void check_map(const char* who, const char* name, const Tensor& x, int64_t channels);

}  // namespace lumen::nn::utnet
