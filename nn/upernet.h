// The UPerNet head of the context-length paper (its seg_heads.py, from yassouali/pytorch-
// segmentation; as Hooper & Xue use it), 2-D and 3-D: a pyramid pooling module on the coarsest map,
// an FPN whose three smoothing convolutions are ONE shared conv, a fusion conv and a 3x3 head
// after upsampling to the image size. Not mmsegmentation's UPerHead (the paper's seg_heads.py has
// the differences).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/container.h"
#include "nn/conv.h"
#include "nn/layers.h"

namespace lumen::nn {

// Pyramid pooling on f (B, c, *S), c divisible by the number of bins:
//   stage_b = ReLU(BN(conv1x1(c -> c / 4, no bias)(AdaptiveAvgPool(b)(f)))) upsampled to S
//   (linear, align_corners=True); y = Dropout(ReLU(BN(conv1x1(c + 4 (c / 4) -> c, padding 1,
//   no bias)(cat[f, stages])))) -- the padding-1 1x1 conv grows every size by 2 [quirk], its
//   border being ReLU(BN(0)). Names stages.<i>.{1,2} (conv, BN), bottleneck.{0,1} (conv, BN).
// Shapes: (B, c, *S) -> (B, c, *(S + 2)).
class PSPModule : public Module {
  public:
    PSPModule(int64_t spatial_dims, int64_t in_channels,
              std::vector<int64_t> bin_sizes = {1, 2, 4, 6}, double dropout = 0.1);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<ModuleList<Sequential>> stages;
    std::shared_ptr<Sequential> bottleneck;
};

// FPN fusion of f1..f4 (fine -> coarse, f1 with `fpn_out` channels):
//   l1 = f1, l_k = conv1x1.<k-2>(f_k) (1x1, bias) for k = 2..4;
//   p_k = smooth(up(l_{k+1} -> size of l_k) + l_k), k = 3, 2, 1, with ONE 3x3 conv `smooth`
//   (pad 1, bias) shared by the three levels [quirk] (state_dict smooth_conv.0 only; a
//   PyTorch checkpoint also lists the same tensors as smooth_conv.1/.2);
//   y = conv_fusion(cat[p_1, up(p_2), up(p_3), up(l_4)] at the size of l_1), conv_fusion =
//   3x3 conv (4 fpn_out -> fpn_out, pad 1, no bias), BN, ReLU. up = linear, align_corners=True.
// Shapes: f_k (B, channels[k-1], *S_k) -> (B, fpn_out, *S_1).
class FPNFuse : public Module {
  public:
    FPNFuse(int64_t spatial_dims, const std::vector<int64_t>& feature_channels, int64_t fpn_out);
    Tensor forward(const std::vector<Tensor>& features);
    std::shared_ptr<ModuleList<Conv>> conv1x1, smooth_conv;
    std::shared_ptr<Sequential> conv_fusion;
    int64_t spatial_dims;
};

// UPerNet: y = head(up(FPN(f1, f2, f3, PPN(f4)) -> out_size, linear, align_corners=False)),
// head = 3x3 conv (c1 -> out_channels, pad 1, bias); fpn_out = c1.
// Shapes: f1..f4 (B, c_k, *S_k) channels-first, fine to coarse -> (B, out_channels, *out_size).
// BatchNorm: eval() uses the running statistics, train() the batch statistics (a 1x1 pooled
// branch then needs B >= 2). Parameters PPN.*, FPN.*, head.*; init: convs PyTorch default,
// BN 1 / 0, running mean 0 / var 1. Throws [UperNet] for 4 channel counts that do not fit
// (c4 divisible by the bins) or inputs of the wrong count, rank or channels.
class UperNet : public Module {
  public:
    UperNet(int64_t spatial_dims, std::vector<int64_t> feature_channels, int64_t out_channels,
            std::vector<int64_t> out_size, std::vector<int64_t> bin_sizes = {1, 2, 4, 6});
    Tensor forward(const std::vector<Tensor>& features);

    std::shared_ptr<PSPModule> ppn;  // state_dict "PPN"
    std::shared_ptr<FPNFuse> fpn;    // state_dict "FPN"
    std::shared_ptr<Conv> head;
    int64_t spatial_dims;
    std::vector<int64_t> feature_channels, out_size;
};

// A PyTorch state_dict of the head (or of a model holding it under any prefix) lists the one
// shared smoothing conv three times, as FPN.smooth_conv.0, .1 and .2; lumen registers it once.
// Returns `state` without the .1/.2 copies, ready for a strict load_state_dict. Throws
// [UperNet] when a copy differs from its .0 tensor (not a checkpoint of this head).
std::map<std::string, Tensor> drop_shared_smooth_conv_copies(std::map<std::string, Tensor> state);

}  // namespace lumen::nn
