// The Vision Transformer classifier in timm's VisionTransformer layout (class token kept in
// attention, learned position embedding, pre-norm blocks, final norm, linear head on the class
// token), with the blocks chosen by config: ViT (timm's VisionTransformer) and DGViT (Lygizou et
// al. 2025, Sec. 4.3) are presets of the same skeleton; timm's initialisation (3.4).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/block.h"
#include "nn/container.h"
#include "nn/embed.h"
#include "nn/linear.h"

namespace lumen::models {

struct ViTConfig {
    std::string name = "ViT";  // the type name in messages and str() ("ViT", "DGViT")
    std::vector<int64_t> img_size = {32, 32};  // (H, W); the position embedding is sized by it
    int64_t patch_size = 4;
    int64_t in_chans = 3;
    int64_t num_classes = 10;
    int64_t embed_dim = 256;
    int64_t depth = 8;  // number of blocks
    int64_t num_heads = 8;
    // Every block (block i gets layer_index i); block.norm_eps is also the final norm's eps.
    nn::BlockOptions block = nn::vit_block_options();
    double pos_drop = 0.0;  // dropout on the embedded tokens
    // "cls": a class token, the head reads it (timm's default); "mean": no class token, the
    // head reads the mean of the patch tokens (timm's class_token=False, global_pool="avg").
    // The variants of vit_mean_pool_attention() need "mean".
    std::string pool = "cls";
    // Activation checkpointing (nn/checkpoint.h): > 0 makes every k-th block (blocks k-1,
    // 2k-1, ...) recompute its forward during backward instead of keeping its activations;
    // 0 keeps them all.
    int64_t grad_checkpointing = 0;

    // Throws [<name>] for a non-positive size, an image not divisible into patches, an
    // attn_type outside vit_attention_types(), an unknown pool, or pool "cls" with a variant of
    // vit_mean_pool_attention() (naming attn_type, pool and the reason).
    void validate() const;
};

// The attention variants (block.attn_type) a ViT takes: every registered one
// (nn::attention::attention_names(), variants registered at run time included), with pool "mean"
// for those of vit_mean_pool_attention(). pvt_sra takes the class token itself (its prefix tokens
// join the reduced keys unpooled).
std::vector<std::string> vit_attention_types();

// The variants that cannot take a class token, so a ViT with one of them needs pool "mean":
// gdla and utnet (convolutions on the token map: local mixing, the q/k/v projections),
// swin_window (windows and relative positions on the grid; Swin classifies by the token mean
// instead of a class token), hyena and mamba (causal along the tokens: a class token in front
// would never see the patches; the context-length study's models use the token mean for them).
const std::vector<std::string>& vit_mean_pool_attention();

// Seed 004's ViT baseline (Table 3): D 256, depth 8, 8 heads, patch 4, GELU MLP ratio 4,
// dropout `drop` on the embeddings, the attention projection and the MLP (6.35M parameters
// on CIFAR-10).
ViTConfig vit_config(int64_t num_classes = 10, std::vector<int64_t> img_size = {32, 32},
                     int64_t in_chans = 3, double drop = 0.05);
// Seed 004's DGViT: the same skeleton with DGViT blocks (M-DGSA, lambda_init 0.8, query
// residual; packed SwiGLU of expansion k = 4 (best) or 2, gated width k D / 2); `ffn_dropouts`
// 2 = the paper's "x2 dropout" setting. 5.31M (k 4) / 3.73M (k 2) parameters on CIFAR-10.
ViTConfig dgvit_config(int64_t num_classes = 10, std::vector<int64_t> img_size = {32, 32},
                       int64_t in_chans = 3, double k = 4.0, double drop = 0.05,
                       int ffn_dropouts = 2);

// img (B, C, H, W) -> patch_embed.proj (Conv2d p x p, stride p) -> (B, Np, D) row-major
// patches -> cat(cls_token, patches) + pos_embed -> pos_drop -> blocks.0..depth-1 -> norm ->
// head(x[:, 0]) -> logits (B, num_classes); with pool "mean" no cls_token, pos_embed
// (1, Np, D) and head(mean of x over the tokens). The blocks get AttentionContext{grid (H/p,
// W/p), prefix_tokens 1 (cls) or 0 (mean)}. With attn_type "utnet" and no reduce_size in
// block.attn_options, the blocks use the largest r <= 8 (the variant's default) that divides
// both grid sides: UTNet's relative position bias needs it (a 28 x 28 image in patches of 4
// is a 7 x 7 grid).
// Parameters: patch_embed.proj.{weight, bias}, cls_token (1, 1, D), pos_embed (1, 1+Np, D),
// blocks.i.*, norm.*, head.{weight, bias}. Init (timm): every Linear weight trunc_normal(0.02)
// with zero bias, pos_embed trunc_normal(0.02), cls_token N(0, 1e-6), norms (1, 0), the patch
// conv PyTorch's default; other parameters (Diff lambdas) keep their module's init.
// Throws [<name>] for an input other than (B, in_chans, img_size).
class ViT : public nn::Module {
  public:
    explicit ViT(const ViTConfig& config);
    Tensor forward(const Tensor& img) override;
    // The normalised tokens (B, 1 + Np, D) before the head ((B, Np, D) with pool "mean").
    Tensor forward_features(const Tensor& img);
    const ViTConfig& config() const { return config_; }

    std::shared_ptr<nn::PatchEmbed> patch_embed;
    Tensor cls_token, pos_embed;
    std::shared_ptr<nn::Dropout> pos_drop;
    std::shared_ptr<nn::ModuleList<nn::Block>> blocks;
    std::shared_ptr<nn::Module> norm;
    std::shared_ptr<nn::Linear> head;

  private:
    void init_weights();
    ViTConfig config_;
};

}  // namespace lumen::models
