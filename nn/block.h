// The pre-norm transformer encoder block in timm's layout (norm1, attn, norm2, mlp), with the
// norm, the attention (by registry name, nn/attention/attention.h) and the FFN chosen by
// config, and the presets of the DGSA paper and its baselines (Lygizou et al. 2025, Sec. 4.3):
// ViTBlock, DiffTransformerLayer, DGViTBlock and DGTLayer.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/container.h"

namespace lumen::nn {

struct BlockOptions {
    std::string attn_type = "mhsa";       // a registered attention ("mhsa", "diff", "dgsa", ...)
    std::string mlp_type = "gelu";        // "gelu": Mlp (exact GELU); "swiglu": packed SwiGLU
    std::string norm_type = "layernorm";  // "layernorm" (affine) or "rmsnorm" (weight only)
    double norm_eps = 1e-6;
    // gelu: hidden width, -1 = int(mlp_ratio * dim). swiglu: gated width (fc1 has twice it),
    // -1 = floor(mlp_ratio * dim / 2), the expansion k being mlp_ratio (a 1e-9 guard keeps
    // k = 16.0 / 3 from flooring an exact integer such as 16/3 * 24 / 2 = 64 to 63).
    int64_t mlp_hidden = -1;
    double mlp_ratio = 4.0;
    bool qkv_bias = true;  // handed to the attention (the differential variants have none)
    bool mlp_bias = true;
    double drop = 0.0;       // attention output projection and the FFN dropouts
    int ffn_dropouts = 2;    // swiglu: 2 = drop1 and drop2, 1 = drop1 only (the DGViT/DGT recipe)
    double attn_drop = 0.0;  // on the attention map
    double drop_path = 0.0;  // stochastic depth on both residual branches
    // The attention's own options (lambda_init, q_residual, causal, rope, ...); see its factory.
    std::vector<std::pair<std::string, double>> attn_options;
};

// x = x + drop_path1(attn(norm1(x), context)); x = x + drop_path2(mlp(norm2(x))).
// Shapes: x (B, N, dim) -> (B, N, dim). Parameter names: norm1.*, attn.*, norm2.*,
// mlp.fc1.*, mlp.fc2.* (timm's, and the reference's). `layer_index` is the block's 0-based
// position in its stack (it sets lambda_init of the differential attentions).
// Throws [Block] for an unknown norm or mlp type or a non-positive width; the attention
// throws for an unknown variant (naming the registered ones) or a wrong input.
class Block : public Module {
  public:
    Block(int64_t dim, int64_t num_heads, int64_t layer_index = 0,
          const BlockOptions& options = {});
    Tensor forward(const Tensor& x, const attention::AttentionContext& context);
    Tensor forward(const Tensor& x) override { return forward(x, attention::AttentionContext{}); }
    std::string extra_repr() const override;

    std::shared_ptr<Module> norm1, norm2, mlp;
    std::shared_ptr<attention::Attention> attn;
    std::shared_ptr<DropPath> drop_path1, drop_path2;
    int64_t dim, num_heads, layer_index;
    BlockOptions options;
};

// ViT encoder block (timm Block): LayerNorm eps 1e-6, "mhsa" with qkv bias, GELU Mlp 4 dim.
BlockOptions vit_block_options();
// Differential Transformer layer: RMSNorm eps 1e-5, "diff", packed SwiGLU of expansion k
// (gated width floor(k dim / 2); the original 8/3 dim is k = 16/3).
BlockOptions diff_transformer_layer_options(double k = 16.0 / 3.0);
// DGViT block: LayerNorm eps 1e-6, "dgsa" with lambda_init 0.8 and the query residual,
// SwiGLU of expansion k (4, the paper's best, or 2).
BlockOptions dgvit_block_options(double k = 4.0);
// DGT layer: RMSNorm eps 1e-5, "dgsa" with lambda_init 0.8 and no residual, SwiGLU of
// expansion k (2, 4 or 16/3).
BlockOptions dgt_layer_options(double k = 16.0 / 3.0);

// "layernorm" -> LayerNorm(dim, eps), "rmsnorm" -> RMSNorm(dim, eps); throws [<who>] otherwise.
std::shared_ptr<Module> make_norm(const std::string& type, int64_t dim, double eps,
                                  const std::string& who);

// x through every block in order with one context; grad_checkpointing k > 0 recomputes every
// k-th block in backward (nn::checkpoint_every). The model skeletons' block loop.
Tensor run_blocks(const ModuleList<Block>& blocks, Tensor x,
                  const attention::AttentionContext& context, int64_t grad_checkpointing);

}  // namespace lumen::nn
