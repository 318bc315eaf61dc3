// ViT / DGViT: the timm VisionTransformer skeleton, its presets and timm's init.
#include "models/vit.h"

#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace lumen::models {

void ViTConfig::validate() const {
    LUMEN_CHECK(img_size.size() == 2 && img_size[0] > 0 && img_size[1] > 0, name,
                "img_size must be (H, W) with positive sizes, got ", img_size);
    LUMEN_CHECK(patch_size > 0 && img_size[0] % patch_size == 0 && img_size[1] % patch_size == 0,
                name, "img_size ", img_size, " is not divisible into patches of ", patch_size);
    LUMEN_CHECK(in_chans > 0 && num_classes > 0 && embed_dim > 0 && depth >= 0 && num_heads > 0,
                name, "in_chans, num_classes, embed_dim and num_heads must be positive and ",
                "depth >= 0, got ", in_chans, ", ", num_classes, ", ", embed_dim, ", ", num_heads,
                ", depth ", depth);
}

ViTConfig vit_config(int64_t num_classes, std::vector<int64_t> img_size, int64_t in_chans,
                     double drop) {
    ViTConfig config{.name = "ViT",
                     .img_size = std::move(img_size),
                     .in_chans = in_chans,
                     .num_classes = num_classes,
                     .pos_drop = drop};
    config.block.drop = drop;
    return config;
}

ViTConfig dgvit_config(int64_t num_classes, std::vector<int64_t> img_size, int64_t in_chans,
                       double k, double drop, int ffn_dropouts) {
    ViTConfig config = vit_config(num_classes, std::move(img_size), in_chans, drop);
    config.name = "DGViT";
    config.block = nn::dgvit_block_options(k);
    config.block.drop = drop;
    config.block.ffn_dropouts = ffn_dropouts;
    return config;
}

ViT::ViT(const ViTConfig& config) : Module(config.name), config_(config) {
    config_.validate();
    int64_t dim = config_.embed_dim;
    int64_t patches =
        (config_.img_size[0] / config_.patch_size) * (config_.img_size[1] / config_.patch_size);
    patch_embed = register_module(
        "patch_embed", nn::make<nn::PatchEmbed>(2, config_.in_chans, dim,
                                                std::vector<int64_t>{config_.patch_size}));
    cls_token = register_parameter("cls_token", zeros({1, 1, dim}));
    pos_embed = register_parameter("pos_embed", zeros({1, 1 + patches, dim}));
    pos_drop = register_module("pos_drop", nn::make<nn::Dropout>(config_.pos_drop));
    blocks = register_module("blocks", nn::make<nn::ModuleList<nn::Block>>());
    for (int64_t i = 0; i < config_.depth; ++i)
        blocks->push_back(nn::make<nn::Block>(dim, config_.num_heads, i, config_.block));
    norm = register_module(
        "norm", nn::make_norm(config_.block.norm_type, dim, config_.block.norm_eps, config_.name));
    head = register_module("head", nn::make<nn::Linear>(dim, config_.num_classes));
    init_weights();
}

void ViT::init_weights() {
    // timm's init_weights_vit_timm: Linear trunc_normal(std .02) with zero bias; the patch
    // conv keeps PyTorch's default.
    for (auto& [name, module] : named_modules()) {
        if (auto* linear = dynamic_cast<nn::Linear*>(module)) {
            nn::init::trunc_normal_(linear->weight, 0.0, 0.02);
            if (linear->bias.defined()) nn::init::zeros_(linear->bias);
        }
    }
    nn::init::trunc_normal_(pos_embed, 0.0, 0.02);
    nn::init::normal_(cls_token, 0.0, 1e-6);
}

Tensor ViT::forward_features(const Tensor& img) {
    const auto& size = config_.img_size;
    LUMEN_CHECK(img.ndim() == 4 && img.size(1) == config_.in_chans && img.size(2) == size[0] &&
                    img.size(3) == size[1],
                config_.name, "expects img (B, ", config_.in_chans, ", ", size[0], ", ", size[1],
                "), got shape ", img.shape());
    nn::AttentionContext context{.grid = patch_embed->grid_size(img.shape()), .prefix_tokens = 1};
    Tensor x = nn::prepend_token(patch_embed->forward(img), cls_token);
    x = pos_drop->forward(add(x, pos_embed));
    for (const auto& block : *blocks) x = block->forward(x, context);
    return norm->forward(x);
}

Tensor ViT::forward(const Tensor& img) { return head->forward(forward_features(img).select(1, 0)); }

}  // namespace lumen::models
