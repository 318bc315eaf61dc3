// UTNet (Gao, Zhou, Metaxas 2021, "UTNet: a hybrid transformer architecture for medical image
// segmentation", Sec. 2.4; official yhygao/UTNet model/utnet.py): a U-Net of
// pre-activation residual blocks with efficient-attention transformer blocks at the levels
// named in block_list, in the encoder and in the decoder. The blocks are in nn/utnet/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/utnet/trans_blocks.h"

namespace lumen::models {

// The official constructor's arguments and defaults. Level l (0..4) has base_chan 2^l
// channels at 1/2^l resolution; a level carries transformer blocks when its digit is in
// block_list. num_blocks and num_heads are read from their END, as the official code does:
// [-5] is level 0, [-4] level 1, ..., [-1] level 4 for the encoder; the decoder stage that
// produces level l (l = 0..3) uses num_heads[l - 4].
// Paper / official training configuration: in_chan 1, base_chan 32, num_classes 4,
// reduce_size 8, block_list "1234", num_blocks {1, 1, 1, 1}, num_heads {4, 4, 4, 4},
// attn_drop = proj_drop = 0.1, aux_loss true (10,020,304 parameters; 10,018,500 without).
struct UTNetConfig {
    int64_t in_chan = 1;
    int64_t base_chan = 32;
    int64_t num_classes = 1;
    int64_t reduce_size = 8;
    std::string block_list = "234";
    std::vector<int64_t> num_blocks = {1, 2, 4};
    std::string projection = "interp";  // K/V reduction: "interp" or "maxpool"
    std::vector<int64_t> num_heads = {2, 4, 8};
    double attn_drop = 0.0;
    double proj_drop = 0.0;
    bool maxpool = true;  // transformer levels down-sample by MaxPool2d(2), else stride 2
    bool rel_pos = true;
    std::string rel_pos_type = "bias";  // "bias" (official) or "embedding" (paper eq. 4)
    bool aux_loss = false;              // deep-supervision heads out1, out2, out3
    // k > 0: every k-th residual block (BasicBlock, BasicTransBlock, BasicTransDecoderBlock)
    // recomputes its forward in backward (nn/checkpoint.h), the blocks counted in the order the
    // forward runs them: the encoder's (levels 0 to 4), then the decoder's (levels 3 to 0).
    // The convolutional blocks count too: at full resolution they hold most of the
    // activations. 0: none.
    int64_t grad_checkpointing = 0;

    // Throws [UTNet] for non-positive sizes, a block_list digit outside 0-4, or num_blocks /
    // num_heads too short for the levels that need them.
    void validate() const;
};

// Shapes: x (B, in_chan, H, W) with H, W multiples of 16, and every transformer level's map
// (H / 2^l x W / 2^l) a multiple of reduce_size when rel_pos -> y (B, num_classes, H, W).
// Training-mode BatchNorm uses batch statistics (batch size > 1 or maps > 1 pixel).
class UTNet : public nn::Module {
  public:
    explicit UTNet(const UTNetConfig& config);
    // The segmentation logits y.
    Tensor forward(const Tensor& x) override;
    // {y} without aux_loss; with it {y, out3, out2, out1}: the 1x1 heads on the decoder
    // outputs of levels 1, 2 and 3 resized to (H, W) (bilinear, align_corners), in the
    // official return order. Throws [UTNet] for a wrong input shape.
    std::vector<Tensor> forward_outputs(const Tensor& x) override;
    const UTNetConfig& config() const { return config_; }

    std::shared_ptr<nn::Sequential> inc;
    std::shared_ptr<nn::Module> down1, down2, down3, down4;
    std::shared_ptr<nn::utnet::UpStage> up1, up2, up3, up4;
    std::shared_ptr<nn::Conv2d> outc, out1, out2, out3;

  private:
    std::vector<Tensor> run(const Tensor& x, bool aux);
    // Sets `checkpointed` on every grad_checkpointing-th residual block.
    void mark_checkpointed();
    void check_input(const Tensor& x) const;
    UTNetConfig config_;
};

}  // namespace lumen::models
