// The ViT of Khader et al. ("softmax-free" transformers for medical images, Sec. 2.1 and 3.1) in
// the layout of lucidrains/vit-pytorch (vit.py @3e5d1be, vit_3d.py @8208c85): pre-norm FeedForward
// and Transformer with a final norm, and the ViT for 2-D images, 3-D volumes and bags of
// whole-slide tile features, its attention picked by name (softmax, seqnorm, sima).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/container.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::models {

// net.0 LayerNorm(dim) -> net.1 Linear(dim, hidden) -> GELU (erf) -> Dropout -> net.4
// Linear(hidden, dim) -> Dropout. Shapes: (..., dim) -> (..., dim).
class FeedForward : public nn::Module {
  public:
    FeedForward(int64_t dim, int64_t hidden_dim, double dropout = 0.0);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<nn::Sequential> net;
};

// The softmax-free paper's ViT's settings (the reference constructor's keyword arguments). Paper
// sizes (Table 1, dim_head 64, 2 classes): ViT_2D 224^2 patch 16: dim 1024, depth 8, heads 8,
// mlp_dim 1024 (34,609,666 parameters softmax / 34,634,242 seqnorm); ViT_3D 1 x 32 x 256^2,
// patch 16 x 16 x 4: same widths (36,768,770 / 36,793,346); ViT_WSI bag of 2048-d features:
// dim 512, depth 2, heads 8, mlp_dim 512 (4,209,666 / 4,215,810). SimA counts equal softmax's.
struct SfreeViTConfig {
    std::string tokenizer = "patch2d";  // "patch2d", "patch3d" or "bag"
    std::string attn = "softmax";       // "softmax", "seqnorm" or "sima" (see attention_name)
    int64_t num_classes = 2;
    int64_t dim = 1024;  // D', the token width
    int64_t depth = 8;
    int64_t heads = 8;
    int64_t dim_head = 64;  // D = heads * dim_head
    int64_t mlp_dim = 1024;
    std::string pool = "cls";  // "cls" or "mean"
    int64_t channels = 3;
    std::vector<int64_t> image_size = {224, 224};  // [H, W] (patch tokenizers)
    std::vector<int64_t> patch_size = {16, 16};    // [p1, p2]
    int64_t frames = 0;                            // F (patch3d)
    int64_t frame_patch_size = 0;                  // pf (patch3d)
    int64_t feat_dim = 0;                          // F of the bag's features (bag)
    double dropout = 0.0;                          // attention weights, to_out, FeedForward
    double emb_dropout = 0.0;
    double seqnorm_eps = 1e-5;
    // k > 0: every k-th layer (attention + FeedForward, with both residuals) recomputes its
    // forward in backward (nn/checkpoint.h); 0: none.
    int64_t grad_checkpointing = 0;

    // Throws [SfreeViT] naming the offending field: unknown tokenizer/attn/pool, non-positive
    // sizes, image sizes not divisible by the patch sizes.
    void validate() const;
    // Tokens per input for the patch tokenizers (without the class token); 0 for bags.
    int64_t num_patches() const;
    // Features per token before the embedding: p1 p2 C, p1 p2 pf C, or feat_dim.
    int64_t patch_dim() const;
};

// The attention registry name for a config's attn: softmax -> "vitpt_softmax",
// seqnorm -> "seqnorm", sima -> "vitpt_sima". Throws [SfreeViT] for another value.
std::string attention_name(const std::string& attn);

// for each layer l: x = layers.l.0(x) + x (attention with its own LayerNorm), then
// x = layers.l.1(x) + x (FeedForward); finally norm (LayerNorm(dim)). Shapes: (B, N, dim).
class SfreeTransformer : public nn::Module {
  public:
    explicit SfreeTransformer(const SfreeViTConfig& config);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<nn::LayerNorm> norm;
    std::shared_ptr<nn::Module> layers;  // layers.l.0 attention, layers.l.1 FeedForward
    std::vector<std::shared_ptr<nn::attention::Attention>> attentions;
    std::vector<std::shared_ptr<FeedForward>> feed_forwards;
    int64_t grad_checkpointing = 0;  // SfreeViTConfig::grad_checkpointing
};

// tokens = patchify(x) (patch2d: x (B, C, H, W) -> (B, (H/p1)(W/p2), p1 p2 C), feature
// (i p2 + j) C + c; patch3d: x (B, C, F, H, W) -> (B, (F/pf)(H/p1)(W/p2), p1 p2 pf C), tokens
// ordered (f, h, w), feature ((i p2 + j) pf + t) C + c; bag: x (B, N, feat_dim) as is);
// t = LN -> Linear -> LN (to_patch_embedding.1/.2/.3); z = cat([cls_token, t]) + pos_embedding
// (none for bags); z = transformer(z); logits = mlp_head(z[:, 0]) (pool cls) or of the token
// mean. Init as vit-pytorch: Linear default, LayerNorm 1/0, cls_token and pos_embedding
// N(0, 1). Returns (B, num_classes). Throws [SfreeViT] for an input of the wrong rank or
// sizes (patch inputs must have exactly image_size / frames; bags need N >= 1).
class SfreeViT : public nn::Module {
  public:
    explicit SfreeViT(const SfreeViTConfig& config);
    Tensor forward(const Tensor& x) override;
    const SfreeViTConfig& config() const { return config_; }

    std::shared_ptr<nn::Sequential> to_patch_embedding;  // .0 patchify, .1 LN, .2 Linear, .3 LN
    Tensor pos_embedding;  // (1, num_patches + 1, dim); undefined for bags
    Tensor cls_token;      // (1, 1, dim)
    std::shared_ptr<nn::Dropout> dropout;
    std::shared_ptr<SfreeTransformer> transformer;
    std::shared_ptr<nn::Linear> mlp_head;

  private:
    void check_input(const Tensor& x) const;
    SfreeViTConfig config_;
};

// The patchify steps as functions (no parameters). Throw [patchify2d] / [patchify3d] for a
// wrong rank or sizes not divisible by the patch sizes.
Tensor patchify2d(const Tensor& x, int64_t p1, int64_t p2);
Tensor patchify3d(const Tensor& x, int64_t pf, int64_t p1, int64_t p2);

}  // namespace lumen::models
