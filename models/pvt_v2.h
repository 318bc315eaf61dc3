// PVTv2 (Wang et al. 2022, "PVT v2: improved baselines with pyramid vision transformer"), the
// encoder of PVT-GDLA, in timm's layout and key names (timm pvt_v2.py): the
// configs b0-b5 and b2_li, the four-stage feature pyramid, timm's classifier head and init, and
// the key renaming of the original (whai362 / xmindflow-gdla) checkpoints. Blocks: nn/pvt/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/pvt/pvt_blocks.h"
#include "nn/state_dict.h"

namespace lumen::models {

// timm PyramidVisionTransformerV2's constructor arguments and defaults (those of b2).
struct PvtV2Config {
    int64_t in_chans = 3;
    std::vector<int64_t> depths = {3, 4, 6, 3};
    std::vector<int64_t> embed_dims = {64, 128, 320, 512};
    std::vector<int64_t> num_heads = {1, 2, 5, 8};
    std::vector<int64_t> sr_ratios = {8, 4, 2, 1};
    std::vector<double> mlp_ratios = {8, 8, 4, 4};
    bool qkv_bias = true;
    bool linear = false;      // "-li": pooled 7x7 keys/values and the MLP's extra ReLU
    int64_t num_classes = 0;  // > 0 adds head = Linear(embed_dims[3], num_classes)
    double drop_rate = 0.0;   // projection and MLP dropout
    double attn_drop_rate = 0.0;
    double drop_path_rate = 0.0;  // stochastic depth, linearly spaced from 0 over all blocks
    // k > 0: every k-th block recomputes its forward in backward (nn/checkpoint.h), the blocks
    // of the four stages counted as one list (sum(depths), stage 0's first); 0: none.
    int64_t grad_checkpointing = 0;

    // Throws [PyramidVisionTransformerV2] unless every list has 4 entries, sizes are positive
    // (depths >= 0), each width divides by its heads and the rates lie in [0, 1).
    void validate() const;
};

// The published variants by timm name: "b0", "b1", "b2", "b2_li", "b3", "b4", "b5" (timm's
// configurations). Parameters without / with a 1000-class head: b0 3,409,760 / 3,666,760,
// b1 13,496,000 / 14,009,000, b2 24,849,856 / 25,362,856, b2_li 22,040,512 / 22,553,512,
// b3 44,725,696 / 45,238,696, b4 62,043,072 / 62,556,072, b5 81,443,008 / 81,956,008 (timm's
// 3.7, 14.0, 25.4, 22.6, 45.2, 62.6 and 82.0 M count the head). Throws
// [pvt_v2_config] naming the variants for an unknown name.
PvtV2Config pvt_v2_config(const std::string& variant, int64_t num_classes = 0);

// patch_embed = OverlapPatchEmbed(7, 4, in_chans, E0) -> stages.0 (no downsample) ->
// stages.1..3 (OverlapPatchEmbed(3, 2) downsample each) -> [head]. Keys patch_embed.*,
// stages.{i}.{downsample,blocks.{j},norm}.*, head.* (timm's). Init as timm's from-scratch
// _init_weights: Linear trunc_normal(std 0.02) with zero bias, Conv2d N(0, 2 / fan_out) with
// fan_out = k*k*out/groups and zero bias, LayerNorm 1 / 0.
// Shapes: x (B, in_chans, H, W); stage i has a (H_i, W_i) grid with H_0 = floor((H - 1) / 4) + 1
// and H_{i+1} = ceil(H_i / 2); each grid must be at least sr_ratio (linear: any size).
class PyramidVisionTransformerV2 : public nn::Module {
  public:
    explicit PyramidVisionTransformerV2(const PvtV2Config& config = {});
    // The four stage outputs (B, E_i, H_i, W_i) at strides 4, 8, 16, 32 (timm
    // forward_intermediates(intermediates_only=True)); what the segmentation decoders read.
    // Throws [PyramidVisionTransformerV2] for a wrong input shape.
    std::vector<Tensor> forward_intermediates(const Tensor& x);
    // timm's forward: the spatial mean of the last stage (B, E3), through head when
    // num_classes > 0 -> (B, num_classes).
    Tensor forward(const Tensor& x) override;
    const PvtV2Config& config() const { return config_; }

    std::shared_ptr<nn::pvt::OverlapPatchEmbed> patch_embed;
    std::shared_ptr<nn::ModuleList<nn::pvt::PVTStage>> stages;
    std::shared_ptr<nn::Linear> head;  // null without classes

  private:
    void init_weights();
    PvtV2Config config_;
};

// Maps a key of an original PVTv2 checkpoint (whai362/PVT, and the xmindflow-gdla encoder stored
// under `prefix`, e.g. "backbone.") to timm's name; keys outside `prefix` pass unchanged:
//   patch_embed1.           -> patch_embed.
//   patch_embed{2,3,4}.     -> stages.{1,2,3}.downsample.
//   block{i}.{j}.           -> stages.{i-1}.blocks.{j}.
//   norm{i}. (top level)    -> stages.{i-1}.norm.
//   .dwconv.dwconv.         -> .dwconv.
// Everything else (attn.q, attn.kv, attn.sr, attn.norm, mlp.fc1, head, ...) is unchanged. Use
// with nn::load_state_dict(model, path, strict, whai362_to_timm()).
nn::KeyRename whai362_to_timm(const std::string& prefix = "");

}  // namespace lumen::models
