// Parameter-free layers: activations, Dropout and DropPath, as modules so that blocks can
// hold them by name (timm's `act`, `drop1`, `drop_path`) and eval() switches dropout off.
#pragma once

#include <string>

#include "nn/module.h"

namespace lumen::nn {

// GELU, exact (erf) by default or approximate = "tanh".
class GELU : public Module {
  public:
    explicit GELU(std::string approximate = "none");
    Tensor forward(const Tensor& x) override;
    std::string approximate;
};

class ReLU : public Module {
  public:
    ReLU() : Module("ReLU") {}
    Tensor forward(const Tensor& x) override;
};

class SiLU : public Module {
  public:
    SiLU() : Module("SiLU") {}
    Tensor forward(const Tensor& x) override;
};

class Sigmoid : public Module {
  public:
    Sigmoid() : Module("Sigmoid") {}
    Tensor forward(const Tensor& x) override;
};

class Tanh : public Module {
  public:
    Tanh() : Module("Tanh") {}
    Tensor forward(const Tensor& x) override;
};

// An activation by its config name: "gelu", "gelu_tanh", "relu", "silu" (alias "swish"),
// "sigmoid", "tanh", "identity". Throws [activation] naming the valid names.
std::shared_ptr<Module> make_activation(const std::string& name);

// Inverted dropout (ops/dropout.h) while training; the identity in eval mode or for p = 0.
class Dropout : public Module {
  public:
    explicit Dropout(double p = 0.5);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    double p;
};

// Stochastic depth (timm DropPath): drops whole samples while training, scaled by 1/keep.
class DropPath : public Module {
  public:
    explicit DropPath(double drop_prob = 0.0, bool scale_by_keep = true);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    double drop_prob;
    bool scale_by_keep;
};

}  // namespace lumen::nn
