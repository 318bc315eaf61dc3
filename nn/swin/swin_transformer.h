// The Swin backbone of the context-length paper (MONAI SwinTransformer as copied in its repo,
// Hooper & Xue, Sec. 3): PatchEmbed, four BasicLayer stages each ending in PatchMergingV2, and the
// channel LayerNorm (no affine) of every level, 2-D or 3-D.
#pragma once

#include <memory>
#include <vector>

#include "nn/container.h"
#include "nn/swin/patch.h"
#include "nn/swin/swin_block.h"

namespace lumen::nn::swin {

// LayerNorm over the channels of a channels-first map without affine parameters (eps 1e-5).
// Shapes: (B, C, *S) -> (B, C, *S).
Tensor channel_layer_norm(const Tensor& x);

// The paper's Swin-Tiny: embed 96, depths (2, 2, 6, 2), heads (3, 6, 12, 24), patch 2,
// window 8 (isotropic, 3-D too), MLP ratio 4, qkv bias.
struct SwinOptions {
    int64_t in_chans = 1;
    int64_t embed_dim = 96;
    std::vector<int64_t> window_size = {8};  // one entry for all spatial dims, or one per dim
    std::vector<int64_t> patch_size = {2};
    std::vector<int64_t> depths = {2, 2, 6, 2};
    std::vector<int64_t> num_heads = {3, 6, 12, 24};
    double mlp_ratio = 4.0;
    bool qkv_bias = true;
    int64_t spatial_dims = 2;
    SwinMixer mixer;  // "attn", or "hyena" / "mamba" per window (never shifted)
    // k > 0: every k-th block recomputes its forward in backward (nn/checkpoint.h), the blocks
    // counted across the stages as one list (stage 1's first); 0: none.
    int64_t grad_checkpointing = 0;
};

// x0 = patch_embed(x); x_i = layers<i>.0(x_{i-1}) for i = 1..4 (stage i works at E 2^(i-1)
// channels and outputs E 2^i channels at ceil(/2) the resolution).
// Shapes: x (B, in_chans, *S) -> {LN(x0), ..., LN(x4)}, channels E, 2E, 4E, 8E, 16E at
// 1/p, 1/2p, ... 1/16p of S (ceil at every step), LN = channel_layer_norm.
// Parameters patch_embed.proj.*, layers<i>.0.blocks.<j>.*, layers<i>.0.downsample.*.
// Init (MONAI): Linear/Conv PyTorch defaults, LayerNorm 1 / 0, bias tables trunc-normal(0.02).
// Throws [SwinTransformer] for options that do not fit (4 depths and heads, 2 or 3 dims).
class SwinTransformer : public Module {
  public:
    explicit SwinTransformer(const SwinOptions& options);
    std::vector<Tensor> forward_features(const Tensor& x);
    // The last level, LN(x4).
    Tensor forward(const Tensor& x) override { return forward_features(x).back(); }

    std::shared_ptr<PatchEmbed> patch_embed;
    std::vector<std::shared_ptr<ModuleList<BasicLayer>>> layers;  // layers1 .. layers4
    SwinOptions options;
};

}  // namespace lumen::nn::swin
