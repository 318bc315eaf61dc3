// LR schedule formulas.
#include "train/schedule.h"

#include <cmath>

#include "core/error.h"

namespace lumen::train {

ExpWarmupPolyLR::ExpWarmupPolyLR(double lr0, int64_t warmup, int64_t max, double exponent)
    : init_lr(lr0), power(exponent), warmup_epoch(warmup), max_epoch(max) {
    LUMEN_CHECK(init_lr >= 0 && warmup_epoch >= 0 && warmup_epoch < max_epoch, "ExpWarmupPolyLR",
                "needs init_lr >= 0 and 0 <= warmup_epoch < max_epoch, got init_lr ", init_lr,
                ", warmup_epoch ", warmup_epoch, ", max_epoch ", max_epoch);
}

double ExpWarmupPolyLR::lr(int64_t epoch) const {
    LUMEN_CHECK(epoch >= 0 && epoch <= max_epoch, "ExpWarmupPolyLR", "epoch must be in [0, ",
                max_epoch, "], got ", epoch);
    if (epoch == warmup_epoch) return init_lr;
    if (epoch < warmup_epoch) {
        // The official code writes Euler's number as 2.718; kept for identical values.
        return init_lr * std::pow(2.718, 10.0 * (double(epoch) / double(warmup_epoch) - 1.0));
    }
    return init_lr * std::pow(1.0 - double(epoch) / double(max_epoch), power);
}

}  // namespace lumen::train
