// The MONAI 1.3.0 UNETR building blocks (as Hooper & Xue use them; dynunet_block.py,
// unetr_block.py): residual conv blocks with InstanceNorm (no affine) and LeakyReLU(0.01), the
// transposed-conv upsampling paths and the 1x1 output conv, 2-D or 3-D. Every conv sits in a
// `.conv` child, as MONAI's Convolution wrapper names it. The ViT head that wires them is
// models/context_vit.h.
#pragma once

#include <memory>

#include "nn/container.h"
#include "nn/conv.h"

namespace lumen::nn::context {

// MONAI Convolution: child `conv` = ConvNd(cin, cout, k, stride, padding (k - stride + 1) / 2)
// or, transposed, ConvTransposeNd(cin, cout, k, stride, padding 0) (weight (cin, cout, *k)).
// Bias only when asked (UnetOutBlock). Shapes: (B, cin, *S) -> (B, cout, *S').
class ConvLayer : public Module {
  public:
    ConvLayer(int nd, int64_t cin, int64_t cout, int64_t kernel, int64_t stride = 1,
              bool transposed = false, bool bias = false);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<Conv> conv;
};

// y = lrelu(IN(conv1(x))); y = IN(conv2(y)); r = IN(conv3(x)) if cin != cout else x;
// out = lrelu(y + r). conv1/conv2 k x k(x k), stride 1, zero pad (k - 1) / 2; conv3 1x1.
// Parameters conv1.conv.weight (cout, cin, *k), conv2.conv.weight, conv3.conv.weight
// (cout, cin, 1..) only when cin != cout; no biases. Shapes (B, cin, *S) -> (B, cout, *S).
// InstanceNorm: per (sample, channel) over S, biased variance, eps 1e-5.
class UnetResBlock : public Module {
  public:
    UnetResBlock(int nd, int64_t cin, int64_t cout, int64_t kernel = 3);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<ConvLayer> conv1, conv2, conv3;  // conv3 null when cin == cout
};

// MONAI UnetrBasicBlock with a residual block: `layer` = UnetResBlock(cin, cout, 3).
class UnetrBasicBlock : public Module {
  public:
    UnetrBasicBlock(int nd, int64_t cin, int64_t cout);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<UnetResBlock> layer;
};

// transp_conv_init = ConvTranspose(cin -> cout, kernel = stride = up), then num_layer x
// blocks.i = [ConvTranspose(cout -> cout, up, up) (".0"), UnetResBlock(cout, cout) (".1")]:
// upsampling by up^(num_layer + 1). Shapes (B, cin, *S) -> (B, cout, *S up^(num_layer+1)).
class UnetrPrUpBlock : public Module {
  public:
    UnetrPrUpBlock(int nd, int64_t cin, int64_t cout, int64_t num_layer, int64_t up);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<ConvLayer> transp_conv_init;
    std::shared_ptr<ModuleList<Sequential>> blocks;
};

// out = conv_block(concat[transp_conv(x), skip] on channels), transp_conv kernel = stride = up
// (up = 1: a 1x1 transposed conv), conv_block = UnetResBlock(2 cout, cout). Shapes: x
// (B, cin, *S), skip (B, cout, *S up) -> (B, cout, *S up). Throws [UnetrUpBlock] when skip
// does not fit.
class UnetrUpBlock : public Module {
  public:
    UnetrUpBlock(int nd, int64_t cin, int64_t cout, int64_t up);
    Tensor forward(const Tensor& x, const Tensor& skip);
    std::shared_ptr<ConvLayer> transp_conv;
    std::shared_ptr<UnetResBlock> conv_block;
};

// `conv.conv` = 1x1 ConvNd(cin -> cout) with bias.
class UnetOutBlock : public Module {
  public:
    UnetOutBlock(int nd, int64_t cin, int64_t cout);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<ConvLayer> conv;
};

}  // namespace lumen::nn::context
