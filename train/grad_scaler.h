// Dynamic loss scaling for float16 training (Micikevicius et al. 2018, "Mixed Precision
// Training", Sec. 3.2; torch.cuda.amp.GradScaler). Under float16 autocast (core/autocast.h)
// the gradients reaching a lowered GEMM are rounded to float16, whose smallest subnormal is
// 2^-24: small gradients would flush to zero. The loss is multiplied by a large scale S before
// backward, so every gradient is S times larger; before the update they are divided by S. A
// scale so large that some gradient overflows (inf or NaN) makes the step be skipped and S
// halve; after growth_interval clean steps in a row S doubles.
//
//   scaler.scale(loss).backward();
//   if (scaler.unscale_(optimizer)) { clip...; optimizer.step(); }  // false: overflow, skip
//   scaler.update();
//
// bfloat16 has float32's exponent range and needs no scaling.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "train/optim.h"

namespace lumen::train {

struct GradScalerOptions {
    double init_scale = 65536.0;  // 2^16, PyTorch's default
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;  // clean steps in a row before the scale grows
};

class GradScaler {
  public:
    // Throws [GradScaler] for init_scale not finite and > 0, growth_factor <= 1,
    // backoff_factor outside (0, 1) or growth_interval < 1.
    explicit GradScaler(GradScalerOptions options = {});

    // loss * scale (differentiable), to call backward on.
    Tensor scale(const Tensor& loss) const;
    // Divides the gradient of every parameter of `optimizer` by the scale, in place, once per
    // step (later calls before update() do nothing), and returns whether all of them are
    // finite. On false the gradients are not usable: skip the optimizer step.
    bool unscale_(Optimizer& optimizer);
    // After the step (taken or skipped): an overflow multiplies the scale by backoff_factor and
    // restarts the count of clean steps; growth_interval clean steps in a row multiply it by
    // growth_factor.
    void update();

    double get_scale() const { return scale_; }
    int64_t growth_tracker() const { return tracker_; }
    bool found_inf() const { return found_inf_; }
    // Restores the state a checkpoint recorded. Throws [GradScaler] for a scale that is not
    // finite and > 0 or a negative tracker.
    void load_state(double scale, int64_t growth_tracker);

  private:
    GradScalerOptions options_;
    double scale_;
    int64_t tracker_ = 0;
    bool unscaled_ = false, found_inf_ = false;
};

}  // namespace lumen::train
