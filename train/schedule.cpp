// LR schedule formulas: UTNet's warm-up + poly, PyTorch's OneCycleLR, timm's warm-up + cosine.
#include "train/schedule.h"

#include <cmath>
#include <numbers>

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

OneCycleLR::OneCycleLR(OneCycleOptions opts) : options(std::move(opts)) {
    const OneCycleOptions& o = options;
    LUMEN_CHECK(o.total_steps > 0, "OneCycleLR", "total_steps must be > 0, got ", o.total_steps);
    LUMEN_CHECK(o.max_lr >= 0, "OneCycleLR", "max_lr must be >= 0, got ", o.max_lr);
    LUMEN_CHECK(o.pct_start >= 0 && o.pct_start <= 1, "OneCycleLR",
                "pct_start must be in [0, 1], got ", o.pct_start);
    LUMEN_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear", "OneCycleLR",
                "anneal_strategy must be cos or linear, got '", o.anneal_strategy, "'");
    LUMEN_CHECK(o.div_factor > 0 && o.final_div_factor > 0, "OneCycleLR",
                "div_factor and final_div_factor must be > 0, got ", o.div_factor, " and ",
                o.final_div_factor);
    const double initial = o.max_lr / o.div_factor, final_lr = initial / o.final_div_factor;
    const double steps = double(o.total_steps), up = o.pct_start * steps;
    const double low = o.base_momentum, high = o.max_momentum;
    if (o.three_phase) {
        phases_ = {{up - 1, initial, o.max_lr, high, low},
                   {2 * up - 2, o.max_lr, initial, low, high},
                   {steps - 1, initial, final_lr, high, high}};
    } else {
        phases_ = {{up - 1, initial, o.max_lr, high, low},
                   {steps - 1, o.max_lr, final_lr, low, high}};
    }
}

double OneCycleLR::value(int64_t t, bool want_momentum) const {
    LUMEN_CHECK(t >= 0 && t <= options.total_steps, "OneCycleLR", "step ", t,
                " is outside [0, total_steps = ", options.total_steps, "]");
    double start_step = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
        const Phase& phase = phases_[i];
        if (double(t) <= phase.end_step || i + 1 == phases_.size()) {
            // A phase of zero length (pct_start 0 or 1) can only be reached at its end.
            const double length = phase.end_step - start_step;
            const double pct = length == 0 ? 1.0 : (double(t) - start_step) / length;
            const double start = want_momentum ? phase.start_momentum : phase.start_lr;
            const double end = want_momentum ? phase.end_momentum : phase.end_lr;
            if (options.anneal_strategy == "linear") return (end - start) * pct + start;
            return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
        }
        start_step = phase.end_step;
    }
    LUMEN_ASSERT(false);
    return 0.0;
}

double OneCycleLR::lr(int64_t t) const { return value(t, false); }

double OneCycleLR::momentum(int64_t t) const { return value(t, true); }

void OneCycleLR::apply(Optimizer& optimizer, int64_t t) const {
    optimizer.set_lr(lr(t));
    if (options.cycle_momentum) optimizer.set_momentum(momentum(t));
}

WarmupCosineLR::WarmupCosineLR(double base, int64_t total, int64_t warmup, double warmup_rate,
                               double min_rate)
    : base_lr(base),
      warmup_lr(warmup_rate),
      min_lr(min_rate),
      total_steps(total),
      warmup_steps(warmup) {
    LUMEN_CHECK(base_lr >= 0 && warmup_lr >= 0 && min_lr >= 0, "WarmupCosineLR",
                "learning rates must be >= 0, got base_lr ", base_lr, ", warmup_lr ", warmup_lr,
                ", min_lr ", min_lr);
    LUMEN_CHECK(warmup_steps >= 0 && total_steps > 0, "WarmupCosineLR",
                "needs warmup_steps >= 0 and total_steps > 0, got ", warmup_steps, " and ",
                total_steps);
}

double WarmupCosineLR::lr(int64_t t) const {
    LUMEN_CHECK(t >= 0, "WarmupCosineLR", "step must be >= 0, got ", t);
    if (t < warmup_steps)
        return warmup_lr + double(t) * (base_lr - warmup_lr) / double(warmup_steps);
    if (t >= total_steps) return min_lr;
    const double cosine = std::cos(std::numbers::pi * double(t) / double(total_steps));
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + cosine);
}

}  // namespace lumen::train
