// The plain learning-rate schedules: constant, step decay, exponential decay (UTNet's alternative),
// and linear warm-up + linear decay (the DGT text recipe, Lygizou et al. 2025, Sec. 5.2; Hugging
// Face's get_linear_schedule_with_warmup). The interface and the paper-specific schedules are in
// schedule.h; ScheduleInterval says whether a trainer steps a schedule per step or per epoch.
#pragma once

#include <cstdint>
#include <string>

#include "train/schedule.h"

namespace lumen::train {

// When a schedule is applied: before every optimizer update with t = updates done so far
// ("step"), or at the start of every epoch with t = the 0-based epoch ("epoch").
enum class ScheduleInterval { step, epoch };
// "step" or "epoch"; throws [schedule] naming the value otherwise.
ScheduleInterval parse_schedule_interval(const std::string& text);
const char* schedule_interval_name(ScheduleInterval interval);

// lr(t) = base_lr for every t >= 0. (Not torch's ConstantLR, which scales by a factor for a
// number of steps.) Throws [ConstantLR] for base_lr < 0 or t < 0.
class ConstantLR : public LRSchedule {
  public:
    explicit ConstantLR(double base_lr);
    double lr(int64_t t) const override;
    std::string name() const override { return "constant"; }
    double base_lr;
};

// torch.optim.lr_scheduler.StepLR: lr(t) = base_lr * gamma^floor(t / step_size).
// Throws [StepLR] for base_lr < 0, step_size < 1, gamma <= 0 or t < 0.
class StepLR : public LRSchedule {
  public:
    StepLR(double base_lr, int64_t step_size, double gamma = 0.1);
    double lr(int64_t t) const override;
    std::string name() const override { return "step"; }
    double base_lr;
    int64_t step_size;
    double gamma;
};

// torch.optim.lr_scheduler.ExponentialLR: lr(t) = base_lr * gamma^t.
// Throws [ExponentialLR] for base_lr < 0, gamma <= 0 or t < 0.
class ExponentialLR : public LRSchedule {
  public:
    ExponentialLR(double base_lr, double gamma);
    double lr(int64_t t) const override;
    std::string name() const override { return "exponential"; }
    double base_lr, gamma;
};

// Linear warm-up from 0 to peak_lr over warmup_steps, then linear decay to 0 at total_steps:
//   t < warmup_steps:  peak_lr * t / warmup_steps
//   otherwise:         peak_lr * max(0, (total_steps - t) / (total_steps - warmup_steps))
// Throws [LinearWarmupDecayLR] for peak_lr < 0, warmup_steps < 0, total_steps <= warmup_steps
// or t < 0.
class LinearWarmupDecayLR : public LRSchedule {
  public:
    LinearWarmupDecayLR(double peak_lr, int64_t warmup_steps, int64_t total_steps);
    double lr(int64_t t) const override;
    std::string name() const override { return "linear_warmup_decay"; }
    double peak_lr;
    int64_t warmup_steps, total_steps;
};

}  // namespace lumen::train
