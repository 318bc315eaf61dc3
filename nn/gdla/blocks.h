// The decoder blocks of PVT-GDLA and its baselines (Zheng et al. 2026, Sec. 3.3-3.5; official
// modules/ffn/{gmlp,mlp,swiglu}.py, modules/decoder/*.py): the Mix-FFN GMLP, the value-gated
// SwiGLU, the GDLA block GDLAM and the pre-norm SA / LA / DA blocks. Blocks take and return
// NCHW maps; the mixers are in nn/attention/{gdla,linear_attention,pvt_baselines}.h.
#pragma once

#include <memory>
#include <string>

#include "nn/attention/attention.h"
#include "nn/attention/gdla.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace lumen::nn::gdla {

// Mix-FFN (official GMLP), on tokens of an H x W grid:
//   m = SiLU(pwc1(map)) (1x1, C -> 2 hidden, bias); m = dwc(m) (depthwise 3x3, pad 1, bias);
//   a, g = m[:, :hidden], m[:, hidden:];  y = pwc2(a * SiLU(g)) (1x1, hidden -> out, NO bias).
// Parameters: pwc1.weight (2 hidden, C, 1, 1), pwc1.bias, dwc.weight (2 hidden, 1, 3, 3),
// dwc.bias, pwc2.weight (out, hidden, 1, 1). The 1x1 convs run as GEMMs on the token layout.
// Shapes: x (B, N = H W, C) -> (B, N, out). Throws [GMLP] for a wrong input or grid.
class GMLP : public Module {
  public:
    GMLP(int64_t in_features, int64_t hidden_features, int64_t out_features = -1);
    Tensor forward(const Tensor& x, int64_t height, int64_t width);
    using Module::forward;
    std::string extra_repr() const override;

    std::shared_ptr<Conv2d> pwc1, dwc, pwc2;
    int64_t in_features, hidden_features, out_features;
};

// The DA block's SwiGLU (official modules/ffn/swiglu.py): a, g = fc1(x) split in halves,
// y = fc2(a * SiLU(g)). The FIRST half is the value and the second is gated, the other way
// round from nn::SwiGLU (timm SwiGLUPacked). fc1 (2 hidden, dim), fc2 (out, hidden), biases.
// Shapes: (..., dim) -> (..., out).
class SwiGLU : public Module {
  public:
    SwiGLU(int64_t dim, int64_t hidden, int64_t out_features = -1);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<Linear> fc1, fc2;
    int64_t hidden;
};

// GDLA decoder block (official GDLAM), NCHW in and out:
//   t = tokens(x);  u = SiLU(dwc(LN1(t) as map))  (dwc: DENSE 3x3 conv C -> C, bias);
//   t = t + attn(tokens(u));  t = t + mlp(LN2(t));  y = map(t).
// Parameters: norm1.*, dwc.weight (C, C, 3, 3), dwc.bias, attn.* (GatedDiffLinearAttn),
// norm2.*, mlp.* (GMLP with hidden int(hidden_ratio C)). LayerNorm eps norm_eps, affine.
// Shapes: x (B, C, H, W) -> (B, C, H, W). Throws [GDLAM] for a wrong input; the parts throw for
// a bad configuration.
class GDLAM : public Module {
  public:
    GDLAM(int64_t dim, int64_t n_heads, bool qkv_bias = true, double norm_eps = 1e-5,
          double hidden_ratio = 4.0);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<Conv2d> dwc;
    std::shared_ptr<attention::GatedDiffLinearAttn> attn;
    std::shared_ptr<GMLP> mlp;
    int64_t dim;
};

struct PreNormBlockOptions {
    bool qkv_bias = true;
    double norm_eps = 1e-5;
    double hidden_ratio = 4.0;
    bool use_rope = false;  // sa and da only
    double rope_base = 10000.0;
    int64_t depth = 1;  // da: lambda_init = 0.8 - 0.6 exp(-0.3 depth)
};

// The baseline decoder block (official MHSA / MHLA / MHDA blocks), NCHW in and out:
//   t = tokens(x);  t = t + attn(LN1(t));  t = t + ffn(LN2(t));  y = map(t),
// kind "sa": attn = MultiHeadSelfAttn ("pvt_sa"), ffn = GELU Mlp (fc1 C -> hidden, fc2);
// kind "la": MultiHeadLinearAttn ("linear") and the GELU Mlp; kind "da": MultiHeadDiffAttn
// ("pvt_da") and SwiGLU (fc1 C -> 2 hidden). hidden = int(hidden_ratio C). The attention is
// built through the registry and gets the grid in its context.
// Parameters: norm1.*, attn.*, norm2.*, mlp.fc1.*, mlp.fc2.*. Shapes: (B, C, H, W) -> same.
// Throws [PreNormBlock] for an unknown kind or a wrong input.
class PreNormBlock : public Module {
  public:
    PreNormBlock(const std::string& kind, int64_t dim, int64_t n_heads,
                 const PreNormBlockOptions& options = {});
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;

    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<attention::Attention> attn;
    std::shared_ptr<Module> mlp;
    std::string kind;
    int64_t dim;
};

}  // namespace lumen::nn::gdla
