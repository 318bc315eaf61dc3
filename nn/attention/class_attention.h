// Class attention of the official SimA model (UCDvision/sima sima.py @3ec3b8e, XCiT/CaiT
// layout; Koohpayegani & Pirsiavash 2024): softmax-free attention in which only the class token
// queries. The block around it (ClassAttentionBlock) is in nn/sima/sima_block.h.
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/linear.h"

namespace lumen::nn::attention {

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

}  // namespace lumen::nn::attention
