// The vanilla ViT attention of Khader et al. (Sec. 2.1, the softmax baseline) in the vit-pytorch
// frame: softmax(Q K^T / sqrt(d)) V per head. Registered as "vitpt_softmax".
#pragma once

#include "nn/activation.h"
#include "nn/attention/prenorm_attention.h"

namespace lumen::nn::attention {

// O_m = dropout(softmax_lastdim(Q_m K_m^T * d^-1/2)) V_m, by the fused attention op (no N x N
// map: time O(N^2 D), memory O(N D)) or, with fused = false, through the materialised weights
// (memory O(h N^2)). Shapes and errors: PreNormAttention.
class PreNormSoftmaxAttention : public PreNormAttention {
  public:
    PreNormSoftmaxAttention(int64_t dim, const PreNormAttentionOptions& options);
    std::shared_ptr<Dropout> dropout;  // on the attention weights (attn_drop)
    bool fused = true;                 // SoftmaxAttention::fused (nn/attention/mhsa.h)

  protected:
    Tensor mix(const Tensor& qkv) override;
};

// Registry factory for "vitpt_softmax" (options: none beyond AttentionConfig's fields).
std::shared_ptr<Attention> make_vitpt_softmax_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
