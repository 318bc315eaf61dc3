// Sequence-normalised softmax-free attention: one seq_norm pass over Q, K, V together, then
// K^T V before Q (linear in N).
#include "nn/attention/seqnorm_attention.h"

#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/shape.h"

namespace lumen::nn::attention {

SeqNorm::SeqNorm(int64_t num_features, double eps_) : Module("SeqNorm"), eps(eps_) {
    LUMEN_CHECK(num_features > 0 && eps > 0, "SeqNorm", "needs num_features > 0 and eps > 0, got ",
                num_features, " and ", eps);
    weight = register_parameter("weight", ones({num_features}));
    bias = register_parameter("bias", zeros({num_features}));
}

Tensor SeqNorm::forward(const Tensor& x) { return seq_norm(x, weight, bias, eps); }

std::string SeqNorm::extra_repr() const {
    return std::to_string(weight.size(0)) + ", eps=" + std::to_string(eps);
}

SeqNormAttention::SeqNormAttention(int64_t dim, const PreNormAttentionOptions& options, double eps)
    : PreNormAttention("SeqNormAttention", dim, options) {
    LUMEN_CHECK(options.attn_drop == 0.0, "SeqNormAttention",
                "has no attention weights to drop: attn_drop must be 0, got ", options.attn_drop);
    q_norm = register_module("q_norm", make<SeqNorm>(inner_dim, eps));
    k_norm = register_module("k_norm", make<SeqNorm>(inner_dim, eps));
    v_norm = register_module("v_norm", make<SeqNorm>(inner_dim, eps));
}

Tensor SeqNormAttention::mix(const Tensor& qkv) {
    // The three norms act on disjoint features of qkv: one pass over the contiguous (B, N, 3D)
    // tensor with the concatenated gamma/beta instead of three passes over strided chunks.
    Tensor weight = cat({q_norm->weight, k_norm->weight, v_norm->weight});
    Tensor bias = cat({q_norm->bias, k_norm->bias, v_norm->bias});
    std::vector<Tensor> parts = chunk(seq_norm(qkv, weight, bias, q_norm->eps), 3, -1);
    Tensor q = split_heads(parts[0], heads), k = split_heads(parts[1], heads);
    Tensor v = split_heads(parts[2], heads);
    // (1/N) Q (K^T V): the d x d product first, scaled while it is the smallest tensor.
    Tensor kv = mul(matmul(k.transpose(-1, -2), v), 1.0 / double(qkv.size(1)));
    return merge_heads(matmul(q, kv));
}

std::shared_ptr<Attention> make_seqnorm_attention(const AttentionConfig& config) {
    return make<SeqNormAttention>(config.dim, prenorm_options(config, "seqnorm", {"eps"}),
                                  config.option("eps", 1e-5));
}

}  // namespace lumen::nn::attention
