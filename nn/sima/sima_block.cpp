// LPI, SimABlock and ClassAttentionBlock of the official SimA model.
#include "nn/sima/sima_block.h"

#include "ops/elementwise.h"
#include "ops/shape.h"

namespace lumen::nn::sima {

int64_t mlp_hidden(int64_t dim, double mlp_ratio, const char* owner) {
    auto hidden = int64_t(double(dim) * mlp_ratio);  // Python's int() truncates
    LUMEN_CHECK(hidden > 0, owner, "mlp hidden size int(", dim, " * ", mlp_ratio,
                ") must be positive");
    return hidden;
}

LPI::LPI(int64_t features, int64_t kernel_size, double bn_eps)
    : Module("LPI"), in_features(features) {
    LUMEN_CHECK(features > 0 && kernel_size > 0 && kernel_size % 2 == 1, "LPI",
                "needs in_features > 0 and an odd kernel_size, got ", features, " and ",
                kernel_size);
    ConvOptions depthwise{.padding = {kernel_size / 2}, .groups = features};
    conv1 = register_module(
        "conv1", make<Conv2d>(features, features, std::vector<int64_t>{kernel_size}, depthwise));
    act = register_module("act", make<GELU>());
    bn = register_module("bn", make<BatchNorm2d>(features, bn_eps));
    conv2 = register_module(
        "conv2", make<Conv2d>(features, features, std::vector<int64_t>{kernel_size}, depthwise));
}

Tensor LPI::forward(const Tensor& x, int64_t H, int64_t W) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == in_features && H > 0 && W > 0 && x.size(1) == H * W,
                "LPI", "expects x (B, H*W, ", in_features, ") for the grid ", H, " x ", W,
                ", got shape ", x.shape());
    int64_t batch = x.size(0), tokens = x.size(1);
    Tensor grid = x.transpose(1, 2).reshape({batch, in_features, H, W});
    Tensor y = conv2->forward(bn->forward(act->forward(conv1->forward(grid))));
    return y.reshape({batch, in_features, tokens}).transpose(1, 2);
}

Tensor LPI::forward(const Tensor& x, const attention::AttentionContext& context) {
    LUMEN_CHECK(context.grid.size() == 2 && context.prefix_tokens == 0, "LPI",
                "needs a 2-D grid {H, W} and no prefix tokens in the context, got grid ",
                context.grid, " and ", context.prefix_tokens, " prefix tokens");
    return forward(x, context.grid[0], context.grid[1]);
}

SimABlock::SimABlock(int64_t dim_, int64_t num_heads, const SimALayerOptions& o)
    : Module("SimABlock"), dim(dim_) {
    double eta = o.eta.value_or(1.0);
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, o.norm_eps));
    attn = register_module("attn",
                           make<attention::SimA>(dim, num_heads, o.qkv_bias, o.attn_drop, o.drop));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, o.norm_eps));
    mlp = register_module(
        "mlp", make<Mlp>(dim, mlp_hidden(dim, o.mlp_ratio, "SimABlock"), -1, "gelu", o.drop));
    norm3 = register_module("norm3", make<LayerNorm>(Shape{dim}, o.norm_eps));
    local_mp = register_module("local_mp", make<LPI>(dim));
    gamma1 = register_parameter("gamma1", full({dim}, eta));
    gamma2 = register_parameter("gamma2", full({dim}, eta));
    gamma3 = register_parameter("gamma3", full({dim}, eta));
}

Tensor SimABlock::forward(const Tensor& x_in, int64_t H, int64_t W) {
    LUMEN_CHECK(x_in.ndim() == 3 && x_in.size(2) == dim, "SimABlock", "expects x (B, N, ", dim,
                "), got shape ", x_in.shape());
    Tensor x = add(x_in, mul(gamma1, attn->forward(norm1->forward(x_in))));
    x = add(x, mul(gamma3, local_mp->forward(norm3->forward(x), H, W)));
    return add(x, mul(gamma2, mlp->forward(norm2->forward(x))));
}

ClassAttentionBlock::ClassAttentionBlock(int64_t dim_, int64_t num_heads, const SimALayerOptions& o)
    : Module("ClassAttentionBlock"), dim(dim_), tokens_norm(o.tokens_norm) {
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, o.norm_eps));
    attn = register_module(
        "attn", make<attention::ClassAttention>(dim, num_heads, o.qkv_bias, o.attn_drop, o.drop));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, o.norm_eps));
    mlp = register_module("mlp", make<Mlp>(dim, mlp_hidden(dim, o.mlp_ratio, "ClassAttentionBlock"),
                                           -1, "gelu", o.drop));
    if (o.eta) {
        gamma1 = register_parameter("gamma1", full({dim}, *o.eta));
        gamma2 = register_parameter("gamma2", full({dim}, *o.eta));
    }
}

Tensor ClassAttentionBlock::forward(const Tensor& x_in) {
    LUMEN_CHECK(x_in.ndim() == 3 && x_in.size(2) == dim && x_in.size(1) >= 1, "ClassAttentionBlock",
                "expects x (B, N, ", dim, ") with N >= 1, got shape ", x_in.shape());
    int64_t tokens = x_in.size(1);
    Tensor update = attn->forward(norm1->forward(x_in));
    Tensor x = add(x_in, gamma1.defined() ? mul(gamma1, update) : update);
    Tensor patches = x.narrow(1, 1, tokens - 1);
    if (tokens_norm) {
        x = norm2->forward(x);
        patches = x.narrow(1, 1, tokens - 1);
    } else {
        x = cat({norm2->forward(x.narrow(1, 0, 1)), patches}, 1);
    }
    Tensor cls = mlp->forward(x.narrow(1, 0, 1));
    if (gamma2.defined()) cls = mul(gamma2, cls);
    // The official residual adds cat([cls, x[:, 1:]]) to x: the patch tokens are doubled.
    return add(x, cat({cls, patches}, 1));
}

}  // namespace lumen::nn::sima
