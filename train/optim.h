// Optimizers with PyTorch's update rules. Optimizer holds parameter groups (each with its
// own lr, weight_decay and parameters, so that biases and norm weights can be exempted from
// decay) and per-parameter state tensors; subclasses implement step(): SGD, Adam and AdamW
// (decoupled weight decay, Loshchilov & Hutter 2019).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace lumen::train {

struct ParamGroup {
    std::vector<Tensor> params;
    double lr = 0.0;
    double weight_decay = 0.0;
    // set_lr (what schedules call) gives this group lr * lr_scale: a per-module learning-rate
    // multiplier (e.g. 0.1 for a pretrained encoder).
    double lr_scale = 1.0;
};

// A parameter's optimizer state by name ("momentum_buffer", later "exp_avg", "step", ...).
using ParamState = std::map<std::string, Tensor>;

class Optimizer {
  public:
    // Throws [<name>] for an empty group list, an empty group, a parameter that is not a
    // floating tensor, a parameter listed twice, or a negative lr or weight_decay.
    Optimizer(std::string name, std::vector<ParamGroup> groups);
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    // One update of every parameter that has a gradient, in place (the parameters keep
    // their identity, so modules see the new values), with autograd recording off.
    virtual void step() = 0;
    // Clears every parameter's .grad() (PyTorch's set_to_none = true).
    void zero_grad();

    std::vector<ParamGroup>& param_groups() { return groups_; }
    const std::vector<ParamGroup>& param_groups() const { return groups_; }
    // Sets the lr of every group to lr * its lr_scale (what an LR schedule does once per step
    // or epoch).
    void set_lr(double lr);
    // Sets the momentum a schedule cycles (OneCycleLR): SGD's momentum, Adam's beta1. Throws
    // [<name>] for an optimizer without one or a value outside its range.
    virtual void set_momentum(double momentum);
    const std::string& name() const { return name_; }

    // The state of `param`, created empty on first use; find_state returns null when none.
    ParamState& state(const Tensor& param);
    const ParamState* find_state(const Tensor& param) const;
    // Checks a state read back from a file before it replaces a parameter's: the names this
    // optimizer keeps, each tensor with the parameter's shape and dtype, counts as finite
    // non-negative 0-d tensors. Returns "" when it fits, else what is wrong (for a message
    // that also names the file and the parameter).
    virtual std::string check_state(const Tensor& param, const ParamState& state) const;

  protected:
    static void check_hyper(const std::string& who, const char* what, double value);

  private:
    std::string name_;
    std::vector<ParamGroup> groups_;
    std::unordered_map<const TensorImpl*, ParamState> state_;
};

// SGD as torch.optim.SGD (momentum, dampening, nesterov, weight decay coupled into the
// gradient). Per parameter p with gradient g, at each step:
//   g <- -g if maximize;  g <- g + weight_decay p
//   if momentum != 0:  buf <- g (first step)  else  buf <- momentum buf + (1 - dampening) g
//                      g <- g + momentum buf (nesterov)  else  g <- buf
//   p <- p - lr g
// The state is "momentum_buffer". Parameters without a gradient are skipped.
struct SGDOptions {
    double momentum = 0.0;
    double dampening = 0.0;
    bool nesterov = false;
    bool maximize = false;
};

class SGD : public Optimizer {
  public:
    // Throws [SGD] for negative momentum or dampening, or nesterov without momentum or with
    // dampening (PyTorch's rule).
    SGD(std::vector<ParamGroup> groups, SGDOptions options = {});
    // One group of every parameter with the given lr and weight decay.
    SGD(const std::vector<Tensor>& params, double lr, SGDOptions options = {},
        double weight_decay = 0.0);
    void step() override;
    void set_momentum(double momentum) override;  // >= 0
    std::string check_state(const Tensor& param, const ParamState& state) const override;
    SGDOptions options;
};

// Adam as torch.optim.Adam (Kingma & Ba 2015, PyTorch's exact rule). Per parameter p with
// gradient g, at step k (1-based, counted per parameter):
//   g <- -g if maximize
//   Adam:  g <- g + weight_decay p          AdamW:  p <- p (1 - lr weight_decay)
//   m <- beta1 m + (1 - beta1) g,   v <- beta2 v + (1 - beta2) g^2
//   v_hat <- max(v_hat, v) if amsgrad, else v
//   p <- p - lr / (1 - beta1^k) m / (sqrt(v_hat) / sqrt(1 - beta2^k) + eps)
// beta1 is read at every step (a schedule may cycle it: the bias correction uses the current
// value, as PyTorch does). The state is "step" (a 0-d float64 CPU count), "exp_avg",
// "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq". Parameters without a gradient are skipped.
// fused (the default): on the CPU, a float32/float64 parameter whose gradient and state are
// contiguous is updated in one pass over p, g, m and v (torch.optim.Adam's fused=True), in the
// same float operations as the composition of ops, which runs otherwise (CUDA, other layouts) and
// with fused = false. The composition reads and writes every tensor five to seven times and
// allocates as many temporaries: on a model of tens of millions of parameters it takes a tenth of
// the training step.
struct AdamOptions {
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    bool amsgrad = false;
    bool maximize = false;
    bool fused = true;
};

class Adam : public Optimizer {
  public:
    // Throws [Adam] unless 0 <= beta1, beta2 < 1 and eps >= 0.
    Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
    // One group of every parameter with the given lr and weight decay (PyTorch's defaults).
    Adam(const std::vector<Tensor>& params, double lr = 1e-3, AdamOptions options = {},
         double weight_decay = 0.0);
    void step() override;
    void set_momentum(double beta1) override;  // in [0, 1)
    std::string check_state(const Tensor& param, const ParamState& state) const override;
    AdamOptions options;

  protected:
    Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions options, bool decoupled);

  private:
    void update(Tensor& param, const ParamGroup& group);
    bool decoupled_weight_decay_;
};

// AdamW as torch.optim.AdamW: Adam with the weight decay applied to the parameter directly
// (p <- p (1 - lr weight_decay)) instead of through the gradient; default decay 0.01.
class AdamW : public Adam {
  public:
    // Throws [AdamW] like Adam.
    AdamW(std::vector<ParamGroup> groups, AdamOptions options = {});
    AdamW(const std::vector<Tensor>& params, double lr = 1e-3, AdamOptions options = {},
          double weight_decay = 1e-2);
};

}  // namespace lumen::train
