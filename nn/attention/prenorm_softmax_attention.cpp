// Softmax attention in the vit-pytorch frame.
#include "nn/attention/prenorm_softmax_attention.h"

#include <cmath>

#include "nn/attention/mhsa.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace lumen::nn::attention {

PreNormSoftmaxAttention::PreNormSoftmaxAttention(int64_t dim,
                                                 const PreNormAttentionOptions& options)
    : PreNormAttention("PreNormSoftmaxAttention", dim, options) {
    dropout = register_module("dropout", make<Dropout>(options.attn_drop));
}

Tensor PreNormSoftmaxAttention::mix(const Tensor& qkv) {
    std::vector<Tensor> parts = chunk(qkv, 3, -1);
    Tensor q = split_heads(parts[0], heads), k = split_heads(parts[1], heads);
    Tensor v = split_heads(parts[2], heads);
    double drop_p = dropout->is_training() ? dropout->p : 0.0;
    return merge_heads(
        attend(q, k, v, {1.0 / std::sqrt(double(dim_head)), Tensor(), false, drop_p, fused}));
}

std::shared_ptr<Attention> make_vitpt_softmax_attention(const AttentionConfig& config) {
    return make<PreNormSoftmaxAttention>(config.dim, prenorm_options(config, "vitpt_softmax"));
}

}  // namespace lumen::nn::attention
