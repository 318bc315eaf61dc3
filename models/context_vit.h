// The ViT models of the context-length study (Hooper & Xue, Sec. 3; the paper's backbone_vit.py and
// enhance_heads.py over MONAI 1.3.0): the ViT backbone with its token-mixer slot (attention,
// Hyena or MambaVision), the paper's UNETR head for patch sizes 2-32, the Tanh linear head,
// and the whole encoder-decoder model on (B, C, T, H, W) inputs (T = 1 for 2-D data).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/container.h"
#include "nn/context/unetr_blocks.h"
#include "nn/context/vit_blocks.h"

namespace lumen::models {

// The backbone's settings (MONAI ViT keyword arguments as the paper passes them). ViT-Small:
// hidden 384, mlp_dim 1536, 12 layers, 6 heads; isotropic patches (also along D in 3-D).
struct ContextViTConfig {
    int64_t in_channels = 1;
    std::vector<int64_t> img_size = {224, 224};  // (H, W) or (D, H, W); one value = isotropic
    int64_t patch_size = 16;
    int64_t hidden_size = 384;
    int64_t mlp_dim = 1536;
    int64_t num_layers = 12;
    int64_t num_heads = 6;
    int spatial_dims = 2;
    bool classification = false;  // with mixer "attn": a cls token (zeros init) is prepended
    nn::context::MixerOptions mixer;
    // k > 0: every k-th block recomputes its forward in backward (nn/checkpoint.h).
    int64_t grad_checkpointing = 0;
};

// forward_hidden(x (B, in, *img)) -> [x, h_1, ..., h_L, norm(h_L)], h_i the raw block outputs
// (B, N (+1 with the cls token), hidden). The position table starts trunc-normal(0.02) for
// attention and at zero for the other mixers (MONAI pos_embed "none" still owns and adds it).
// Children patch_embedding, blocks.i, norm (LayerNorm eps 1e-5), cls_token (1, 1, hidden).
// Throws [ViT] for a wrong input; the pieces throw for bad sizes.
class ContextViT : public nn::Module {
  public:
    explicit ContextViT(const ContextViTConfig& config);
    std::vector<Tensor> forward_hidden(const Tensor& x);
    // norm(h_L).
    Tensor forward(const Tensor& x) override { return forward_hidden(x).back(); }

    std::shared_ptr<nn::context::PatchEmbeddingBlock> patch_embedding;
    std::shared_ptr<nn::ModuleList<nn::context::TransformerBlock>> blocks;
    std::shared_ptr<nn::LayerNorm> norm;
    Tensor cls_token;  // undefined unless classification with attention
    ContextViTConfig config;
};

// The paper's UNETR head (2.7): per in-plane patch size p the PrUp depths (n2, n3, n4) and the
// UpBlock kernels (u1, u2, u3, u4) (p = 2: 0 0 0 / 1 1 1 2; 4: 1 1 0 / 1 1 2 2; 8: 2 1 0 /
// 1 2 2 2; 16: 2 1 0 / 2 2 2 2; 32: 2 1 0 / 4 2 2 2). Throws [ViTUNETR] for another p.
struct UnetrLayout {
    int64_t n2, n3, n4, u1, u2, u3, u4;
};
UnetrLayout unetr_layout(int64_t patch_size);

// enc1 = encoder1(x); enc2..4 = encoder2..4(proj(h_4)), (proj(h_7)), (proj(h_10));
// d3 = decoder5(proj(norm(h_L)), enc4); d2 = decoder4(d3, enc3); d1 = decoder3(d2, enc2);
// y = out(decoder2(d1, enc1)), proj(h) = h (B, N, hidden) -> (B, hidden, *grid).
// feature size fs: encoder1 in -> fs, encoder2/3/4 hidden -> 2fs/4fs/8fs, decoder5
// hidden -> 8fs, decoder4 8fs -> 4fs, decoder3 4fs -> 2fs, decoder2 2fs -> fs, out fs -> out.
// forward(hidden) takes ContextViT::forward_hidden's list (needs num_layers >= 10) ->
// (B, out_channels, *img). Throws [ViTUNETR] for a list too short or tokens off the grid.
// Checkpointing: the head's blocks encoder1..4, decoder5..2 continue the backbone's block count
// (first_block = num_layers), so grad_checkpointing k recomputes every k-th of backbone and head
// together; the full-resolution blocks hold most of the activations of a dense model.
class ViTUNETR : public nn::Module {
  public:
    ViTUNETR(int64_t in_channels, int64_t out_channels, std::vector<int64_t> img_size,
             int64_t patch_size, int64_t hidden_size, int spatial_dims = 2,
             int64_t feature_size = 32);
    Tensor forward(const std::vector<Tensor>& hidden);

    std::shared_ptr<nn::context::UnetrBasicBlock> encoder1;
    std::shared_ptr<nn::context::UnetrPrUpBlock> encoder2, encoder3, encoder4;
    std::shared_ptr<nn::context::UnetrUpBlock> decoder5, decoder4, decoder3, decoder2;
    std::shared_ptr<nn::context::UnetOutBlock> out;
    std::vector<int64_t> grid;
    int64_t hidden_size;
    int64_t grad_checkpointing = 0, first_block = 0;

  private:
    Tensor proj_feat(const Tensor& tokens) const;
};

// y = tanh(classification_head.0(v)), v = norm(h_L)[:, 0] (cls token) or the token mean.
// forward(hidden) -> (B, num_classes).
class ViTLinear : public nn::Module {
  public:
    ViTLinear(int64_t hidden_size, int64_t num_classes, bool use_cls_token = true);
    Tensor forward(const std::vector<Tensor>& hidden);
    std::shared_ptr<nn::Sequential> classification_head;
    bool use_cls_token;
};

// The whole model (the repo's EncoderDecoderModel with a ViT): keys encoder.* and decoder.*.
// decoder "unetr" (segmentation / denoising) or "linear" (classification: the backbone gets a
// cls token when the mixer is attention). Paper: feature_size 32, ViT-Small sizes.
struct ContextViTModelConfig {
    std::string decoder = "unetr";
    int64_t in_channels = 1, out_channels = 2;
    int64_t time = 1, height = 224, width = 224;  // T = 1: 2-D
    int64_t patch_size = 16;
    int64_t hidden_size = 384, mlp_dim = 1536, num_layers = 12, num_heads = 6;
    int64_t feature_size = 32;
    nn::context::MixerOptions mixer;
    int64_t grad_checkpointing = 0;  // ContextViTConfig::grad_checkpointing
    // The backbone's settings (2-D when time == 1, else 3-D over (T, H, W)).
    ContextViTConfig backbone() const;
};

// forward(x (B, in, T, H, W)) -> (B, out, T, H, W) (unetr; 2-D models squeeze T = 1 before the
// backbone and restore it) or (B, out) (linear). Throws [ContextViTModel] for an unknown decoder
// or a wrong input shape.
class ContextViTModel : public nn::Module {
  public:
    explicit ContextViTModel(const ContextViTModelConfig& config);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<ContextViT> encoder;
    std::shared_ptr<ViTUNETR> unetr;    // decoder "unetr"
    std::shared_ptr<ViTLinear> linear;  // decoder "linear"
    ContextViTModelConfig config;
};

}  // namespace lumen::models
