// The blocks of the official SimA model (UCDvision/sima sima.py @3ec3b8e, XCiT/CaiT layout;
// Koohpayegani & Pirsiavash 2024): LPI, the local patch interaction on the token grid; SimABlock =
// SimA attention + LPI + Mlp, each with a layer-scale gamma; and ClassAttentionBlock with the
// official quirks kept (non-class tokens pass through the residuals and are doubled by the last
// one). The attentions are in nn/attention/sima_attention.h and nn/attention/class_attention.h.
#pragma once

#include <memory>
#include <optional>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/attention/class_attention.h"
#include "nn/attention/sima_attention.h"
#include "nn/conv.h"
#include "nn/mlp.h"
#include "nn/norm.h"

namespace lumen::nn::sima {

// Settings shared by ClassAttentionBlock and SimABlock (the official keyword arguments).
struct SimALayerOptions {
    double mlp_ratio = 4.0;  // Mlp hidden = int(dim * mlp_ratio)
    bool qkv_bias = false;
    double drop = 0.0;       // Mlp and projection dropout
    double attn_drop = 0.0;  // ClassAttention weights (SimA has none: must be 0 there)
    double norm_eps = 1e-6;  // every LayerNorm
    // Layer-scale init: the gammas exist only when set (ClassAttentionBlock; the official
    // default None means no gammas); SimABlock always has them and uses 1.0 when unset.
    std::optional<double> eta;
    bool tokens_norm = false;  // ClassAttentionBlock: norm2 on all tokens, else the class token
};

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
    Tensor forward(const Tensor& x, const attention::AttentionContext& context);

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
    std::shared_ptr<attention::SimA> attn;
    std::shared_ptr<Mlp> mlp;
    std::shared_ptr<LPI> local_mp;
    Tensor gamma1, gamma2, gamma3;
    int64_t dim;
};

// x = x + g1 * attn(norm1(x))   (non-class tokens get + g1 * norm1(x)[:, 1:])
// x = norm2(x) if tokens_norm else cat([norm2(x[:, :1]), x[:, 1:]])
// y = x + cat([g2 * mlp(x[:, :1]), x[:, 1:]])   (non-class tokens are doubled)
// with g1, g2 = gamma1, gamma2 (C, init eta) when options.eta is set, else 1. Parameters:
// norm1, attn.*, norm2, mlp.fc1 (hidden, C), mlp.fc2 (C, hidden), [gamma1, gamma2]. Unlike the
// official code (which writes in place and cannot be differentiated for tokens_norm = false)
// every path is differentiable. Shapes: x (B, N, C) -> (B, N, C), token 0 = class token.
// Throws [ClassAttentionBlock] for a wrong input shape.
class ClassAttentionBlock : public Module {
  public:
    ClassAttentionBlock(int64_t dim, int64_t num_heads, const SimALayerOptions& options = {});
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<attention::ClassAttention> attn;
    std::shared_ptr<Mlp> mlp;
    Tensor gamma1, gamma2;  // undefined without eta
    int64_t dim;
    bool tokens_norm;
};

// int(dim * mlp_ratio) as Python computes it; throws [<owner>] when it is not positive.
int64_t mlp_hidden(int64_t dim, double mlp_ratio, const char* owner);

}  // namespace lumen::nn::sima
