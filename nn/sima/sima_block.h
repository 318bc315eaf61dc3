// The patch-token layers of the official SimA model (UCDvision/sima sima.py @3ec3b8e, XCiT
// layout; spec sfree_utnet §2): LPI, the local patch interaction on the token grid, and
// SimABlock = SimA attention + LPI + Mlp, each with a layer-scale gamma.
#pragma once

#include <memory>

#include "nn/attention/attention.h"
#include "nn/attention/sima_attention.h"
#include "nn/conv.h"
#include "nn/sima/class_attention.h"

namespace lumen::nn::sima {

// Tokens (B, N = H*W, C) -> grid (B, C, H, W) (row-major) -> conv1 (depthwise k x k, pad k/2,
// groups C, bias) -> GELU (erf) -> bn (BatchNorm2d(C), batch statistics in training mode) ->
// conv2 (depthwise, bias) -> tokens (B, N, C). Parameters conv1.weight (C, 1, k, k),
// conv1.bias, bn.weight/bias (+ running statistics), conv2.*. The official model uses
// SyncBatchNorm: the same maths on one device. Throws [LPI] when x is not (B, H*W, C).
class LPI : public Module {
  public:
    explicit LPI(int64_t in_features, int64_t kernel_size = 3, double bn_eps = 1e-5);
    Tensor forward(const Tensor& x, int64_t H, int64_t W);
    // The grid from context.grid ({H, W}); prefix tokens are not allowed (a class token has
    // no place on the grid). Throws [LPI] otherwise.
    Tensor forward(const Tensor& x, const AttentionContext& context);

    std::shared_ptr<Conv2d> conv1, conv2;
    std::shared_ptr<GELU> act;
    std::shared_ptr<BatchNorm2d> bn;
    int64_t in_features;
};

// x = x + g1 * SimA(norm1(x)); x = x + g3 * LPI(norm3(x), H, W); y = x + g2 * Mlp(norm2(x)),
// gammas (C) initialised to options.eta (1.0 when unset). Parameters: norm1, attn.*, norm2,
// mlp.fc1/fc2, norm3, local_mp.*, gamma1, gamma2, gamma3. options.attn_drop must be 0 and
// tokens_norm is ignored (it belongs to ClassAttentionBlock).
// Shapes: x (B, H*W, C) -> (B, H*W, C). Throws [SimABlock] / [LPI] for wrong shapes.
class SimABlock : public Module {
  public:
    SimABlock(int64_t dim, int64_t num_heads, const SimALayerOptions& options = {});
    Tensor forward(const Tensor& x, int64_t H, int64_t W);

    std::shared_ptr<LayerNorm> norm1, norm2, norm3;
    std::shared_ptr<SimA> attn;
    std::shared_ptr<Mlp> mlp;
    std::shared_ptr<LPI> local_mp;
    Tensor gamma1, gamma2, gamma3;
    int64_t dim;
};

}  // namespace lumen::nn::sima
