// The class-attention stage of the official SimA model (UCDvision/sima sima.py @3ec3b8e,
// XCiT/CaiT layout; spec sfree_utnet §2): softmax-free ClassAttention, in which only the class
// token queries, and ClassAttentionBlock with the official quirks kept (non-class tokens pass
// through the residuals and are doubled by the last one).
#pragma once

#include <memory>
#include <optional>

#include "nn/activation.h"
#include "nn/linear.h"
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

// Q~, K~ = Q, K l1-normalised over ALL N tokens per head and channel (eps 1e-6); only token 0
// queries: a[b,m,n] = sum_j Q~[b,m,0,j] K~[b,m,n,j] (no scale, no softmax),
// c[b,m] = sum_n a[b,m,n] V[b,m,n]; output = cat([proj(merge(c)), x[:, 1:]]) along tokens.
// Parameters qkv.weight (3C, C), qkv.bias if qkv_bias, proj.weight (C, C), proj.bias.
// Shapes: x (B, N, C) -> (B, N, C), C divisible by num_heads. Throws [ClassAttention] for a
// wrong input shape.
class ClassAttention : public Module {
  public:
    ClassAttention(int64_t dim, int64_t num_heads = 8, bool qkv_bias = false,
                   double attn_drop = 0.0, double proj_drop = 0.0);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, proj;
    std::shared_ptr<Dropout> attn_drop, proj_drop;
    int64_t dim, num_heads;
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
    std::shared_ptr<ClassAttention> attn;
    std::shared_ptr<Mlp> mlp;
    Tensor gamma1, gamma2;  // undefined without eta
    int64_t dim;
    bool tokens_norm;
};

// int(dim * mlp_ratio) as Python computes it; throws [<owner>] when it is not positive.
int64_t mlp_hidden(int64_t dim, double mlp_ratio, const char* owner);

}  // namespace lumen::nn::sima
