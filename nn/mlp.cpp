// Mlp and SwiGLU forwards; autograd flows through the ops.
#include "nn/mlp.h"

#include "ops/elementwise.h"

namespace lumen::nn {

Mlp::Mlp(int64_t in, int64_t hidden, int64_t out, const std::string& activation, double drop,
         bool bias)
    : Module("Mlp") {
    if (out < 0) out = in;
    fc1 = register_module("fc1", make<Linear>(in, hidden, bias));
    act = register_module("act", make_activation(activation));
    drop1 = register_module("drop1", make<Dropout>(drop));
    fc2 = register_module("fc2", make<Linear>(hidden, out, bias));
    drop2 = register_module("drop2", make<Dropout>(drop));
}

Tensor Mlp::forward(const Tensor& x) {
    return drop2->forward(fc2->forward(drop1->forward(act->forward(fc1->forward(x)))));
}

SwiGLU::SwiGLU(int64_t dim, int64_t hidden_features, int64_t out, double p1, double p2, bool bias)
    : Module("SwiGLU"), hidden(hidden_features) {
    if (out < 0) out = dim;
    fc1 = register_module("fc1", make<Linear>(dim, 2 * hidden, bias));
    drop1 = register_module("drop1", make<Dropout>(p1));
    fc2 = register_module("fc2", make<Linear>(hidden, out, bias));
    drop2 = register_module("drop2", make<Dropout>(p2));
}

Tensor SwiGLU::forward(const Tensor& x) {
    Tensor u = fc1->forward(x);
    // The first half is gated: silu(a) * b (timm SwiGLUPacked).
    Tensor a = u.narrow(-1, 0, hidden), b = u.narrow(-1, hidden, hidden);
    return drop2->forward(fc2->forward(drop1->forward(mul(silu(a), b))));
}

int64_t swiglu_hidden(int64_t dim, int64_t numerator, int64_t denominator) {
    LUMEN_CHECK(dim > 0 && numerator > 0 && denominator > 0, "swiglu_hidden",
                "dim and k must be positive, got dim ", dim, ", k ", numerator, "/", denominator);
    return numerator * dim / (2 * denominator);
}

}  // namespace lumen::nn
