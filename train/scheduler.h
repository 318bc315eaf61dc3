// A stateful learning-rate scheduler, as PyTorch's torch.optim.lr_scheduler objects are used:
// construct it on an optimizer (which gets the schedule's first value), call step() after each
// optimizer step (or epoch), read last_lr(). It wraps a stateless LRSchedule (schedule.h), which
// the trainer uses directly with the index it keeps in its checkpoints.
#pragma once

#include <cstdint>
#include <memory>

#include "train/schedule.h"

namespace lumen::train {

class LRScheduler {
  public:
    // Applies schedule->lr(0) (and its momentum, where it cycles one) to `optimizer`, which must
    // outlive the scheduler. Throws [LRScheduler] for a null schedule.
    LRScheduler(Optimizer& optimizer, std::shared_ptr<const LRSchedule> schedule);
    // Advances the index by one and applies the schedule's values there (torch's step()).
    void step();
    // The number of step() calls so far (torch's last_epoch), and the lr now applied.
    int64_t last_index() const { return index_; }
    double last_lr() const { return schedule_->lr(index_); }
    // Moves to index t and applies it, to resume from a saved index. Throws [LRScheduler] for
    // t < 0.
    void set_index(int64_t t);
    const LRSchedule& schedule() const { return *schedule_; }

  private:
    Optimizer& optimizer_;
    std::shared_ptr<const LRSchedule> schedule_;
    int64_t index_ = 0;
};

}  // namespace lumen::train
