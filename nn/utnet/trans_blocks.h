// UTNet's transformer blocks and the stages that use them (Gao et al. 2021, Sec. 2.4 and Fig. 1c;
// official BasicTransBlock, BasicTransDecoderBlock, down_block_trans, up_block_trans). The
// attention itself is in nn/attention/utnet_attention.h.
#pragma once

#include <memory>

#include "nn/attention/utnet_attention.h"
#include "nn/utnet/conv_blocks.h"

namespace lumen::nn::utnet {

// Encoder transformer block (BN before attention, no ReLU; a 1x1-conv "MLP"):
//   u = attn(bn1(x)) + x;   y = mlp(relu(bn2(u))) + u
// attn is LinearAttention(in_ch) with options.heads heads of width in_ch / heads (the
// options' dim_head is ignored, as in the official code); mlp.weight (in_ch, in_ch, 1, 1).
// Shapes: (B, in_ch, H, W) -> (B, in_ch, H, W). checkpointed: the forward runs through
// nn::checkpoint (recomputed in backward; the model sets it).
class BasicTransBlock : public Module {
  public:
    BasicTransBlock(int64_t in_ch, const attention::LinearAttentionOptions& options);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<BatchNorm2d> bn1, bn2;
    std::shared_ptr<attention::LinearAttention> attn;
    std::shared_ptr<Conv2d> mlp;
    bool checkpointed = false;
};

// Decoder transformer block. x1: low-res decoder feature (B, in_ch, h, w); x2: high-res skip
// (B, out_ch, H, W):
//   res = bilinear_align_corners(conv_ch(x1), (H, W))     conv_ch 1x1 in_ch -> out_ch, bias
//   u = attn(q = bn_h(x2), x = bn_l(x1)) + res;   y = mlp(relu(bn2(u))) + u
// attn is LinearAttentionDecoder(in_ch, out_ch) with heads of width out_ch / heads.
// Shapes: -> (B, out_ch, H, W). checkpointed as BasicTransBlock's.
// Throws [BasicTransDecoderBlock] for wrong input shapes.
class BasicTransDecoderBlock : public Module {
  public:
    BasicTransDecoderBlock(int64_t in_ch, int64_t out_ch,
                           const attention::LinearAttentionOptions& options);
    Tensor forward(const Tensor& x1, const Tensor& x2);
    using Module::forward;
    std::shared_ptr<BatchNorm2d> bn_l, bn_h, bn2;
    std::shared_ptr<Conv2d> conv_ch, mlp;
    std::shared_ptr<attention::LinearAttentionDecoder> attn;
    bool checkpointed = false;
};

// Encoder stage with transformer (official `down_block_trans`): blocks.0 MaxPool2d(2),
// blocks.1 BasicBlock(in, out) (with maxpool = false: blocks.0 a stride-2 BasicBlock), then
// num_block BasicTransBlock(out). Shapes: (B, in, H, W) -> (B, out, H/2, W/2).
// Throws [DownBlockTrans] for num_block < 1.
class DownBlockTrans : public Module {
  public:
    DownBlockTrans(int64_t in_ch, int64_t out_ch, int64_t num_block, bool maxpool,
                   const attention::LinearAttentionOptions& options);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<Sequential> blocks;
};

// Decoder stage with transformer (official `up_block_trans`):
//   y = blocks(cat([attn_decoder(x1, x2), x2], channels))      (attention output FIRST)
// attn_decoder BasicTransDecoderBlock(in, out), blocks.0 BasicBlock(2 out, out).
// Shapes: x1 (B, in, h, w), x2 (B, out, H, W) -> (B, out, H, W). UTNet always uses
// num_block = 0; the official layout for num_block > 0 applies BasicTransBlock(out) to the
// 2 out-channel concatenation and cannot run, so [UpBlockTrans] rejects it.
class UpBlockTrans : public UpStage {
  public:
    UpBlockTrans(int64_t in_ch, int64_t out_ch, int64_t num_block,
                 const attention::LinearAttentionOptions& options);
    Tensor forward(const Tensor& x1, const Tensor& x2) override;
    using UpStage::forward;
    std::shared_ptr<BasicTransDecoderBlock> attn_decoder;
    std::shared_ptr<Sequential> blocks;
};

}  // namespace lumen::nn::utnet
