// Softmax-free attention with sequence normalisation (Khader et al., Sec. 2.1, eqs. 2-7): Q, K, V
// are each normalised over the tokens with their own gamma/beta, then O_m = (1/N) Q_m (K_m^T V_m)
// per head, never an N x N matrix. Registered as "seqnorm".
#pragma once

#include "nn/attention/prenorm_attention.h"

namespace lumen::nn::attention {

// Learnable per-feature normalisation over the token axis (an instance norm over tokens):
// y[b, n, f] = (x[b, n, f] - mean_n) / sqrt(var_n + eps) * weight[f] + bias[f], biased
// variance. Shapes: x (B, N, F) -> (B, N, F); weight 1 and bias 0 at init (F each).
// Throws [seq_norm] for another shape.
class SeqNorm : public Module {
  public:
    explicit SeqNorm(int64_t num_features, double eps = 1e-5);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Tensor weight, bias;
    double eps;
};

// Q^, K^, V^ = q_norm(Q), k_norm(K), v_norm(V) (statistics over all N tokens, class token
// included); O_m = (1/N) Q^_m (K^_m^T V^_m). Time O(N D d + N D' D), memory O(N D + h d^2).
// Parameters: the frame's plus q_norm/k_norm/v_norm.weight/bias (D each). Dropout on weights
// does not exist here (options.attn_drop must be 0). Shapes and errors: PreNormAttention.
class SeqNormAttention : public PreNormAttention {
  public:
    SeqNormAttention(int64_t dim, const PreNormAttentionOptions& options, double eps = 1e-5);
    std::shared_ptr<SeqNorm> q_norm, k_norm, v_norm;

  protected:
    Tensor mix(const Tensor& qkv) override;
};

// Registry factory for "seqnorm"; option "eps" (default 1e-5).
std::shared_ptr<Attention> make_seqnorm_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
