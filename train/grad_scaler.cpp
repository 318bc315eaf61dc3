// train/grad_scaler.h: the loss scale, unscaling with the overflow check, and the update rule.
#include "train/grad_scaler.h"

#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen::train {

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {
    const GradScalerOptions& o = options_;
    LUMEN_CHECK(std::isfinite(o.init_scale) && o.init_scale > 0, "GradScaler",
                "init_scale must be finite and > 0, got ", o.init_scale);
    LUMEN_CHECK(std::isfinite(o.growth_factor) && o.growth_factor > 1, "GradScaler",
                "growth_factor must be > 1, got ", o.growth_factor);
    LUMEN_CHECK(o.backoff_factor > 0 && o.backoff_factor < 1, "GradScaler",
                "backoff_factor must be in (0, 1), got ", o.backoff_factor);
    LUMEN_CHECK(o.growth_interval >= 1, "GradScaler", "growth_interval must be >= 1, got ",
                o.growth_interval);
}

Tensor GradScaler::scale(const Tensor& loss) const { return mul(loss, scale_); }

bool GradScaler::unscale_(Optimizer& optimizer) {
    if (unscaled_) return !found_inf_;
    NoGradGuard no_grad;
    const double inverse = 1.0 / scale_;
    // sum(g * 0) is NaN exactly when some element of g is inf or NaN: one reduction per
    // tensor, added up on the device, and a single read at the end (one sync on a GPU).
    Tensor poison;
    for (ParamGroup& group : optimizer.param_groups()) {
        for (Tensor& param : group.params) {
            Tensor g = param.grad();
            if (!g.defined()) continue;
            Tensor unscaled = mul(g, inverse);
            Tensor term = sum(mul(unscaled, 0.0)).to(DType::float32);
            poison = poison.defined() ? add(poison, term) : term;
            param.set_grad(unscaled);
        }
    }
    found_inf_ = poison.defined() && !std::isfinite(poison.item<double>());
    unscaled_ = true;
    return !found_inf_;
}

void GradScaler::update() {
    if (found_inf_) {
        scale_ *= options_.backoff_factor;
        tracker_ = 0;
    } else if (++tracker_ == options_.growth_interval) {
        scale_ *= options_.growth_factor;
        tracker_ = 0;
    }
    unscaled_ = found_inf_ = false;
}

void GradScaler::load_state(double scale, int64_t growth_tracker) {
    LUMEN_CHECK(std::isfinite(scale) && scale > 0 && growth_tracker >= 0, "GradScaler",
                "a saved loss scale must be finite and > 0 and its growth tracker >= 0, got ",
                scale, " and ", growth_tracker);
    scale_ = scale;
    tracker_ = growth_tracker;
    unscaled_ = found_inf_ = false;
}

}  // namespace lumen::train
