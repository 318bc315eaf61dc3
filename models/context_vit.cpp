// The ViT backbone, the UNETR and linear heads and the encoder-decoder model of the context-length
// study (Hooper & Xue).
#include "models/context_vit.h"

#include "nn/activation.h"
#include "nn/checkpoint.h"
#include "nn/embed.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen::models {

using nn::make;
using namespace nn::context;

ContextViT::ContextViT(const ContextViTConfig& config_) : Module("ViT"), config(config_) {
    const ContextViTConfig& c = config;
    LUMEN_CHECK(c.num_layers >= 1, "ViT", "num_layers must be positive, got ", c.num_layers);
    bool attention = c.mixer.mixer == "attn";
    patch_embedding = register_module(
        "patch_embedding", make<PatchEmbeddingBlock>(c.in_channels, c.img_size, c.patch_size,
                                                     c.hidden_size, c.spatial_dims, attention));
    blocks = register_module("blocks", make<nn::ModuleList<TransformerBlock>>());
    for (int64_t i = 0; i < c.num_layers; ++i)
        blocks->push_back(make<TransformerBlock>(c.hidden_size, c.mlp_dim, c.num_heads, c.mixer));
    norm = register_module("norm", make<nn::LayerNorm>(Shape{c.hidden_size}, 1e-5));
    if (c.classification && attention)
        cls_token = register_parameter("cls_token", zeros({1, 1, c.hidden_size}));
}

std::vector<Tensor> ContextViT::forward_hidden(const Tensor& x) {
    std::vector<Tensor> hidden{x};
    Tensor h = patch_embedding->forward(x);
    if (cls_token.defined()) h = nn::prepend_token(h, cls_token);
    int64_t index = 0;
    for (const auto& block : *blocks) {
        h = nn::checkpoint_every(
            config.grad_checkpointing, index++,
            [block](const std::vector<Tensor>& in) { return block->forward(in[0]); }, {h},
            block->parameters());
        hidden.push_back(h);
    }
    hidden.push_back(norm->forward(h));
    return hidden;
}

UnetrLayout unetr_layout(int64_t p) {
    switch (p) {
        case 2: return {0, 0, 0, 1, 1, 1, 2};
        case 4: return {1, 1, 0, 1, 1, 2, 2};
        case 8: return {2, 1, 0, 1, 2, 2, 2};
        case 16: return {2, 1, 0, 2, 2, 2, 2};
        case 32: return {2, 1, 0, 4, 2, 2, 2};
        default: LUMEN_FAIL("ViTUNETR", "patch_size must be 2, 4, 8, 16 or 32, got ", p);
    }
}

ViTUNETR::ViTUNETR(int64_t in_channels, int64_t out_channels, std::vector<int64_t> img_size,
                   int64_t patch_size, int64_t hidden, int nd, int64_t fs)
    : Module("ViTUNETR"), hidden_size(hidden) {
    if (img_size.size() == 1) img_size.assign(size_t(nd), img_size[0]);
    LUMEN_CHECK(int(img_size.size()) == nd && fs > 0, "ViTUNETR", "needs ", nd,
                " image sizes and feature_size > 0, got ", img_size, ", ", fs);
    for (int64_t s : img_size) grid.push_back(s / patch_size);
    UnetrLayout l = unetr_layout(patch_size);
    encoder1 = register_module("encoder1", make<UnetrBasicBlock>(nd, in_channels, fs));
    encoder2 = register_module("encoder2", make<UnetrPrUpBlock>(nd, hidden, 2 * fs, l.n2, 2));
    encoder3 = register_module("encoder3", make<UnetrPrUpBlock>(nd, hidden, 4 * fs, l.n3, 2));
    encoder4 = register_module("encoder4", make<UnetrPrUpBlock>(nd, hidden, 8 * fs, l.n4, 2));
    decoder5 = register_module("decoder5", make<UnetrUpBlock>(nd, hidden, 8 * fs, l.u4));
    decoder4 = register_module("decoder4", make<UnetrUpBlock>(nd, 8 * fs, 4 * fs, l.u3));
    decoder3 = register_module("decoder3", make<UnetrUpBlock>(nd, 4 * fs, 2 * fs, l.u2));
    decoder2 = register_module("decoder2", make<UnetrUpBlock>(nd, 2 * fs, fs, l.u1));
    out = register_module("out", make<UnetOutBlock>(nd, fs, out_channels));
}

Tensor ViTUNETR::proj_feat(const Tensor& tokens) const {
    int64_t n = 1;
    for (int64_t g : grid) n *= g;
    LUMEN_CHECK(tokens.ndim() == 3 && tokens.size(1) == n && tokens.size(2) == hidden_size,
                "ViTUNETR", "expects tokens (B, ", n, ", ", hidden_size,
                ") on the patch grid (no cls token), got shape ", tokens.shape());
    Shape shape{tokens.size(0)};
    shape.insert(shape.end(), grid.begin(), grid.end());
    shape.push_back(hidden_size);
    std::vector<int64_t> order{0, int64_t(grid.size()) + 1};
    for (int64_t d = 1; d <= int64_t(grid.size()); ++d) order.push_back(d);
    return tokens.reshape(shape).permute(order).contiguous();  // (B, hidden, *grid)
}

Tensor ViTUNETR::forward(const std::vector<Tensor>& hidden) {
    LUMEN_CHECK(hidden.size() >= 12, "ViTUNETR", "needs [x, h_1..h_L, norm(h_L)] with L >= 10, ",
                "got ", hidden.size(), " tensors");
    int64_t index = first_block;
    // A block of one input, or of an input and its skip, checkpointed when its index says so.
    auto one = [&](const auto& block, const Tensor& x) {
        return nn::checkpoint_every(
            grad_checkpointing, index++,
            [block](const std::vector<Tensor>& in) { return block->forward(in[0]); }, {x},
            block->parameters());
    };
    auto two = [&](const auto& block, const Tensor& x, const Tensor& skip) {
        return nn::checkpoint_every(
            grad_checkpointing, index++,
            [block](const std::vector<Tensor>& in) { return block->forward(in[0], in[1]); },
            {x, skip}, block->parameters());
    };
    Tensor enc1 = one(encoder1, hidden[0]);
    Tensor enc2 = one(encoder2, proj_feat(hidden[4]));   // h_4
    Tensor enc3 = one(encoder3, proj_feat(hidden[7]));   // h_7
    Tensor enc4 = one(encoder4, proj_feat(hidden[10]));  // h_10
    Tensor d3 = two(decoder5, proj_feat(hidden.back()), enc4);
    Tensor d2 = two(decoder4, d3, enc3);
    Tensor d1 = two(decoder3, d2, enc2);
    return out->forward(two(decoder2, d1, enc1));
}

ViTLinear::ViTLinear(int64_t hidden_size, int64_t num_classes, bool use_cls)
    : Module("ViTLinear"), use_cls_token(use_cls) {
    classification_head = register_module("classification_head", make<nn::Sequential>());
    classification_head->push_back(make<nn::Linear>(hidden_size, num_classes));
    classification_head->push_back(make<nn::Tanh>());
}

Tensor ViTLinear::forward(const std::vector<Tensor>& hidden) {
    const Tensor& h = hidden.back();  // (B, N, hidden)
    Tensor pooled = use_cls_token ? h.select(1, 0) : mean(h, {1});
    return classification_head->forward(pooled);
}

ContextViTConfig ContextViTModelConfig::backbone() const {
    ContextViTConfig c;
    c.in_channels = in_channels;
    c.spatial_dims = time == 1 ? 2 : 3;
    c.img_size =
        time == 1 ? std::vector<int64_t>{height, width} : std::vector<int64_t>{time, height, width};
    c.patch_size = patch_size;
    c.hidden_size = hidden_size;
    c.mlp_dim = mlp_dim;
    c.num_layers = num_layers;
    c.num_heads = num_heads;
    c.classification = decoder == "linear";
    c.mixer = mixer;
    c.grad_checkpointing = grad_checkpointing;
    return c;
}

ContextViTModel::ContextViTModel(const ContextViTModelConfig& config_)
    : Module("EncoderDecoderModel"), config(config_) {
    LUMEN_CHECK(config.decoder == "unetr" || config.decoder == "linear", "ContextViTModel",
                "decoder must be 'unetr' or 'linear', got '", config.decoder, "'");
    ContextViTConfig backbone = config.backbone();
    encoder = register_module("encoder", make<ContextViT>(backbone));
    if (config.decoder == "linear") {
        linear = register_module("decoder", make<ViTLinear>(config.hidden_size, config.out_channels,
                                                            config.mixer.mixer == "attn"));
    } else {
        unetr = register_module(
            "decoder", make<ViTUNETR>(config.in_channels, config.out_channels, backbone.img_size,
                                      config.patch_size, config.hidden_size, backbone.spatial_dims,
                                      config.feature_size));
        unetr->grad_checkpointing = config.grad_checkpointing;
        unetr->first_block = config.num_layers;
    }
}

Tensor ContextViTModel::forward(const Tensor& x) {
    const ContextViTModelConfig& c = config;
    // A 2-D model (T = 1) also takes (B, C, H, W) and then answers without the T axis.
    const bool image = c.time == 1 && x.ndim() == 4;
    LUMEN_CHECK((x.ndim() == 5 && x.size(1) == c.in_channels && x.size(2) == c.time &&
                 x.size(3) == c.height && x.size(4) == c.width) ||
                    (image && x.size(1) == c.in_channels && x.size(2) == c.height &&
                     x.size(3) == c.width),
                "ContextViTModel", "expects x (B, ", c.in_channels, ", ", c.time, ", ", c.height,
                ", ", c.width, ")", c.time == 1 ? " or (B, C, H, W)" : "", ", got shape ",
                x.shape());
    bool flat = c.time == 1;
    std::vector<Tensor> hidden = encoder->forward_hidden(image ? x : flat ? x.select(2, 0) : x);
    if (linear) return linear->forward(hidden);
    Tensor y = unetr->forward(hidden);
    return flat && !image ? y.unsqueeze(2) : y;
}

}  // namespace lumen::models
