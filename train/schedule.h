// Learning-rate schedules: an LRSchedule maps a step or epoch index to a learning rate; the
// trainer sets it on the optimizer (Optimizer::set_lr) at the start of each step or epoch.
// Here UTNet's exponential warm-up + polynomial decay (spec sfree_utnet §5.3, official
// exp_lr_scheduler_with_warmup); constant, step, cosine, one-cycle, ... sit beside it (issue 7).
#pragma once

#include <cstdint>
#include <string>

namespace lumen::train {

class LRSchedule {
  public:
    virtual ~LRSchedule() = default;
    // The learning rate at index t (0-based step or epoch, as the schedule is used).
    virtual double lr(int64_t t) const = 0;
    virtual std::string name() const = 0;
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

}  // namespace lumen::train
