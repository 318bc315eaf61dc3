// Swin's tokenizer and down-sampler (MONAI swin_unetr.py as copied by the context-length
// paper): PatchEmbed (pad to a multiple of the patch, strided convolution, no norm) and
// PatchMergingV2 (2x2(x2) neighbourhoods concatenated, LayerNorm, linear).
#pragma once

#include <memory>
#include <vector>

#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::swin {

// y = Conv(in_chans -> embed_dim, kernel = stride = patch_size, bias)(x zero-padded at the end
// of each spatial dim to a multiple of its patch size).
// Shapes: x (B, in_chans, *S) with S = (H, W) or (D, H, W) -> (B, embed_dim, *ceil(S / p)),
// channels-first. patch_size has one entry per spatial dim (or one for all).
// Parameters proj.weight (embed_dim, in_chans, *p), proj.bias (embed_dim); PyTorch's default
// init. Throws [PatchEmbed] for a wrong input or non-positive sizes.
class PatchEmbed : public Module {
  public:
    PatchEmbed(std::vector<int64_t> patch_size, int64_t in_chans, int64_t embed_dim,
               int64_t spatial_dims);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<Conv> proj;
    std::vector<int64_t> patch_size;
    int64_t spatial_dims;
};

// Zero-pads odd spatial sizes by one at their end, concatenates on channels the 2^k sub-grids
// x[:, a::2, b::2(, c::2)] in the order (h, w) = (0,0), (1,0), (0,1), (1,1) for 2-D and
// (d, h, w) lexicographic (0,0,0), (0,0,1), ..., (1,1,1) for 3-D, then norm = LayerNorm(2^k dim)
// and reduction = Linear(2^k dim -> 2 dim, no bias).
// Shapes: x (B, *S, dim) channels-last -> (B, *ceil(S / 2), 2 dim).
// Throws [PatchMergingV2] for a wrong input.
class PatchMergingV2 : public Module {
  public:
    PatchMergingV2(int64_t dim, int64_t spatial_dims);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<Linear> reduction;
    std::shared_ptr<LayerNorm> norm;
    int64_t dim, spatial_dims;
};

}  // namespace lumen::nn::swin
