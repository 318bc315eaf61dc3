// The official SimA vision transformer (Koohpayegani & Pirsiavash, "SimA: Simple Softmax-free
// Attention for Vision Transformers"; UCDvision/sima sima.py @3ec3b8e, an XCiT skeleton): conv +
// BatchNorm patch embedding, Fourier positional encoding, SimABlocks on the patch tokens,
// class-attention layers, head. The blocks are in nn/sima/.
#pragma once

#include <memory>
#include <optional>

#include "nn/container.h"
#include "nn/sima/sima_block.h"

namespace lumen::models {

// patch_size 16: four stride-2 3x3 conv (pad 1, no bias) + BatchNorm stages 3 -> E/8 -> E/4 ->
// E/2 -> E with GELU between them (proj.0, proj.2, proj.4, proj.6; each .0 conv, .1 BN);
// patch_size 8: three stages 3 -> E/4 -> E/2 -> E. Shapes: x (B, in_chans, H, W) ->
// (B, E, ceil(H / ps), ceil(W / ps)) for sizes that halve exactly. Throws [ConvPatchEmbed].
class ConvPatchEmbed : public nn::Module {
  public:
    ConvPatchEmbed(int64_t patch_size, int64_t in_chans, int64_t embed_dim);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<nn::Sequential> proj;
    int64_t in_chans;
};

// XCiT's Fourier features on an H x W grid projected by token_projection (1x1 conv,
// 2 hidden_dim -> dim, with bias): with y^_i = (i+1) / (H + 1e-6) 2 pi, x^_j likewise and
// tau_k = temperature^(2 floor(k/2) / hidden_dim), channel k < hidden_dim is sin(y^/tau_k)
// (k even) or cos(y^/tau_k) (k odd), channels hidden_dim + k the same with x^. Features are
// computed in double and cast to the weight's dtype (the official code uses float32).
// Shapes: forward(H, W) -> (1, dim, H, W); only the conv receives gradients.
class PositionalEncodingFourier : public nn::Module {
  public:
    PositionalEncodingFourier(int64_t hidden_dim = 32, int64_t dim = 768,
                              double temperature = 10000.0);
    Tensor forward(int64_t H, int64_t W);
    // The constant (1, 2 hidden_dim, H, W) features.
    Tensor features(int64_t H, int64_t W, DType dtype, Device device) const;
    std::shared_ptr<nn::Conv2d> token_projection;
    int64_t hidden_dim, dim;
    double temperature;
};

// The official constructor's arguments (defaults of sima.py; the SimA-S12 model: patch 16,
// embed_dim 384, depth 12, num_heads 8, eta 1.0, tokens_norm true).
struct SimAViTConfig {
    int64_t patch_size = 16;  // 16 or 8
    int64_t in_chans = 3;
    int64_t num_classes = 1000;  // 0: no head (features)
    int64_t embed_dim = 768;
    int64_t depth = 12;
    int64_t num_heads = 12;
    double mlp_ratio = 4.0;
    bool qkv_bias = true;
    int64_t cls_attn_layers = 2;
    bool use_pos = true;
    double eta = 1.0;
    bool tokens_norm = false;
    double norm_eps = 1e-6;
    // k > 0: every k-th block recomputes its forward in backward (nn/checkpoint.h), counting
    // the depth SimA blocks and then the class-attention blocks as one list; 0: none.
    int64_t grad_checkpointing = 0;

    // Throws [SimAVisionTransformer] naming the offending field.
    void validate() const;
};

// x (B, in_chans, H, W) -> tokens (B, Hp Wp, E) row-major (+ positional encoding) -> depth x
// SimABlock(x, Hp, Wp) -> cat([cls_token, x]) -> cls_attn_layers x ClassAttentionBlock ->
// norm -> token 0 -> head. Returns logits (B, num_classes) (E when num_classes is 0); the
// official model returns (logits, logits) in training mode. Official init: Linear weights
// trunc-normal std 0.02 and biases 0, LayerNorm 1/0, cls_token trunc-normal 0.02, gammas eta,
// convs and BatchNorm PyTorch's defaults. BatchNorm uses batch statistics while training.
// Throws [SimAVisionTransformer] for an input that is not (B, in_chans, H, W).
class SimAVisionTransformer : public nn::Module {
  public:
    explicit SimAVisionTransformer(const SimAViTConfig& config);
    Tensor forward(const Tensor& x) override;
    const SimAViTConfig& config() const { return config_; }

    std::shared_ptr<ConvPatchEmbed> patch_embed;
    Tensor cls_token;  // (1, 1, E)
    std::shared_ptr<nn::ModuleList<nn::sima::SimABlock>> blocks;
    std::shared_ptr<nn::ModuleList<nn::sima::ClassAttentionBlock>> cls_attn_blocks;
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<nn::Module> head;  // Linear, or Identity without classes
    std::shared_ptr<PositionalEncodingFourier> pos_embeder;

  private:
    void init_weights();
    SimAViTConfig config_;
};

}  // namespace lumen::models
