// The Swin transformer block and stage (MONAI SwinTransformerBlock / BasicLayer as copied by
// the context-length paper): pre-norm shifted-window attention (or a Hyena / MambaVision mixer per
// window) and a GELU MLP, then PatchMergingV2 at the end of every stage. Window geometry is in
// nn/attention/window.h, the attention in nn/attention/window_attention.h.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/attention/window_attention.h"
#include "nn/container.h"
#include "nn/linear.h"
#include "nn/norm.h"
#include "nn/swin/patch.h"

namespace lumen::nn::swin {

// MONAI MLPBlock: y = linear2(GELU(linear1(x))), exact GELU, no dropout.
// Shapes: (..., dim) -> (..., dim); linear1 (hidden, dim), linear2 (dim, hidden), with biases.
class MLPBlock : public Module {
  public:
    MLPBlock(int64_t dim, int64_t hidden);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<Linear> linear1, linear2;
};

// The token mixer of a Swin stage: "attn" (window attention, shifted in odd blocks) or a
// registered variant run per window ("hyena", "mamba"; never shifted: Hooper & Xue, Sec. 3
// footnote), with that variant's options (e.g. {"l_max", 66000}, {"filter_order", 64}).
struct SwinMixer {
    std::string type = "attn";
    std::vector<std::pair<std::string, double>> options;
};

// x = x + window_mix(norm1(x)); x = x + mlp(norm2(x)), with (w, s) = get_window_size(S,
// window_size, shift_size): norm1(x) is zero-padded at the end of each spatial dim to a
// multiple of w (the padded tokens are not masked), rolled by -s when any s > 0, windowed,
// mixed (with the mask when shifted), reversed, rolled back and cropped.
// Shapes: x (B, *S, dim) channels-last with S = (H, W) or (D, H, W) -> the same; mask (nW, n, n)
// for the padded grid (BasicLayer builds it; the one-argument forward builds it itself).
// Parameters: norm1.*, attn.* (WindowAttention), norm2.*, mlp.linear1/linear2.*.
// Throws [SwinTransformerBlock] for a wrong input, a non-zero shift with a non-"attn" mixer, or a
// shifted block called with a mask that does not fit.
class SwinTransformerBlock : public Module {
  public:
    SwinTransformerBlock(int64_t dim, int64_t num_heads, std::vector<int64_t> window_size,
                         std::vector<int64_t> shift_size, double mlp_ratio = 4.0,
                         bool qkv_bias = true, SwinMixer mixer = {});
    Tensor forward(const Tensor& x, const Tensor& mask);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<attention::WindowAttention> attn;
    std::shared_ptr<MLPBlock> mlp;
    int64_t dim;
    std::vector<int64_t> window_size, shift_size;
};

// One Swin stage on a channels-first map: `depth` blocks (block i shifted by window // 2 when i
// is odd and the mixer is "attn"), the mask of the padded grid built once for all blocks, then
// `downsample` = PatchMergingV2 (always present in the paper's code).
// Shapes: x (B, dim, *S) -> (B, 2 dim, *ceil(S / 2)). Parameters blocks.<i>.*, downsample.*.
// Throws [BasicLayer] for a wrong input.
class BasicLayer : public Module {
  public:
    BasicLayer(int64_t dim, int64_t depth, int64_t num_heads, std::vector<int64_t> window_size,
               double mlp_ratio = 4.0, bool qkv_bias = true, SwinMixer mixer = {});
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<ModuleList<SwinTransformerBlock>> blocks;
    std::shared_ptr<PatchMergingV2> downsample;
    int64_t dim;
    std::vector<int64_t> window_size, shift_size;  // shift_size: the odd blocks' shift
    // Activation checkpointing (nn/checkpoint.h): block i is block first_block + i of the
    // model's count, checkpointed when it is one of every grad_checkpointing-th; 0: none.
    int64_t grad_checkpointing = 0, first_block = 0;

  private:
    attention::MaskCache masks_;
};

}  // namespace lumen::nn::swin
