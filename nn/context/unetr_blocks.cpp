// UNETR blocks (MONAI): convs, instance norm and leaky ReLU from the ops; autograd flows
// through them.
#include "nn/context/unetr_blocks.h"

#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/shape.h"

namespace lumen::nn::context {

namespace {

constexpr double kSlope = 0.01;  // MONAI's LeakyReLU negative slope in UNETR

Tensor inorm(const Tensor& x) { return instance_norm(x); }

std::shared_ptr<Conv> make_conv(int nd, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                                bool transposed, bool bias) {
    LUMEN_CHECK(nd == 2 || nd == 3, "ConvLayer", "spatial dims must be 2 or 3, got ", nd);
    ConvOptions o{.stride = {stride}, .bias = bias};
    std::vector<int64_t> kernel{k};
    if (transposed) {
        if (nd == 2) return make<ConvTranspose2d>(cin, cout, kernel, o);
        return make<ConvTranspose3d>(cin, cout, kernel, o);
    }
    o.padding = {(k - stride + 1) / 2};
    if (nd == 2) return make<Conv2d>(cin, cout, kernel, o);
    return make<Conv3d>(cin, cout, kernel, o);
}

}  // namespace

ConvLayer::ConvLayer(int nd, int64_t cin, int64_t cout, int64_t kernel, int64_t stride,
                     bool transposed, bool bias)
    : Module("Convolution") {
    conv = register_module("conv", make_conv(nd, cin, cout, kernel, stride, transposed, bias));
}

Tensor ConvLayer::forward(const Tensor& x) { return conv->forward(x); }

UnetResBlock::UnetResBlock(int nd, int64_t cin, int64_t cout, int64_t kernel)
    : Module("UnetResBlock") {
    conv1 = register_module("conv1", make<ConvLayer>(nd, cin, cout, kernel));
    conv2 = register_module("conv2", make<ConvLayer>(nd, cout, cout, kernel));
    if (cin != cout) conv3 = register_module("conv3", make<ConvLayer>(nd, cin, cout, 1));
}

Tensor UnetResBlock::forward(const Tensor& x) {
    Tensor y = leaky_relu(inorm(conv1->forward(x)), kSlope);
    y = inorm(conv2->forward(y));
    Tensor residual = conv3 ? inorm(conv3->forward(x)) : x;
    return leaky_relu(add(y, residual), kSlope);
}

UnetrBasicBlock::UnetrBasicBlock(int nd, int64_t cin, int64_t cout) : Module("UnetrBasicBlock") {
    layer = register_module("layer", make<UnetResBlock>(nd, cin, cout));
}

Tensor UnetrBasicBlock::forward(const Tensor& x) { return layer->forward(x); }

UnetrPrUpBlock::UnetrPrUpBlock(int nd, int64_t cin, int64_t cout, int64_t num_layer, int64_t up)
    : Module("UnetrPrUpBlock") {
    LUMEN_CHECK(num_layer >= 0 && up > 0, "UnetrPrUpBlock",
                "needs num_layer >= 0 and up > 0, got num_layer ", num_layer, ", up ", up);
    transp_conv_init =
        register_module("transp_conv_init", make<ConvLayer>(nd, cin, cout, up, up, true));
    blocks = register_module("blocks", make<ModuleList<Sequential>>());
    for (int64_t i = 0; i < num_layer; ++i) {
        auto stage = make<Sequential>();
        stage->push_back(make<ConvLayer>(nd, cout, cout, up, up, true));
        stage->push_back(make<UnetResBlock>(nd, cout, cout));
        blocks->push_back(stage);
    }
}

Tensor UnetrPrUpBlock::forward(const Tensor& x) {
    Tensor y = transp_conv_init->forward(x);
    for (const auto& stage : *blocks) y = stage->forward(y);
    return y;
}

UnetrUpBlock::UnetrUpBlock(int nd, int64_t cin, int64_t cout, int64_t up) : Module("UnetrUpBlock") {
    transp_conv = register_module("transp_conv", make<ConvLayer>(nd, cin, cout, up, up, true));
    conv_block = register_module("conv_block", make<UnetResBlock>(nd, 2 * cout, cout));
}

Tensor UnetrUpBlock::forward(const Tensor& x, const Tensor& skip) {
    Tensor up = transp_conv->forward(x);
    bool fits = skip.ndim() == up.ndim() && skip.size(0) == up.size(0) &&
                skip.size(1) == transp_conv->conv->out_channels;
    for (int64_t d = 2; fits && d < up.ndim(); ++d) fits = skip.size(d) == up.size(d);
    LUMEN_CHECK(fits, "UnetrUpBlock", "skip must be (B, ", transp_conv->conv->out_channels,
                ", upsampled x) = ", up.shape(), " but for channels, got ", skip.shape());
    return conv_block->forward(cat({up, skip}, 1));
}

UnetOutBlock::UnetOutBlock(int nd, int64_t cin, int64_t cout) : Module("UnetOutBlock") {
    conv = register_module("conv", make<ConvLayer>(nd, cin, cout, 1, 1, false, true));
}

Tensor UnetOutBlock::forward(const Tensor& x) { return conv->forward(x); }

}  // namespace lumen::nn::context
