// SimA swapped into the ViT of Khader et al. (Sec. 3.2, the SimA column): the vit-pytorch frame
// (LayerNorm inside, to_qkv without bias, to_out) around SimA's l1-normalised mix, the same
// parameters as the softmax variant. Registered as "vitpt_sima".
#pragma once

#include "nn/attention/prenorm_attention.h"
#include "nn/attention/sima_attention.h"

namespace lumen::nn::attention {

// Q~, K~ = Q, K l1-normalised over the tokens per head and channel (eps 1e-12);
// O_m = (Q~_m K~_m^T) V_m if N < d else Q~_m (K~_m^T V_m). Time O(N D d) for N >= d, no N x N
// tensor then. options.attn_drop must be 0. Shapes and errors: PreNormAttention.
class PreNormSimAAttention : public PreNormAttention {
  public:
    PreNormSimAAttention(int64_t dim, const PreNormAttentionOptions& options);
    SimAOrder order = SimAOrder::by_size;  // tests switch it

  protected:
    Tensor mix(const Tensor& qkv) override;
};

// Registry factory for "vitpt_sima" (no options).
std::shared_ptr<Attention> make_vitpt_sima_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
