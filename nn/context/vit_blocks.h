// The MONAI 1.3.0 ViT pieces as Hooper & Xue copy them: PatchEmbeddingBlock (conv tokenizer +
// position table), MLPBlock, SABlock (the token-mixer slot: MONAI self-attention, or a registered
// mixer such as "hyena" / "mamba") and the pre-norm TransformerBlock. The backbone and heads are in
// models/context_vit.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/attention/attention.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::context {

// y = ConvNd(in -> hidden, kernel = stride = p, bias)(x) flattened row-major to (B, N, hidden)
// + position_embeddings (1, N, hidden), N = prod(img_size / p). Shapes: x (B, in, *img_size)
// (2-D or 3-D per spatial_dims). Parameters patch_embeddings.weight/bias,
// position_embeddings. Init: conv PyTorch default; the table trunc-normal(0.02, [-2, 2]) when
// `learnable_init` (MONAI "learnable"), zeros otherwise ("none": still trained and added).
// Throws [PatchEmbeddingBlock] for an img_size not divisible by p or an input of another shape.
class PatchEmbeddingBlock : public Module {
  public:
    PatchEmbeddingBlock(int64_t in_channels, std::vector<int64_t> img_size, int64_t patch_size,
                        int64_t hidden_size, int spatial_dims = 2, bool learnable_init = true);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<Conv> patch_embeddings;
    Tensor position_embeddings;
    std::vector<int64_t> img_size, grid;
    int64_t n_patches;
};

// y = linear2(GELU(linear1(x))) (exact erf GELU). Shapes (..., hidden) -> (..., hidden);
// linear1 (mlp_dim, hidden), linear2 (hidden, mlp_dim), both with bias.
class MLPBlock : public Module {
  public:
    MLPBlock(int64_t hidden_size, int64_t mlp_dim);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<Linear> linear1, linear2;
};

// What fills the SABlock slot. mixer "attn" is MONAI's self-attention; any other name is a
// registered nn::attention::Attention built with (hidden, num_heads) and held as child `<mixer>`:
// the paper's "hyena" (HyenaOperator(hidden, l_max, filter_order, heads, short_filter_order)) and
// "mamba" (MambaVisionMixer(hidden, d_state, d_conv, expand, dt_rank)).
struct MixerOptions {
    std::string mixer = "attn";
    bool qkv_bias = false;                                             // attn only
    int64_t l_max = 66000, filter_order = 64, short_filter_order = 5;  // hyena
    int64_t d_state = 8, d_conv = 3, expand = 1;                       // mamba
    std::optional<int64_t> dt_rank;  // mamba; nullopt = ceil(hidden / 16)
};

// MONAI SABlock. attn: qkv = x W_qkv^T (B, N, 3, heads, hd) -> q, k, v (B, heads, N, hd);
// y = out_proj(softmax(q k^T hd^-1/2) v merged head-major). Parameters qkv.weight
// (3 hidden, hidden) (+ qkv.bias with qkv_bias), out_proj.weight/bias. Time O(N^2 hidden),
// memory O(heads N^2). Other mixers: child `<mixer>`, forward delegated (context passed on).
// Shapes: x (B, N, hidden) -> (B, N, hidden). Throws [SABlock] for hidden not divisible by
// num_heads or a wrong input; the registry throws for an unknown mixer name.
class SABlock : public attention::Attention {
  public:
    SABlock(int64_t hidden_size, int64_t num_heads, const MixerOptions& options = {});
    using attention::Attention::forward;
    Tensor forward(const Tensor& x, const attention::AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, out_proj;        // attn only
    std::shared_ptr<attention::Attention> mixer;  // other mixers only
    int64_t hidden_size, num_heads, head_dim;
    MixerOptions options;
    bool fused = true;  // attention::SoftmaxAttention::fused (nn/attention/mhsa.h)
};

// The pre-norm MONAI TransformerBlock: x = x + attn(norm1(x)); x = x + mlp(norm2(x)),
// LayerNorm eps 1e-5. Children mlp (MLPBlock), norm1, attn (SABlock), norm2.
// Shapes: x (B, N, hidden) -> (B, N, hidden).
class TransformerBlock : public Module {
  public:
    TransformerBlock(int64_t hidden_size, int64_t mlp_dim, int64_t num_heads,
                     const MixerOptions& options = {});
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<MLPBlock> mlp;
    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<SABlock> attn;
};

}  // namespace lumen::nn::context
