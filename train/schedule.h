// Learning-rate schedules: an LRSchedule maps a step or epoch index to a learning rate; the trainer
// applies it to the optimizer (apply: set_lr, and the momentum where the schedule cycles one) at
// the start of each step or epoch. Here UTNet's exponential warm-up + polynomial decay (UTNet, Gao
// et al. 2021, Sec. 3.2), PyTorch's OneCycleLR (Smith & Topin 2019; the context-length study's
// recipe) and timm's warm-up + cosine used by PVT-GDLA (its official configs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/optim.h"

namespace lumen::train {

class LRSchedule {
  public:
    virtual ~LRSchedule() = default;
    // The learning rate at index t (0-based step or epoch, as the schedule is used).
    virtual double lr(int64_t t) const = 0;
    virtual std::string name() const = 0;
    // Sets the values for index t on the optimizer: lr(t) here; schedules that also cycle a
    // momentum set that too.
    virtual void apply(Optimizer& optimizer, int64_t t) const { optimizer.set_lr(lr(t)); }
};

// UTNet's schedule, set once at the start of epoch e (0-based):
//   e <  warmup_epoch:  init_lr * 2.718^(10 (e / warmup_epoch - 1))    (the constant 2.718, not e)
//   e == warmup_epoch:  init_lr
//   e >  warmup_epoch:  init_lr * (1 - e / max_epoch)^0.9
// (init_lr 0.05, 5, 150: epoch 0 2.27e-6, 4 6.77e-3, 5 0.05, 149 5.5e-4.)
// lr() throws [ExpWarmupPolyLR] for e < 0 or e > max_epoch (the decay is undefined there).
class ExpWarmupPolyLR : public LRSchedule {
  public:
    // Throws [ExpWarmupPolyLR] unless init_lr >= 0 and 0 <= warmup_epoch < max_epoch.
    explicit ExpWarmupPolyLR(double init_lr = 0.05, int64_t warmup_epoch = 5,
                             int64_t max_epoch = 150, double power = 0.9);
    double lr(int64_t epoch) const override;
    std::string name() const override { return "exp_warmup_poly"; }
    double init_lr, power;
    int64_t warmup_epoch, max_epoch;
};

// torch.optim.lr_scheduler.OneCycleLR, stepped after every optimizer step (index t = the
// number of scheduler steps so far, 0 at the first optimizer step). With initial = max_lr /
// div_factor and final = initial / final_div_factor, the phases (end steps as floats, pct =
// pct_start, T = total_steps):
//   two-phase:   [0, pct T - 1]  initial -> max_lr,  momentum max -> base
//                [.., T - 1]      max_lr -> final,    momentum base -> max
//   three_phase: [0, pct T - 1] initial -> max_lr; [.., 2 pct T - 2] max_lr -> initial
//                (momentum back up); [.., T - 1] initial -> final (momentum stays max).
// In the phase from a to b, p = (t - a) / (b - a) and value = anneal(start, end, p) with
// cos: end + (start - end) (1 + cos(pi p)) / 2, linear: start + (end - start) p; the last
// phase also takes any t beyond its end up to T. The momentum is SGD's momentum or Adam's
// beta1 (set by apply when cycle_momentum).
struct OneCycleOptions {
    double max_lr = 0.0;
    int64_t total_steps = 0;
    double pct_start = 0.3;
    std::string anneal_strategy = "cos";  // or "linear"
    bool cycle_momentum = true;
    double base_momentum = 0.85;
    double max_momentum = 0.95;
    double div_factor = 25.0;
    double final_div_factor = 1e4;
    bool three_phase = false;
};

class OneCycleLR : public LRSchedule {
  public:
    // Throws [OneCycleLR] for total_steps <= 0, max_lr < 0, pct_start outside [0, 1], an
    // unknown anneal_strategy, or div factors <= 0.
    explicit OneCycleLR(OneCycleOptions options);
    // Both throw [OneCycleLR] for t < 0 or t > total_steps (PyTorch's "tried to step" error).
    double lr(int64_t t) const override;
    double momentum(int64_t t) const;
    void apply(Optimizer& optimizer, int64_t t) const override;
    std::string name() const override { return "one_cycle"; }
    OneCycleOptions options;

  private:
    struct Phase {
        double end_step, start_lr, end_lr, start_momentum, end_momentum;
    };
    // The lr (or momentum) at t: anneal over the phase that holds t.
    double value(int64_t t, bool want_momentum) const;
    std::vector<Phase> phases_;
};

// timm's CosineLRScheduler as PVT-GDLA's configs use it, per iteration (t_in_epochs False, no
// warmup prefix, one cycle), index t = optimizer updates done so far:
//   t < warmup_steps:  warmup_lr + t (base_lr - warmup_lr) / warmup_steps
//   t < total_steps:   min_lr + (base_lr - min_lr) (1 + cos(pi t / total_steps)) / 2
//   otherwise:         min_lr
// (The cosine is measured from step 0, so it starts below base_lr after the warm-up.)
class WarmupCosineLR : public LRSchedule {
  public:
    // Throws [WarmupCosineLR] for negative rates, warmup_steps < 0 or total_steps <= 0.
    WarmupCosineLR(double base_lr, int64_t total_steps, int64_t warmup_steps = 0,
                   double warmup_lr = 1e-6, double min_lr = 1e-6);
    double lr(int64_t t) const override;  // throws [WarmupCosineLR] for t < 0
    std::string name() const override { return "warmup_cosine"; }
    double base_lr, warmup_lr, min_lr;
    int64_t total_steps, warmup_steps;
};

}  // namespace lumen::train
