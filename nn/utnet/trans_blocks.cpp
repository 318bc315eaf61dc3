// UTNet's transformer blocks and stages, composed from the attention modules, batch norm,
// 1x1 convs, interpolate and cat.
#include "nn/utnet/trans_blocks.h"

#include "nn/checkpoint.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/shape.h"

namespace lumen::nn::utnet {

namespace {

// The official blocks give their attention heads of width channels / heads, whatever
// dim_head the caller passed.
attention::LinearAttentionOptions with_head_width(attention::LinearAttentionOptions options,
                                                  int64_t channels, const char* who) {
    LUMEN_CHECK(options.heads > 0 && channels >= options.heads, who, "needs at least one ",
                "channel per head, got ", channels, " channels and ", options.heads, " heads");
    options.dim_head = channels / options.heads;
    return options;
}

std::shared_ptr<Conv2d> conv1x1(int64_t in, int64_t out, bool bias) {
    return make<Conv2d>(in, out, std::vector<int64_t>{1}, ConvOptions{.bias = bias});
}

}  // namespace

BasicTransBlock::BasicTransBlock(int64_t in_ch, const attention::LinearAttentionOptions& options)
    : Module("BasicTransBlock") {
    bn1 = register_module("bn1", make<BatchNorm2d>(in_ch));
    attn = register_module("attn", make<attention::LinearAttention>(
                                       in_ch, with_head_width(options, in_ch, "BasicTransBlock")));
    bn2 = register_module("bn2", make<BatchNorm2d>(in_ch));
    mlp = register_module("mlp", conv1x1(in_ch, in_ch, false));
}

Tensor BasicTransBlock::forward(const Tensor& x) {
    // Captures the layers, not `this`: a checkpointed block runs it again in backward.
    auto block = [bn1 = bn1, attn = attn, bn2 = bn2, mlp = mlp](const std::vector<Tensor>& in) {
        Tensor u = add(attn->forward(bn1->forward(in[0])), in[0]);
        return add(mlp->forward(relu(bn2->forward(u))), u);
    };
    return checkpointed ? checkpoint(block, {x}, parameters()) : block({x});
}

BasicTransDecoderBlock::BasicTransDecoderBlock(int64_t in_ch, int64_t out_ch,
                                               const attention::LinearAttentionOptions& options)
    : Module("BasicTransDecoderBlock") {
    bn_l = register_module("bn_l", make<BatchNorm2d>(in_ch));
    bn_h = register_module("bn_h", make<BatchNorm2d>(out_ch));
    conv_ch = register_module("conv_ch", conv1x1(in_ch, out_ch, true));
    attn = register_module(
        "attn", make<attention::LinearAttentionDecoder>(
                    in_ch, out_ch, with_head_width(options, out_ch, "BasicTransDecoderBlock")));
    bn2 = register_module("bn2", make<BatchNorm2d>(out_ch));
    mlp = register_module("mlp", conv1x1(out_ch, out_ch, false));
}

Tensor BasicTransDecoderBlock::forward(const Tensor& x1, const Tensor& x2) {
    check_map("BasicTransDecoderBlock", "x1", x1, attn->in_dim);
    check_map("BasicTransDecoderBlock", "x2", x2, attn->out_dim);
    auto block = [bn_l = bn_l, bn_h = bn_h, conv_ch = conv_ch, attn = attn, bn2 = bn2,
                  mlp = mlp](const std::vector<Tensor>& in) {
        const Tensor &low = in[0], &high = in[1];
        Tensor res =
            interpolate(conv_ch->forward(low), {high.size(2), high.size(3)}, {}, "bilinear", true);
        Tensor u = add(attn->forward(bn_h->forward(high), bn_l->forward(low)).y, res);
        return add(mlp->forward(relu(bn2->forward(u))), u);
    };
    return checkpointed ? checkpoint(block, {x1, x2}, parameters()) : block({x1, x2});
}

DownBlockTrans::DownBlockTrans(int64_t in_ch, int64_t out_ch, int64_t num_block, bool maxpool,
                               const attention::LinearAttentionOptions& options)
    : Module("DownBlockTrans") {
    LUMEN_CHECK(num_block > 0, "DownBlockTrans", "num_block must be positive, got ", num_block);
    blocks = register_module("blocks", make<Sequential>());
    if (maxpool) {
        blocks->push_back(make<MaxPool2d>(2));
        blocks->push_back(make<BasicBlock>(in_ch, out_ch));
    } else {
        blocks->push_back(make<BasicBlock>(in_ch, out_ch, 2));
    }
    for (int64_t i = 0; i < num_block; ++i)
        blocks->push_back(make<BasicTransBlock>(out_ch, options));
}

Tensor DownBlockTrans::forward(const Tensor& x) { return blocks->forward(x); }

UpBlockTrans::UpBlockTrans(int64_t in_ch, int64_t out_ch, int64_t num_block,
                           const attention::LinearAttentionOptions& options)
    : UpStage("UpBlockTrans") {
    LUMEN_CHECK(num_block == 0, "UpBlockTrans",
                "num_block must be 0 (the official layout for num_block > 0 applies "
                "BasicTransBlock(out_ch) to the 2 out_ch-channel concatenation), got ",
                num_block);
    attn_decoder =
        register_module("attn_decoder", make<BasicTransDecoderBlock>(in_ch, out_ch, options));
    blocks = register_module("blocks", make<Sequential>());
    blocks->push_back(make<BasicBlock>(2 * out_ch, out_ch));
}

Tensor UpBlockTrans::forward(const Tensor& x1, const Tensor& x2) {
    return blocks->forward(cat({attn_decoder->forward(x1, x2), x2}, 1));
}

}  // namespace lumen::nn::utnet
