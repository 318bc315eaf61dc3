// GMLP, SwiGLU, GDLAM and PreNormBlock of PVT-GDLA; autograd flows through the ops.
#include "nn/gdla/blocks.h"

#include "nn/attention/spatial_reduction_attention.h"
#include "nn/mlp.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace lumen::nn::gdla {

namespace {

void check_map(const Tensor& x, int64_t channels, const char* who) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == channels, who, "expects x (B, ", channels,
                ", H, W), got shape ", x.shape());
}

// A 1x1 conv weight (out, in, 1, 1) as the (out, in) matrix of a linear layer.
Tensor pointwise_matrix(const Conv2d& conv) {
    return conv.weight.view({conv.out_channels, conv.in_channels});
}

}  // namespace

GMLP::GMLP(int64_t in, int64_t hidden, int64_t out)
    : Module("GMLP"), in_features(in), hidden_features(hidden), out_features(out < 0 ? in : out) {
    LUMEN_CHECK(in > 0 && hidden > 0 && out_features > 0, "GMLP", "sizes must be positive, got in ",
                in, ", hidden ", hidden, ", out ", out_features);
    pwc1 = register_module("pwc1", make<Conv2d>(in, 2 * hidden, std::vector<int64_t>{1}));
    dwc = register_module("dwc", make<Conv2d>(2 * hidden, 2 * hidden, std::vector<int64_t>{3},
                                              ConvOptions{.padding = {1}, .groups = 2 * hidden}));
    pwc2 = register_module("pwc2", make<Conv2d>(hidden, out_features, std::vector<int64_t>{1},
                                                ConvOptions{.bias = false}));
}

Tensor GMLP::forward(const Tensor& x, int64_t height, int64_t width) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == in_features && x.size(1) == height * width, "GMLP",
                "expects x (B, H W, ", in_features, ") for a ", height, " x ", width,
                " grid, got shape ", x.shape());
    int64_t batch = x.size(0), n = x.size(1), wide = 2 * hidden_features;
    // pwc1 on the tokens; SiLU reads the result transposed and writes the NCHW map.
    Tensor u = linear(x, pointwise_matrix(*pwc1), pwc1->bias);  // (B, N, 2 hidden)
    Tensor map = silu(u.transpose(1, 2)).view({batch, wide, height, width});
    Tensor m = dwc->forward(map);
    Tensor a = m.narrow(1, 0, hidden_features), g = m.narrow(1, hidden_features, hidden_features);
    Tensor gated = mul(a, silu(g)).view({batch, hidden_features, n});
    // pwc2 reads the gated map transposed: the product comes out as tokens.
    return linear(gated.transpose(1, 2), pointwise_matrix(*pwc2));
}

std::string GMLP::extra_repr() const {
    return "in=" + std::to_string(in_features) + ", hidden=" + std::to_string(hidden_features) +
           ", out=" + std::to_string(out_features);
}

SwiGLU::SwiGLU(int64_t dim, int64_t hidden_, int64_t out) : Module("SwiGLU"), hidden(hidden_) {
    fc1 = register_module("fc1", make<Linear>(dim, 2 * hidden));
    fc2 = register_module("fc2", make<Linear>(hidden, out < 0 ? dim : out));
}

Tensor SwiGLU::forward(const Tensor& x) {
    Tensor u = fc1->forward(x);
    return fc2->forward(mul(u.narrow(-1, 0, hidden), silu(u.narrow(-1, hidden, hidden))));
}

GDLAM::GDLAM(int64_t dim_, int64_t n_heads, bool qkv_bias, double norm_eps, double hidden_ratio)
    : Module("GDLAM"), dim(dim_) {
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, norm_eps));
    dwc = register_module(
        "dwc", make<Conv2d>(dim, dim, std::vector<int64_t>{3}, ConvOptions{.padding = {1}}));
    attn = register_module("attn", make<attention::GatedDiffLinearAttn>(dim, n_heads, qkv_bias));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, norm_eps));
    mlp = register_module("mlp", make<GMLP>(dim, int64_t(hidden_ratio * double(dim)), dim));
}

Tensor GDLAM::forward(const Tensor& x) {
    check_map(x, dim, "GDLAM");
    int64_t height = x.size(2), width = x.size(3);
    Tensor t = attention::map_to_tokens(x);
    // The "positional" dense 3x3 conv replaces the attention input (no residual around it).
    Tensor u = silu(dwc->forward(attention::tokens_to_map(norm1->forward(t), height, width)));
    t = add(t, attn->forward(attention::map_to_tokens(u), height, width));
    t = add(t, mlp->forward(norm2->forward(t), height, width));
    return attention::tokens_to_map(t, height, width);
}

PreNormBlock::PreNormBlock(const std::string& kind_, int64_t dim_, int64_t n_heads,
                           const PreNormBlockOptions& options)
    : Module("PreNormBlock"), kind(kind_), dim(dim_) {
    LUMEN_CHECK(kind == "sa" || kind == "la" || kind == "da", "PreNormBlock",
                "kind must be sa, la or da, got '", kind, "'");
    attention::AttentionConfig config{.type = kind == "sa"   ? "pvt_sa"
                                              : kind == "la" ? "linear"
                                                             : "pvt_da",
                                      .dim = dim,
                                      .num_heads = n_heads,
                                      .qkv_bias = options.qkv_bias};
    if (kind != "la")
        config.options = {{"rope", options.use_rope ? 1.0 : 0.0}, {"rope_base", options.rope_base}};
    if (kind == "da") config.options.push_back({"depth", double(options.depth)});
    int64_t hidden = int64_t(options.hidden_ratio * double(dim));
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, options.norm_eps));
    attn = register_module("attn", attention::make_attention(config));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, options.norm_eps));
    if (kind == "da") {
        mlp = register_module("mlp", make<SwiGLU>(dim, hidden, dim));
    } else {
        mlp = register_module("mlp", make<Mlp>(dim, hidden, dim, "gelu"));
    }
}

Tensor PreNormBlock::forward(const Tensor& x) {
    check_map(x, dim, "PreNormBlock");
    int64_t height = x.size(2), width = x.size(3);
    attention::AttentionContext context{.grid = {height, width}};
    Tensor t = attention::map_to_tokens(x);
    t = add(t, attn->forward(norm1->forward(t), context));
    t = add(t, mlp->forward(norm2->forward(t)));
    return attention::tokens_to_map(t, height, width);
}

std::string PreNormBlock::extra_repr() const {
    return "kind=" + kind + ", dim=" + std::to_string(dim);
}

}  // namespace lumen::nn::gdla
