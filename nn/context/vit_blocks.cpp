// The MONAI ViT pieces of the context-length study (Hooper & Xue): tokenizer, MLP, the mixer slot
// and the block; autograd flows through the ops.
#include "nn/context/vit_blocks.h"

#include <cmath>

#include "nn/attention/mhsa.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace lumen::nn::context {

namespace {

std::shared_ptr<Conv> patch_conv(int nd, int64_t in, int64_t out, int64_t p) {
    ConvOptions options{.stride = {p}};
    if (nd == 2) return make<Conv2d>(in, out, std::vector<int64_t>{p}, options);
    return make<Conv3d>(in, out, std::vector<int64_t>{p}, options);
}

}  // namespace

PatchEmbeddingBlock::PatchEmbeddingBlock(int64_t in_channels, std::vector<int64_t> img_size_,
                                         int64_t patch_size, int64_t hidden_size, int spatial_dims,
                                         bool learnable_init)
    : Module("PatchEmbeddingBlock"), img_size(std::move(img_size_)) {
    LUMEN_CHECK(spatial_dims == 2 || spatial_dims == 3, "PatchEmbeddingBlock",
                "spatial_dims must be 2 or 3, got ", spatial_dims);
    if (img_size.size() == 1) img_size.assign(size_t(spatial_dims), img_size[0]);
    LUMEN_CHECK(int(img_size.size()) == spatial_dims && patch_size > 0 && hidden_size > 0,
                "PatchEmbeddingBlock", "needs ", spatial_dims, " image sizes, patch_size > 0 and ",
                "hidden_size > 0, got img_size ", img_size, ", patch_size ", patch_size,
                ", hidden_size ", hidden_size);
    n_patches = 1;
    for (int64_t s : img_size) {
        LUMEN_CHECK(s > 0 && s % patch_size == 0, "PatchEmbeddingBlock", "img_size ", img_size,
                    " must be positive multiples of patch_size ", patch_size);
        grid.push_back(s / patch_size);
        n_patches *= s / patch_size;
    }
    patch_embeddings = register_module(
        "patch_embeddings", patch_conv(spatial_dims, in_channels, hidden_size, patch_size));
    position_embeddings =
        register_parameter("position_embeddings", zeros({1, n_patches, hidden_size}));
    if (learnable_init) init::trunc_normal_(position_embeddings, 0.0, 0.02, -2.0, 2.0);
}

Tensor PatchEmbeddingBlock::forward(const Tensor& x) {
    bool ok =
        x.ndim() == int64_t(img_size.size()) + 2 && x.size(1) == patch_embeddings->in_channels;
    for (size_t i = 0; ok && i < img_size.size(); ++i) ok = x.size(int64_t(i) + 2) == img_size[i];
    LUMEN_CHECK(ok, "PatchEmbeddingBlock", "expects x (B, ", patch_embeddings->in_channels, ", ",
                img_size, "), got shape ", x.shape());
    Tensor tokens = patch_embeddings->forward(x).flatten(2).transpose(1, 2);  // (B, N, hidden)
    return add(tokens, position_embeddings);
}

MLPBlock::MLPBlock(int64_t hidden_size, int64_t mlp_dim) : Module("MLPBlock") {
    linear1 = register_module("linear1", make<Linear>(hidden_size, mlp_dim));
    linear2 = register_module("linear2", make<Linear>(mlp_dim, hidden_size));
}

Tensor MLPBlock::forward(const Tensor& x) { return linear2->forward(gelu(linear1->forward(x))); }

SABlock::SABlock(int64_t hidden, int64_t heads, const MixerOptions& options_)
    : attention::Attention("SABlock"), hidden_size(hidden), num_heads(heads), options(options_) {
    LUMEN_CHECK(hidden > 0 && heads > 0 && hidden % heads == 0, "SABlock", "hidden_size ", hidden,
                " must be a positive multiple of num_heads ", heads);
    head_dim = hidden / heads;
    if (options.mixer == "attn") {
        qkv = register_module("qkv", make<Linear>(hidden, 3 * hidden, options.qkv_bias));
        out_proj = register_module("out_proj", make<Linear>(hidden, hidden));
        return;
    }
    attention::AttentionConfig config{
        .type = options.mixer, .dim = hidden, .num_heads = heads, .qkv_bias = options.qkv_bias};
    if (options.mixer == "hyena") {
        config.options = {{"l_max", double(options.l_max)},
                          {"filter_order", double(options.filter_order)},
                          {"short_filter_order", double(options.short_filter_order)}};
    } else if (options.mixer == "mamba") {
        config.options = {{"d_state", double(options.d_state)},
                          {"d_conv", double(options.d_conv)},
                          {"expand", double(options.expand)}};
        if (options.dt_rank) config.options.emplace_back("dt_rank", double(*options.dt_rank));
    }
    mixer = register_module(options.mixer, attention::make_attention(config));
}

Tensor SABlock::forward(const Tensor& x, const attention::AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == hidden_size, "SABlock", "expects x (B, N, ",
                hidden_size, "), got shape ", x.shape());
    if (mixer) return mixer->forward(x, context);
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, "SABlock",
                "MONAI self-attention takes no mask");
    int64_t batch = x.size(0), n = x.size(1);
    // Channel c of qkv: part c / hidden (q, k, v), head (c % hidden) / hd, dim c % hd.
    Tensor parts =
        qkv->forward(x).view({batch, n, 3, num_heads, head_dim}).permute({2, 0, 3, 1, 4});
    Tensor q = parts.select(0, 0), k = parts.select(0, 1), v = parts.select(0, 2);
    Tensor heads = attention::attend(
        q, k, v,
        {1.0 / std::sqrt(double(head_dim)), Tensor(), false, 0.0, fused});  // (B, heads, N, hd)
    return out_proj->forward(heads.transpose(1, 2).reshape({batch, n, hidden_size}));
}

std::string SABlock::extra_repr() const {
    return "hidden_size=" + std::to_string(hidden_size) +
           ", num_heads=" + std::to_string(num_heads) + ", mixer=" + options.mixer;
}

TransformerBlock::TransformerBlock(int64_t hidden_size, int64_t mlp_dim, int64_t num_heads,
                                   const MixerOptions& options)
    : Module("TransformerBlock") {
    mlp = register_module("mlp", make<MLPBlock>(hidden_size, mlp_dim));
    norm1 = register_module("norm1", make<LayerNorm>(Shape{hidden_size}, 1e-5));
    attn = register_module("attn", make<SABlock>(hidden_size, num_heads, options));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{hidden_size}, 1e-5));
}

Tensor TransformerBlock::forward(const Tensor& x) {
    Tensor h = add(x, attn->forward(norm1->forward(x)));
    return add(h, mlp->forward(norm2->forward(h)));
}

}  // namespace lumen::nn::context
