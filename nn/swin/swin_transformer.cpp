// The Swin backbone: option checks, the four stages and the per-level channel LayerNorm.
#include "nn/swin/swin_transformer.h"

#include "ops/norm.h"

namespace lumen::nn::swin {

namespace {

// One entry for all dims, or one per dim.
std::vector<int64_t> per_dim(std::vector<int64_t> values, int64_t dims, const char* what) {
    if (values.size() == 1) values.assign(size_t(dims), values[0]);
    LUMEN_CHECK(int64_t(values.size()) == dims, "SwinTransformer", what, " ", values,
                " must have 1 or ", dims, " entries");
    return values;
}

}  // namespace

Tensor channel_layer_norm(const Tensor& x) {
    LUMEN_CHECK(x.ndim() >= 3, "channel_layer_norm", "expects (B, C, *S), got shape ", x.shape());
    int64_t nd = x.ndim();
    std::vector<int64_t> to_last = {0}, to_first = {0, nd - 1};
    for (int64_t d = 2; d < nd; ++d) {
        to_last.push_back(d);
        to_first.push_back(d - 1);
    }
    to_last.push_back(1);
    return layer_norm(x.permute(to_last), {x.size(1)}, Tensor(), Tensor(), 1e-5).permute(to_first);
}

SwinTransformer::SwinTransformer(const SwinOptions& options_)
    : Module("SwinTransformer"), options(options_) {
    const char* who = "SwinTransformer";
    int64_t nd = options.spatial_dims;
    LUMEN_CHECK(nd == 2 || nd == 3, who, "spatial_dims must be 2 or 3, got ", nd);
    LUMEN_CHECK(options.depths.size() == 4 && options.num_heads.size() == 4, who,
                "needs 4 depths and 4 head counts, got ", options.depths, " and ",
                options.num_heads);
    LUMEN_CHECK(options.embed_dim > 0, who, "embed_dim must be positive, got ", options.embed_dim);
    options.window_size = per_dim(options.window_size, nd, "window_size");
    options.patch_size = per_dim(options.patch_size, nd, "patch_size");
    patch_embed = register_module(
        "patch_embed",
        make<PatchEmbed>(options.patch_size, options.in_chans, options.embed_dim, nd));
    int64_t first_block = 0;
    for (int64_t i = 0; i < 4; ++i) {
        auto stage = make<ModuleList<BasicLayer>>();
        auto layer = stage->push_back(make<BasicLayer>(
            options.embed_dim << i, options.depths[size_t(i)], options.num_heads[size_t(i)],
            options.window_size, options.mlp_ratio, options.qkv_bias, options.mixer));
        layer->grad_checkpointing = options.grad_checkpointing;
        layer->first_block = first_block;
        first_block += options.depths[size_t(i)];
        layers.push_back(register_module("layers" + std::to_string(i + 1), stage));
    }
}

std::vector<Tensor> SwinTransformer::forward_features(const Tensor& x) {
    Tensor h = patch_embed->forward(x);
    std::vector<Tensor> out = {channel_layer_norm(h)};
    for (const auto& stage : layers) {
        h = (*stage)[0].forward(h);
        out.push_back(channel_layer_norm(h));
    }
    return out;
}

}  // namespace lumen::nn::swin
