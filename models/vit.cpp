// ViT / DGViT: the timm VisionTransformer skeleton, its presets, timm's init and the attention
// variants it takes (with a class token or the token mean).
#include "models/vit.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "nn/attention/attention.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace lumen::models {

namespace {

// Why each variant of vit_mean_pool_attention() cannot take a class token.
const std::vector<std::pair<std::string, std::string>>& class_token_refusals() {
    static const std::vector<std::pair<std::string, std::string>> reasons{
        {"gdla",
         "its local-mixing branch convolves the token map, where a class token has no "
         "place"},
        {"hyena", "its long convolution is causal: a class token in front never sees a patch"},
        {"mamba",
         "its selective scan is causal: a class token in front reaches one more patch per "
         "block only"},
        {"swin_window", "its windows and relative position bias cover the patch grid only"},
        {"utnet", "its q/k/v projections are convolutions on the token map"},
    };
    return reasons;
}

// UTNet reduces keys to r x r, and its relative position bias needs r to divide the grid
// sides: the largest such r up to the variant's default 8, unless the options give one.
nn::BlockOptions fit_to_grid(nn::BlockOptions block, int64_t height, int64_t width) {
    if (block.attn_type != "utnet") return block;
    for (const auto& [key, value] : block.attn_options)
        if (key == "reduce_size") return block;
    int64_t r = std::min<int64_t>(8, std::gcd(height, width));
    while (height % r != 0 || width % r != 0) --r;
    block.attn_options.emplace_back("reduce_size", double(r));
    return block;
}

}  // namespace

void ViTConfig::validate() const {
    LUMEN_CHECK(img_size.size() == 2 && img_size[0] > 0 && img_size[1] > 0, name,
                "img_size must be (H, W) with positive sizes, got ", img_size);
    LUMEN_CHECK(patch_size > 0 && img_size[0] % patch_size == 0 && img_size[1] % patch_size == 0,
                name, "img_size ", img_size, " is not divisible into patches of ", patch_size);
    LUMEN_CHECK(in_chans > 0 && num_classes > 0 && embed_dim > 0 && depth >= 0 && num_heads > 0,
                name, "in_chans, num_classes, embed_dim and num_heads must be positive and ",
                "depth >= 0, got ", in_chans, ", ", num_classes, ", ", embed_dim, ", ", num_heads,
                ", depth ", depth);
    const std::vector<std::string> types = vit_attention_types();
    LUMEN_CHECK(std::find(types.begin(), types.end(), block.attn_type) != types.end(), name,
                "unknown attn_type '", block.attn_type, "', expected one of ", types);
    LUMEN_CHECK(pool == "cls" || pool == "mean", name, "pool must be 'cls' or 'mean', got '", pool,
                "'");
    for (const auto& [type, reason] : class_token_refusals())
        LUMEN_CHECK(pool == "mean" || block.attn_type != type, name, "attn_type '", type,
                    "' needs pool 'mean' (", reason, "), got pool '", pool, "'");
}

std::vector<std::string> vit_attention_types() { return nn::attention::attention_names(); }

const std::vector<std::string>& vit_mean_pool_attention() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& [type, reason] : class_token_refusals()) out.push_back(type);
        return out;
    }();
    return names;
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
    const int64_t prefix = config_.pool == "cls" ? 1 : 0;
    if (prefix) cls_token = register_parameter("cls_token", zeros({1, 1, dim}));
    pos_embed = register_parameter("pos_embed", zeros({1, prefix + patches, dim}));
    pos_drop = register_module("pos_drop", nn::make<nn::Dropout>(config_.pos_drop));
    blocks = register_module("blocks", nn::make<nn::ModuleList<nn::Block>>());
    const nn::BlockOptions block =
        fit_to_grid(config_.block, config_.img_size[0] / config_.patch_size,
                    config_.img_size[1] / config_.patch_size);
    for (int64_t i = 0; i < config_.depth; ++i)
        blocks->push_back(nn::make<nn::Block>(dim, config_.num_heads, i, block));
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
    if (cls_token.defined()) nn::init::normal_(cls_token, 0.0, 1e-6);
}

Tensor ViT::forward_features(const Tensor& img) {
    const auto& size = config_.img_size;
    LUMEN_CHECK(img.ndim() == 4 && img.size(1) == config_.in_chans && img.size(2) == size[0] &&
                    img.size(3) == size[1],
                config_.name, "expects img (B, ", config_.in_chans, ", ", size[0], ", ", size[1],
                "), got shape ", img.shape());
    const bool cls = cls_token.defined();
    nn::attention::AttentionContext context{.grid = patch_embed->grid_size(img.shape()),
                                            .prefix_tokens = cls ? 1 : 0};
    Tensor x = patch_embed->forward(img);
    if (cls) x = nn::prepend_token(x, cls_token);
    x = pos_drop->forward(add(x, pos_embed));
    x = nn::run_blocks(*blocks, x, context, config_.grad_checkpointing);
    return norm->forward(x);
}

Tensor ViT::forward(const Tensor& img) {
    Tensor x = forward_features(img);
    return head->forward(cls_token.defined() ? x.select(1, 0) : mean(x, {1}));
}

}  // namespace lumen::models
