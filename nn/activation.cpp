// Activation, Dropout and DropPath modules: thin wrappers over the ops.
#include "nn/activation.h"

#include <cstdio>

#include "nn/linear.h"
#include "nn/repr_text.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"

namespace lumen::nn {

GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
    LUMEN_CHECK(approximate == "none" || approximate == "tanh", "GELU",
                "approximate must be 'none' or 'tanh', got '", approximate, "'");
}
Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }
Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }

std::shared_ptr<Module> make_activation(const std::string& name) {
    if (name == "gelu") return make<GELU>();
    if (name == "gelu_tanh") return make<GELU>("tanh");
    if (name == "relu") return make<ReLU>();
    if (name == "silu" || name == "swish") return make<SiLU>();
    if (name == "sigmoid") return make<Sigmoid>();
    if (name == "tanh") return make<Tanh>();
    if (name == "identity") return make<Identity>();
    LUMEN_FAIL("activation", "unknown activation '", name,
               "' (expected gelu, gelu_tanh, relu, silu, swish, sigmoid, tanh or identity)");
}

Dropout::Dropout(double probability) : Module("Dropout"), p(probability) {
    LUMEN_CHECK(p >= 0 && p <= 1, "Dropout", "p must be in [0, 1], got ", p);
}
Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }
std::string Dropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

DropPath::DropPath(double probability, bool scale)
    : Module("DropPath"), drop_prob(probability), scale_by_keep(scale) {
    LUMEN_CHECK(drop_prob >= 0 && drop_prob <= 1, "DropPath", "drop_prob must be in [0, 1], got ",
                drop_prob);
}
Tensor DropPath::forward(const Tensor& x) {
    return drop_path(x, drop_prob, is_training(), scale_by_keep);
}
// timm's form: drop_prob=0.100.
std::string DropPath::extra_repr() const {
    char text[32];
    std::snprintf(text, sizeof(text), "drop_prob=%.3f", drop_prob);
    return text;
}

}  // namespace lumen::nn
