// The MambaVision mixer (Hatamizadeh & Kautz, "MambaVision", CVPR 2025; NVlabs
// mamba_vision.py::MambaVisionMixer, as Hooper & Xue use it, Sec. 3.1) and the NVlabs `Block`
// around it. The mixer runs the selective scan (ops/scan.h) on one half of the channels and a
// gated conv branch on the other; registered as "mamba": tokens (B, N, C) in and out, linear in N.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/norm.h"

namespace lumen::nn::attention {

// Tokens u (B, L, d), d_inner = expand d (even), e = d_inner / 2, R = dt_rank (ceil(d / 16)
// by default), N = d_state:
//   [x | z] = in_proj(u) (B, d_inner, L);  x = silu(conv1d_x(x)), z = silu(conv1d_z(z))
//   (depthwise, kernel d_conv, "same" zero padding, no bias: not causal);
//   [dt | Bm | Cm] = x_proj(x^T) (B, L, R + 2N);  delta = dt_proj(dt) (with its bias b);
//   y = selective_scan(x, delta, -exp(A_log), Bm, Cm, D, delta_bias = b, softplus)
//   (so Delta = softplus(W_dt dt + 2 b): the bias enters twice, as in the original);
//   out = out_proj(concat[y, z] on channels) (B, L, d).
// Parameters (NVlabs names): in_proj.weight (d_inner, d), x_proj.weight (R + 2N, e),
// dt_proj.weight (e, R), dt_proj.bias (e), A_log (e, N), D (e), out_proj.weight (d, d_inner),
// conv1d_x.weight, conv1d_z.weight (e, 1, d_conv). Init: Mamba's (dt_proj U(+-R^-0.5), bias the
// inverse softplus of dt ~ logU[1e-3, 0.1] floored at 1e-4; A_log[., n] = ln(n + 1); D = 1),
// PyTorch defaults elsewhere. Time and memory O(B L d (d + N)). The context's grid is ignored;
// a key padding mask or causal = true is rejected (the convs look both ways). `proj_drop` > 0
// adds dropout on the output (child proj_drop, as the attention variants' output dropout; the
// reference has none, so it is absent at 0). Throws [MambaVisionMixer] for an odd d_inner,
// non-positive sizes or a wrong input shape.
class MambaVisionMixer : public Attention {
  public:
    MambaVisionMixer(int64_t d_model, int64_t d_state = 8, int64_t d_conv = 3, int64_t expand = 1,
                     std::optional<int64_t> dt_rank = std::nullopt, double proj_drop = 0.0);
    using Attention::forward;
    Tensor forward(const Tensor& u, const AttentionContext& context) override;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> in_proj, x_proj, dt_proj, out_proj;
    std::shared_ptr<Conv1d> conv1d_x, conv1d_z;
    std::shared_ptr<Dropout> proj_drop;  // null for proj_drop 0
    Tensor A_log, D;
    int64_t d_model, d_state, d_conv, d_inner, dt_rank;
};

// Registry factory for "mamba": dim; options d_state (8), d_conv (3), expand (1), dt_rank
// (ceil(dim / 16)); proj_drop is the output dropout. num_heads, head_dim and qkv_bias are
// ignored (the mixer has no heads). Throws [mamba] for an unknown option or a non-zero
// attn_drop (there is no attention map to drop).
std::shared_ptr<Attention> make_mamba_attention(const AttentionConfig& config);

// NVlabs MambaVision `Block` with the mixer:
//   x = x + gamma_1 * mixer(norm1(x)); x = x + gamma_2 * mlp(norm2(x)),
// mlp = timm Mlp (fc1 -> GELU -> fc2, hidden int(dim mlp_ratio)), LayerNorm eps 1e-5.
// With layer_scale, gamma_1/gamma_2 (dim) are parameters initialised to it; without, both are
// the scalar 1 (no parameter). Shapes: x (B, N, dim) -> (B, N, dim). Throws [MambaVisionBlock]
// for a wrong input shape (the mixer for an odd dim).
class MambaVisionBlock : public Module {
  public:
    MambaVisionBlock(int64_t dim, double mlp_ratio = 4.0,
                     std::optional<double> layer_scale = std::nullopt);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<MambaVisionMixer> mixer;
    std::shared_ptr<Mlp> mlp;
    Tensor gamma_1, gamma_2;  // undefined without layer scale
    int64_t dim;
};

}  // namespace lumen::nn::attention
