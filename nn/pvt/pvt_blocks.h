// The PVTv2 encoder's building blocks in timm's layout and key names (timm pvt_v2.py; Wang et al.
// 2022): the overlapping patch embedding, the MLP with a depthwise conv, the block and the stage.
// The spatial-reduction attention is in nn/attention/spatial_reduction_attention.h, the whole
// encoder in models/pvt_v2.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/activation.h"
#include "nn/attention/spatial_reduction_attention.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::pvt {

// y = LN(conv_kxk_stride_s_pad_k/2(x)) with the LayerNorm (eps 1e-5) over channels, NHWC.
// Parameters proj.{weight (E, in, k, k), bias (E)}, norm.{weight, bias} (E).
// Shapes: x (B, in, H, W) -> (B, H', W', E), H' = floor((H + 2 (k/2) - k) / s) + 1.
// PVTv2 uses k 7 / s 4 for the stem and k 3 / s 2 between stages.
// Throws [OverlapPatchEmbed] for non-positive sizes or a wrong input shape.
class OverlapPatchEmbed : public Module {
  public:
    OverlapPatchEmbed(int64_t patch_size, int64_t stride, int64_t in_chans, int64_t embed_dim);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    std::shared_ptr<Conv2d> proj;
    std::shared_ptr<LayerNorm> norm;
    int64_t patch_size, stride, in_chans, embed_dim;
};

// timm MlpWithDepthwiseConv: y = fc2(GELU(dwconv([ReLU](fc1(x) as map)) as tokens)), GELU exact,
// dwconv a depthwise 3x3 (pad 1, bias), the ReLU only with extra_relu (the "-li" variant).
// Parameters fc1.{weight (hidden, C), bias}, dwconv.{weight (hidden, 1, 3, 3), bias},
// fc2.{weight (C, hidden), bias}. Shapes: x (B, H*W, C) -> (B, H*W, C).
// Throws [MlpWithDepthwiseConv] for a wrong shape.
class MlpWithDepthwiseConv : public Module {
  public:
    MlpWithDepthwiseConv(int64_t in_features, int64_t hidden_features, bool extra_relu = false,
                         double drop = 0.0);
    Tensor forward(const Tensor& x, int64_t height, int64_t width);
    std::string extra_repr() const override;

    std::shared_ptr<Linear> fc1, fc2;
    std::shared_ptr<Conv2d> dwconv;
    std::shared_ptr<Dropout> drop;  // after the GELU and after fc2 (timm's single `drop`)
    int64_t in_features, hidden_features;
    bool extra_relu;
};

// Settings of one PVTv2 block beyond its width and heads.
struct PVTBlockOptions {
    double mlp_ratio = 4.0;  // hidden = int(dim * mlp_ratio)
    int64_t sr_ratio = 1;
    bool linear = false;  // "-li": pooled keys/values and the MLP's extra ReLU
    bool qkv_bias = true;
    double proj_drop = 0.0;  // attention output and MLP dropouts
    double attn_drop = 0.0;
    double drop_path = 0.0;  // stochastic depth on both residual branches
};

// timm pvt_v2.Block: x = x + drop_path(attn(norm1(x), H, W)); x = x + drop_path(mlp(norm2(x),
// H, W)), both LayerNorms eps 1e-6. Keys norm1.*, attn.* (SRAttention), norm2.*, mlp.*.
// Shapes: x (B, H*W, C) -> (B, H*W, C). Throws [PVTBlock] for a wrong shape (the attention
// and MLP throw for their own errors).
class PVTBlock : public Module {
  public:
    PVTBlock(int64_t dim, int64_t num_heads, const PVTBlockOptions& options = {});
    Tensor forward(const Tensor& x, int64_t height, int64_t width);
    std::string extra_repr() const override;

    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<attention::SRAttention> attn;
    std::shared_ptr<MlpWithDepthwiseConv> mlp;
    std::shared_ptr<DropPath> drop_path1, drop_path2;
    int64_t dim, num_heads;
};

// timm PyramidVisionTransformerStage: [downsample = OverlapPatchEmbed(3, 2, dim, dim_out)] ->
// `depth` PVTBlocks of dim_out -> norm = LayerNorm(dim_out, eps 1e-6) -> NCHW. Keys
// downsample.*, blocks.{i}.*, norm.*. drop_paths gives each block's rate (empty: all 0).
// Shapes: with downsample x (B, dim, H, W) -> (B, dim_out, ceil(H/2), ceil(W/2)); without, x is
// the stem's NHWC output (B, H, W, dim_out) -> (B, dim_out, H, W) (timm's convention).
// Throws [PVTStage] for dim != dim_out without downsample, a drop_paths list of the wrong
// length, or a wrong input shape.
class PVTStage : public Module {
  public:
    PVTStage(int64_t dim, int64_t dim_out, int64_t depth, bool downsample, int64_t num_heads,
             const PVTBlockOptions& options = {}, const std::vector<double>& drop_paths = {});
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    std::shared_ptr<OverlapPatchEmbed> downsample;  // null for the first stage
    std::shared_ptr<ModuleList<PVTBlock>> blocks;
    std::shared_ptr<LayerNorm> norm;
    int64_t dim, dim_out;
    // Activation checkpointing (nn/checkpoint.h): block i is block first_block + i of the
    // model's count, checkpointed when it is one of every grad_checkpointing-th; 0: none.
    int64_t grad_checkpointing = 0, first_block = 0;
};

}  // namespace lumen::nn::pvt
