// SimA in the vit-pytorch attention frame.
#include "nn/attention/vitpt_sima_attention.h"

namespace lumen::nn::attention {

PreNormSimAAttention::PreNormSimAAttention(int64_t dim, const PreNormAttentionOptions& options)
    : PreNormAttention("PreNormSimAAttention", dim, options) {
    LUMEN_CHECK(options.attn_drop == 0.0, "PreNormSimAAttention",
                "has no attention weights to drop: attn_drop must be 0, got ", options.attn_drop);
}

Tensor PreNormSimAAttention::mix(const Tensor& qkv) {
    return sima_qkv_attention(qkv, heads, 1e-12, order);
}

std::shared_ptr<Attention> make_vitpt_sima_attention(const AttentionConfig& config) {
    return make<PreNormSimAAttention>(config.dim, prenorm_options(config, "vitpt_sima"));
}

}  // namespace lumen::nn::attention
