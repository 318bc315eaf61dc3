// PVTv2 spatial-reduction attention: lumen ops only, so autograd and CUDA come from them.
#include "nn/attention/spatial_reduction_attention.h"

#include <cmath>

#include "nn/attention/mhsa.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/pool.h"
#include "ops/shape.h"

namespace lumen::nn::attention {

namespace {
const char* kName = "SRAttention";
constexpr int64_t kPooledSide = 7;  // the "-li" variant's fixed 7 x 7 key grid
}  // namespace

Tensor tokens_to_map(const Tensor& tokens, int64_t height, int64_t width) {
    LUMEN_CHECK(tokens.ndim() == 3 && tokens.size(1) == height * width, "tokens_to_map",
                "expects tokens (B, H W, C) for a ", height, " x ", width, " grid, got shape ",
                tokens.shape());
    return tokens.transpose(1, 2).reshape({tokens.size(0), tokens.size(2), height, width});
}

Tensor map_to_tokens(const Tensor& map) {
    LUMEN_CHECK(map.ndim() == 4, "map_to_tokens", "expects a map (B, C, H, W), got shape ",
                map.shape());
    return map.flatten(2).transpose(1, 2);
}

int64_t reduced_tokens(int64_t height, int64_t width, int64_t sr_ratio, bool linear) {
    if (linear) return kPooledSide * kPooledSide;
    if (sr_ratio > 1) return (height / sr_ratio) * (width / sr_ratio);
    return height * width;
}

SRAttention::SRAttention(int64_t dim_, int64_t num_heads_, int64_t sr_ratio_, bool linear_,
                         bool qkv_bias, double attn_p, double proj_p)
    : Attention(kName), dim(dim_), num_heads(num_heads_), sr_ratio(sr_ratio_), linear(linear_) {
    LUMEN_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0, kName,
                "dim must be a positive multiple of num_heads, got dim ", dim, ", num_heads ",
                num_heads);
    LUMEN_CHECK(sr_ratio >= 1, kName, "sr_ratio must be >= 1, got ", sr_ratio);
    head_dim = dim / num_heads;
    q = register_module("q", make<Linear>(dim, dim, qkv_bias));
    kv = register_module("kv", make<Linear>(dim, 2 * dim, qkv_bias));
    attn_drop = register_module("attn_drop", make<Dropout>(attn_p));
    proj = register_module("proj", make<Linear>(dim, dim));
    proj_drop = register_module("proj_drop", make<Dropout>(proj_p));
    // timm registers sr/norm after proj; the order only shows in named_parameters().
    if (linear) {
        sr = register_module("sr", make<Conv2d>(dim, dim, std::vector<int64_t>{1}));
    } else if (sr_ratio > 1) {
        sr = register_module("sr", make<Conv2d>(dim, dim, std::vector<int64_t>{sr_ratio},
                                                ConvOptions{.stride = {sr_ratio}}));
    }
    if (sr) norm = register_module("norm", make<LayerNorm>(Shape{dim}, 1e-5));
}

Tensor SRAttention::reduce(const Tensor& x, int64_t height, int64_t width, int64_t prefix_tokens) {
    if (!sr) return x;  // every token is a key, the prefix ones included
    Tensor map = tokens_to_map(x.narrow(1, prefix_tokens, height * width), height, width);
    Tensor reduced;
    if (linear) {
        Tensor pooled = sr->forward(adaptive_avg_pool2d(map, {kPooledSide, kPooledSide}));
        reduced = gelu(norm->forward(map_to_tokens(pooled)));
    } else {
        reduced = norm->forward(map_to_tokens(sr->forward(map)));
    }
    if (prefix_tokens == 0) return reduced;
    return cat({x.narrow(1, 0, prefix_tokens), reduced}, 1);
}

Tensor SRAttention::forward(const Tensor& x, int64_t height, int64_t width, int64_t prefix_tokens) {
    LUMEN_CHECK(height > 0 && width > 0 && prefix_tokens >= 0 && x.ndim() == 3 &&
                    x.size(2) == dim && x.size(1) == prefix_tokens + height * width,
                kName, "expects x (B, P + H*W, ", dim, ") with P = ", prefix_tokens,
                ", H = ", height, ", W = ", width, ", got shape ", x.shape());
    LUMEN_CHECK(linear || sr_ratio == 1 || (height >= sr_ratio && width >= sr_ratio), kName, "the ",
                height, "x", width, " grid is smaller than sr_ratio ", sr_ratio);
    int64_t batch = x.size(0), n = x.size(1);
    Tensor src = reduce(x, height, width, prefix_tokens);
    int64_t m = src.size(1);
    // Strided head views, read in place by the batched GEMMs: q (B, nh, N, Hd); kv channel
    // c = which * C + head * Hd + i with which 0 = k, 1 = v.
    Tensor q_heads = q->forward(x).view({batch, n, num_heads, head_dim}).transpose(1, 2);
    Tensor kv_heads =
        kv->forward(src).view({batch, m, 2, num_heads, head_dim}).permute({2, 0, 3, 1, 4});
    double drop_p = attn_drop->is_training() ? attn_drop->p : 0.0;
    Tensor heads = attend(q_heads, kv_heads.select(0, 0), kv_heads.select(0, 1),
                          {1.0 / std::sqrt(double(head_dim)), Tensor(), false, drop_p, fused});
    return proj_drop->forward(proj->forward(heads.transpose(1, 2).reshape({batch, n, dim})));
}

Tensor SRAttention::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(context.grid.size() == 2, kName, "needs a 2-D token grid {H, W}, got grid ",
                context.grid);
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, kName,
                "cannot mask keys: they are pooled from the map, not tokens");
    return forward(x, context.grid[0], context.grid[1], context.prefix_tokens);
}

std::string SRAttention::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads) +
           (linear ? ", linear=true" : ", sr_ratio=" + std::to_string(sr_ratio));
}

std::shared_ptr<Attention> make_pvt_sra_attention(const AttentionConfig& config) {
    check_attention_options(config, {"sr_ratio", "linear"}, "pvt_sra");
    double ratio = config.option("sr_ratio", 1.0);
    LUMEN_CHECK(ratio >= 1 && ratio == std::floor(ratio), "pvt_sra",
                "sr_ratio must be a positive integer, got ", ratio);
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim * config.num_heads == config.dim, "pvt_sra",
                "head_dim must be dim / num_heads = ", config.dim, " / ", config.num_heads,
                ", got ", config.head_dim);
    return make<SRAttention>(config.dim, config.num_heads, int64_t(ratio),
                             config.option("linear", 0.0) != 0.0, config.qkv_bias, config.attn_drop,
                             config.proj_drop);
}

}  // namespace lumen::nn::attention
