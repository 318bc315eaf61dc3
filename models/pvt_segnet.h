// PVT-GDLA and its baselines PVT-SelfAttn / PVT-LinearAttn / PVT-DiffAttn (Zheng et al. 2026, Sec.
// 3-4; official models/pvt_{gdla,sa,la,da}.py): a PVTv2 encoder, three up-sampling decoder stages
// whose block is chosen by name, a full-resolution ResBlk stem and 1x1 heads with optional deep
// supervision. Encoder: models/pvt_v2.h; decoder blocks: nn/gdla/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/pvt_v2.h"
#include "nn/gdla/blocks.h"
#include "nn/gdla/stem.h"

namespace lumen::models {

// The reference constructor's arguments and defaults (in_chs and n_classes have none there).
// The decoder widths chs are the encoder's embed_dims. n_heads[i] is the decoder block's head
// count at width chs[i] (i = 0..2; index 3 is unused, as in the official config).
struct PVTSegNetConfig {
    int64_t in_chs = 3;            // 1 (repeated to 3 channels for the encoder) or 3
    int64_t n_classes = 2;         // K
    std::string decoder = "gdla";  // "gdla" (GDLAM), "sa", "la" or "da" (PreNormBlock kinds)
    PvtV2Config encoder = pvt_v2_config("b2");  // in_chans 3, no classifier head
    std::vector<int64_t> n_heads = {2, 4, 10, 16};
    bool qkv_bias = true;
    double norm_eps = 1e-5;
    double hidden_ratio = 4.0;
    int64_t us_ks = 3;             // the up-sampling ConvTranspose2d kernel (3, or 5 in Table 4)
    bool deepsupervision = false;  // adds head2..head4 and the outputs x4, x3, x2
    bool use_rope = false;         // sa and da only (the gdla and la decoders ignore it)
    double rope_base = 10000.0;
    // k > 0: every k-th block recomputes its forward in backward (nn/checkpoint.h), counting
    // the encoder's blocks (stage by stage) and then the decoder blocks de1, de2, de3 as one
    // list; it replaces encoder.grad_checkpointing. 0: none.
    int64_t grad_checkpointing = 0;

    // Throws [PVTSegNet] for an unknown decoder, in_chs other than 1 or 3, n_classes < 1, an
    // n_heads list without 4 positive entries or whose first three do not divide chs, an even
    // or non-positive us_ks, or an encoder with in_chans != 3 or a classifier head; the
    // encoder's own check ([PyramidVisionTransformerV2]) runs too.
    void validate() const;
};

// The paper's Synapse models (Zheng et al. 2026, Sec. 4, Table 1): PVTv2-b2 encoder, in_chs 1, K 9,
// deep supervision on, RoPE in the sa and da decoders. Parameters: gdla 32,134,607; sa and la
// 28,258,159; da 28,751,695. Throws [pvt_segnet_config] for an unknown decoder.
PVTSegNetConfig pvt_segnet_config(const std::string& decoder, int64_t in_chs = 1,
                                  int64_t n_classes = 9);

// x (B, in_chs, H, W), H and W positive multiples of 32:
//   s = resblk(x) (ResBlk in_chs -> chs[0], full resolution);
//   f1..f4 = backbone(x, or x repeated to 3 channels) (strides 4, 8, 16, 32);
//   d3 = de1(up1(f4) + f3); d2 = de2(up2(d3) + f2); d1 = de3(up3(d2) + f1)
//   (upK: Upsample chs[4-K] -> chs[3-K]; deK: the decoder block at chs[3-K] with n_heads[3-K]
//   heads and depth 4-K, which only the da block uses);
//   x1 = head1(bilinear x4 (d1) + s);  with deep supervision also
//   x4 = bilinear x32 (head4(f4)) (the ENCODER's last stage), x3 = x16 (head3(d3)),
//   x2 = x8 (head2(d2)); bilinear with align_corners false; heads are 1x1 convs with bias.
// Keys: backbone.* (timm names), up{1,2,3}.up.weight, de{1,2,3}.*, resblk.*,
// head{1,2,3,4}.{weight,bias}. Init: the encoder as timm from scratch (load ImageNet weights
// over it), the decoder as its blocks' PyTorch defaults.
class PVTSegNet : public nn::Module {
  public:
    explicit PVTSegNet(const PVTSegNetConfig& config = {});
    // {x4, x3, x2, x1} with deep supervision, else {x1}; each (B, n_classes, H, W).
    // Throws [PVTSegNet] for a wrong input shape.
    std::vector<Tensor> forward_outputs(const Tensor& x) override;
    // The segmentation logits x1 (what evaluation uses).
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    const PVTSegNetConfig& config() const { return config_; }

    std::shared_ptr<PyramidVisionTransformerV2> backbone;
    std::shared_ptr<nn::gdla::Upsample> up1, up2, up3;
    std::shared_ptr<nn::Module> de1, de2, de3;  // GDLAM or PreNormBlock
    std::shared_ptr<nn::gdla::ResBlk> resblk;
    std::shared_ptr<nn::Conv2d> head1, head2, head3, head4;  // head2..4 null without DS

  private:
    std::shared_ptr<nn::Module> make_block(int64_t dim, int64_t heads, int64_t depth) const;
    PVTSegNetConfig config_;
};

}  // namespace lumen::models
