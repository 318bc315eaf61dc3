// LRScheduler: the index a PyTorch scheduler object keeps, over a stateless LRSchedule.
#include "train/scheduler.h"

#include "core/error.h"

namespace lumen::train {

LRScheduler::LRScheduler(Optimizer& optimizer, std::shared_ptr<const LRSchedule> schedule)
    : optimizer_(optimizer), schedule_(std::move(schedule)) {
    LUMEN_CHECK(schedule_ != nullptr, "LRScheduler", "needs a schedule, got null");
    schedule_->apply(optimizer_, 0);
}

void LRScheduler::step() { set_index(index_ + 1); }

void LRScheduler::set_index(int64_t t) {
    LUMEN_CHECK(t >= 0, "LRScheduler", "index must be >= 0, got ", t);
    schedule_->apply(optimizer_, t);
    index_ = t;
}

}  // namespace lumen::train
