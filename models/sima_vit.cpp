// The official SimA ViT: conv patch embedding, Fourier positions, blocks, class attention.
#include "models/sima_vit.h"

#include <cmath>
#include <numbers>

#include "nn/checkpoint.h"
#include "nn/embed.h"
#include "nn/init.h"
#include "ops/elementwise.h"

namespace lumen::models {

namespace {
const char* kName = "SimAVisionTransformer";
}  // namespace

ConvPatchEmbed::ConvPatchEmbed(int64_t patch_size, int64_t in, int64_t e)
    : Module("ConvPatchEmbed"), in_chans(in) {
    LUMEN_CHECK(patch_size == 16 || patch_size == 8, "ConvPatchEmbed",
                "patch_size must be 8 or 16, got ", patch_size);
    int64_t stages = patch_size == 16 ? 4 : 3;
    LUMEN_CHECK(in > 0 && e > 0 && e % (int64_t(1) << (stages - 1)) == 0, "ConvPatchEmbed",
                "needs in_chans > 0 and embed_dim divisible by ", int64_t(1) << (stages - 1),
                ", got ", in, " and ", e);
    proj = register_module("proj", nn::make<nn::Sequential>());
    int64_t channels = in;
    for (int64_t s = 0; s < stages; ++s) {
        int64_t out = e >> (stages - 1 - s);
        if (s > 0) proj->push_back(nn::make<nn::GELU>());
        auto stage = nn::make<nn::Sequential>();
        stage->push_back(
            nn::make<nn::Conv2d>(channels, out, std::vector<int64_t>{3},
                                 nn::ConvOptions{.stride = {2}, .padding = {1}, .bias = false}));
        stage->push_back(nn::make<nn::BatchNorm2d>(out));
        proj->push_back(stage);
        channels = out;
    }
}

Tensor ConvPatchEmbed::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == in_chans, "ConvPatchEmbed", "expects x (B, ",
                in_chans, ", H, W), got shape ", x.shape());
    return proj->forward(x);
}

PositionalEncodingFourier::PositionalEncodingFourier(int64_t hidden, int64_t dim_, double temp)
    : Module("PositionalEncodingFourier"), hidden_dim(hidden), dim(dim_), temperature(temp) {
    LUMEN_CHECK(hidden > 0 && dim > 0 && temp > 0, "PositionalEncodingFourier",
                "needs positive sizes and temperature, got hidden_dim ", hidden, ", dim ", dim,
                ", temperature ", temp);
    token_projection = register_module(
        "token_projection", nn::make<nn::Conv2d>(2 * hidden, dim, std::vector<int64_t>{1}));
}

Tensor PositionalEncodingFourier::features(int64_t H, int64_t W, DType dtype, Device device) const {
    // A constant table of 2 hidden_dim x H x W values: computed once on the host per call.
    const double two_pi = 2.0 * std::numbers::pi, eps = 1e-6;
    std::vector<double> values(size_t(2 * hidden_dim * H * W));
    for (int64_t k = 0; k < 2 * hidden_dim; ++k) {
        int64_t channel = k % hidden_dim;
        double tau = std::pow(temperature, double(2 * (channel / 2)) / double(hidden_dim));
        for (int64_t i = 0; i < H; ++i) {
            for (int64_t j = 0; j < W; ++j) {
                // channels [0, hd) follow the row (y), [hd, 2 hd) the column (x)
                double p = k < hidden_dim ? double(i + 1) / (double(H) + eps) * two_pi
                                          : double(j + 1) / (double(W) + eps) * two_pi;
                double angle = p / tau;
                values[size_t((k * H + i) * W + j)] =
                    channel % 2 == 0 ? std::sin(angle) : std::cos(angle);
            }
        }
    }
    return from_vector(values, {1, 2 * hidden_dim, H, W}).to(dtype).to(device);
}

Tensor PositionalEncodingFourier::forward(int64_t H, int64_t W) {
    LUMEN_CHECK(H > 0 && W > 0, "PositionalEncodingFourier", "needs a non-empty grid, got ", H,
                " x ", W);
    const Tensor& w = token_projection->weight;
    return token_projection->forward(features(H, W, w.dtype(), w.device()));
}

void SimAViTConfig::validate() const {
    LUMEN_CHECK(patch_size == 16 || patch_size == 8, kName, "patch_size must be 8 or 16, got ",
                patch_size);
    LUMEN_CHECK(in_chans > 0 && num_classes >= 0 && embed_dim > 0 && depth >= 0 && num_heads > 0 &&
                    cls_attn_layers >= 0 && mlp_ratio > 0 && norm_eps > 0,
                kName, "invalid sizes: in_chans ", in_chans, ", num_classes ", num_classes,
                ", embed_dim ", embed_dim, ", depth ", depth, ", num_heads ", num_heads,
                ", cls_attn_layers ", cls_attn_layers, ", mlp_ratio ", mlp_ratio);
    LUMEN_CHECK(embed_dim % num_heads == 0, kName, "embed_dim ", embed_dim,
                " is not divisible by num_heads ", num_heads);
}

SimAVisionTransformer::SimAVisionTransformer(const SimAViTConfig& config)
    : Module(kName), config_(config) {
    config_.validate();
    const SimAViTConfig& c = config_;
    patch_embed = register_module("patch_embed",
                                  nn::make<ConvPatchEmbed>(c.patch_size, c.in_chans, c.embed_dim));
    cls_token = register_parameter("cls_token", zeros({1, 1, c.embed_dim}));
    nn::sima::SimALayerOptions o{.mlp_ratio = c.mlp_ratio,
                                 .qkv_bias = c.qkv_bias,
                                 .norm_eps = c.norm_eps,
                                 .eta = c.eta,
                                 .tokens_norm = c.tokens_norm};
    blocks = register_module("blocks", nn::make<nn::ModuleList<nn::sima::SimABlock>>());
    for (int64_t i = 0; i < c.depth; ++i)
        blocks->push_back(nn::make<nn::sima::SimABlock>(c.embed_dim, c.num_heads, o));
    cls_attn_blocks = register_module("cls_attn_blocks",
                                      nn::make<nn::ModuleList<nn::sima::ClassAttentionBlock>>());
    for (int64_t i = 0; i < c.cls_attn_layers; ++i)
        cls_attn_blocks->push_back(
            nn::make<nn::sima::ClassAttentionBlock>(c.embed_dim, c.num_heads, o));
    norm = register_module("norm", nn::make<nn::LayerNorm>(Shape{c.embed_dim}, c.norm_eps));
    if (c.num_classes > 0) {
        head = register_module("head", nn::make<nn::Linear>(c.embed_dim, c.num_classes));
    } else {
        head = register_module("head", nn::make<nn::Identity>());
    }
    pos_embeder =
        register_module("pos_embeder", nn::make<PositionalEncodingFourier>(32, c.embed_dim));
    init_weights();
}

void SimAVisionTransformer::init_weights() {
    // Official _init_weights: every Linear trunc-normal(0.02) with zero bias; LayerNorm,
    // convs and BatchNorm keep their defaults; cls_token trunc-normal(0.02).
    nn::init::trunc_normal_(cls_token, 0.0, 0.02);
    for (auto& [name, module] : named_modules()) {
        auto* fc = dynamic_cast<nn::Linear*>(module);
        if (!fc) continue;
        nn::init::trunc_normal_(fc->weight, 0.0, 0.02);
        if (fc->bias.defined()) nn::init::zeros_(fc->bias);
    }
}

Tensor SimAVisionTransformer::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == config_.in_chans, kName, "expects x (B, ",
                config_.in_chans, ", H, W), got shape ", x.shape());
    Tensor grid = patch_embed->forward(x);  // (B, E, Hp, Wp)
    int64_t hp = grid.size(2), wp = grid.size(3);
    Tensor tokens = grid.flatten(2).transpose(1, 2);  // (B, Hp Wp, E), row-major
    if (config_.use_pos) {
        // The projection of the constant features is the same for every sample: computed once
        // at batch 1 and broadcast.
        tokens = add(tokens, pos_embeder->forward(hp, wp).flatten(2).transpose(1, 2));
    }
    const int64_t every = config_.grad_checkpointing;
    int64_t index = 0;
    for (const auto& block : *blocks)
        tokens = nn::checkpoint_every(
            every, index++,
            [block, hp, wp](const std::vector<Tensor>& in) {
                return block->forward(in[0], hp, wp);
            },
            {tokens}, block->parameters());
    tokens = nn::prepend_token(tokens, cls_token);
    for (const auto& block : *cls_attn_blocks)
        tokens = nn::checkpoint_every(
            every, index++,
            [block](const std::vector<Tensor>& in) { return block->forward(in[0]); }, {tokens},
            block->parameters());
    // LayerNorm acts per token: normalising only the class token gives the same result.
    return head->forward(norm->forward(tokens.select(1, 0)));
}

}  // namespace lumen::models
