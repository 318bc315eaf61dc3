// UTNet's convolutional blocks and stages, composed from conv, batch norm, relu, max pool,
// interpolate and cat; autograd flows through the ops.
#include "nn/utnet/conv_blocks.h"

#include "nn/activation.h"
#include "nn/checkpoint.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/pool.h"
#include "ops/shape.h"

namespace lumen::nn::utnet {

void check_map(const char* who, const char* name, const Tensor& x, int64_t channels) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == channels, who, "expects ", name, " of shape (B, ",
                channels, ", H, W), got ", x.shape());
}

BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride) : Module("BasicBlock") {
    LUMEN_CHECK(inplanes > 0 && planes > 0 && stride > 0, "BasicBlock",
                "inplanes, planes and stride must be positive, got ", inplanes, ", ", planes, ", ",
                stride);
    auto conv3x3 = [](int64_t in, int64_t out, int64_t s) {
        return make<Conv2d>(in, out, std::vector<int64_t>{3},
                            ConvOptions{.stride = {s}, .padding = {1}, .bias = false});
    };
    bn1 = register_module("bn1", make<BatchNorm2d>(inplanes));
    conv1 = register_module("conv1", conv3x3(inplanes, planes, stride));
    bn2 = register_module("bn2", make<BatchNorm2d>(planes));
    conv2 = register_module("conv2", conv3x3(planes, planes, 1));
    if (stride != 1 || inplanes != planes) {
        shortcut = register_module("shortcut", make<Sequential>());
        shortcut->push_back(make<BatchNorm2d>(inplanes));
        shortcut->push_back(make<ReLU>());
        shortcut->push_back(make<Conv2d>(inplanes, planes, std::vector<int64_t>{1},
                                         ConvOptions{.stride = {stride}, .bias = false}));
    }
}

Tensor BasicBlock::forward(const Tensor& x) {
    // Captures the layers, not `this`: a checkpointed block runs it again in backward.
    auto block = [bn1 = bn1, conv1 = conv1, bn2 = bn2, conv2 = conv2,
                  shortcut = shortcut](const std::vector<Tensor>& in) {
        Tensor out = conv1->forward(relu(bn1->forward(in[0])));
        out = conv2->forward(relu(bn2->forward(out)));
        return add(out, shortcut ? shortcut->forward(in[0]) : in[0]);
    };
    return checkpointed ? checkpoint(block, {x}, parameters()) : block({x});
}

DownBlock::DownBlock(int64_t in_ch, int64_t out_ch, int64_t num_block, bool pool)
    : Module("DownBlock") {
    LUMEN_CHECK(num_block > 0, "DownBlock", "num_block must be positive, got ", num_block);
    conv = register_module("conv", make<Sequential>());
    if (pool) {
        conv->push_back(make<MaxPool2d>(2));
        conv->push_back(make<BasicBlock>(in_ch, out_ch));
    } else {
        conv->push_back(make<BasicBlock>(in_ch, out_ch, 2));
    }
    for (int64_t i = 1; i < num_block; ++i) conv->push_back(make<BasicBlock>(out_ch, out_ch));
}

Tensor DownBlock::forward(const Tensor& x) { return conv->forward(x); }

UpBlock::UpBlock(int64_t in_ch, int64_t out, int64_t num_block) : UpStage("UpBlock"), out_ch(out) {
    LUMEN_CHECK(num_block > 0, "UpBlock", "num_block must be positive, got ", num_block);
    conv_ch = register_module("conv_ch", make<Conv2d>(in_ch, out, std::vector<int64_t>{1}));
    conv = register_module("conv", make<Sequential>());
    conv->push_back(make<BasicBlock>(2 * out, out));
    for (int64_t i = 1; i < num_block; ++i) conv->push_back(make<BasicBlock>(out, out));
}

Tensor UpBlock::forward(const Tensor& x1, const Tensor& x2) {
    check_map("UpBlock", "x1", x1, conv_ch->in_channels);
    check_map("UpBlock", "x2", x2, out_ch);
    LUMEN_CHECK(
        x2.size(0) == x1.size(0) && x2.size(2) == 2 * x1.size(2) && x2.size(3) == 2 * x1.size(3),
        "UpBlock", "the skip x2 must be twice the size of x1, got x1 ", x1.shape(), " and x2 ",
        x2.shape());
    Tensor up = interpolate(x1, {}, {2.0, 2.0}, "bilinear", true);
    return conv->forward(cat({x2, conv_ch->forward(up)}, 1));
}

}  // namespace lumen::nn::utnet
