// Feed-forward blocks of the transformers: timm's GELU Mlp and the packed SwiGLU
// (timm SwiGLUPacked, as DGViT/DGT use it), with timm's parameter names fc1 / fc2.
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/linear.h"

namespace lumen::nn {

// y = drop2(fc2(drop1(act(fc1(x))))). Shapes: (..., in) -> (..., out); fc1 (hidden, in),
// fc2 (out, hidden). act is "gelu" (exact erf) unless told otherwise (make_activation names).
class Mlp : public Module {
  public:
    Mlp(int64_t in_features, int64_t hidden_features, int64_t out_features = -1,
        const std::string& act = "gelu", double drop = 0.0, bool bias = true);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<Linear> fc1, fc2;
    std::shared_ptr<Module> act;
    std::shared_ptr<Dropout> drop1, drop2;
};

// Packed SwiGLU: u = fc1(x) (..., 2 hidden); a, b = u[..., :hidden], u[..., hidden:];
// y = drop2(fc2(drop1(silu(a) * b))). fc1 (2 hidden, dim), fc2 (out, hidden). The paper's
// expansion factor k gives hidden = floor(k dim / 2): use swiglu_hidden.
class SwiGLU : public Module {
  public:
    SwiGLU(int64_t dim, int64_t hidden, int64_t out_features = -1, double drop1 = 0.0,
           double drop2 = 0.0, bool bias = true);
    Tensor forward(const Tensor& x) override;

    std::shared_ptr<Linear> fc1, fc2;
    std::shared_ptr<Dropout> drop1, drop2;
    int64_t hidden;
};

// floor(k * dim / 2) for k = numerator / denominator, in exact integer arithmetic
// (k = 16/3 and dim 256 give 682; computing 16.0 / 3.0 * dim in floating point can be off by
// one). Throws [swiglu_hidden] for non-positive values.
int64_t swiglu_hidden(int64_t dim, int64_t numerator, int64_t denominator = 1);

}  // namespace lumen::nn
