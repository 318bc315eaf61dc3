// The GDLA token mixer of PVT-GDLA (Zheng et al. 2026, Sec. 3.2-3.4; where paper and official
// xmindflow/gdla code differ, the code is followed): gated differential linear attention on the
// projected tokens and on a locally mixed copy of them (depthwise 3x3 then a dense 1x1 over all of
// [q|k|v|g]), concatenated and projected. Registered as "gdla"; needs the token grid
// (AttentionContext::grid = {H, W}).
#pragma once

#include <memory>
#include <string>

#include "nn/attention/attention.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::attention {

// GatedDiffLinearAttn(dim = C, n_heads = h, qkv_bias), dh = C / h even, d = dh / 2:
//   T = qkvg(x) (B, N, 4C), channel blocks q, k, v, g of C each, head j = channels j dh .. +dh;
//   A = pwc(dwc(T on the H x W grid)) back to tokens, same block layout;
//   Branch(T, lambda), per head j: q1, q2 = first / second d channels of q_j (k likewise),
//     D = linear_attention(q1, k1, v_j) - lambda[j] * linear_attention(q2, k2, v_j) (eps 1e-6),
//     head_j = RMSNorm_dh(D) (ln, eps 1e-5, shared by heads and branches) * sigmoid(g_j);
//   out = out_proj(concat(Branch(T, lambda_scale_main), Branch(A, lambda_scale_aux))).
// Parameters (official names): qkvg.weight (4C, C), qkvg.bias (4C, if qkv_bias), ln.weight
// (dh), dwc.weight (4C, 1, 3, 3), dwc.bias (4C), pwc.weight (4C, 4C, 1, 1), pwc.bias (4C),
// lambda_scale_main and lambda_scale_aux (h, dh) ~ N(0, 0.1^2), out_proj.weight (C, 2C),
// out_proj.bias (C); the rest PyTorch defaults, ln.weight = 1.
// Time O(N C^2 + N C dh), memory O(N C): linear in N. Shapes: x (B, N, C) with N = H W
// (row-major) -> (B, N, C). Throws [GatedDiffLinearAttn] for an odd dh, C not divisible by h,
// a wrong input shape, a grid that is not {H, W} with H W = N (no prefix tokens), a key
// padding mask or causal attention.
class GatedDiffLinearAttn : public Attention {
  public:
    GatedDiffLinearAttn(int64_t dim, int64_t n_heads, bool qkv_bias = true, double eps = 1e-6);
    using Attention::forward;
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    // The same with the grid given directly.
    Tensor forward(const Tensor& x, int64_t height, int64_t width);
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkvg, out_proj;
    std::shared_ptr<RMSNorm> ln;
    std::shared_ptr<Conv2d> dwc, pwc;
    Tensor lambda_scale_main, lambda_scale_aux;
    int64_t dim, n_heads, head_dim;
    double eps;
    // The fused linear attention (default) or, when false, linear_attention_reference.
    bool fused = true;

  private:
    // One branch on the channel-major t (B, 4C, N) [q|k|v|g] -> (B, C, N).
    Tensor branch(const Tensor& t, const Tensor& lambda) const;
    // pwc(dwc(t on the grid)), channel-major (B, 4C, N) in and out.
    Tensor local_mix(const Tensor& t, int64_t height, int64_t width) const;
};

// The {H, W} of a context for a mixer that needs a 2-D grid covering all N tokens; throws
// [<who>] otherwise.
std::pair<int64_t, int64_t> grid_2d(const AttentionContext& context, int64_t n,
                                    const std::string& who);

// Registry factory for "gdla": dim, num_heads (head_dim -1 or dim / num_heads), qkv_bias; no
// options. Throws [gdla] for an unknown option.
std::shared_ptr<Attention> make_gdla_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
