// Gradient utilities of a training step: global-norm clipping (torch.nn.utils.clip_grad_norm_)
// and the NaN/inf guard that stops training with the step and the first non-finite tensor.
// Gradient accumulation is the trainer's (train/trainer.h): it scales the loss and steps the
// optimizer every k micro-batches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace lumen::train {

// The norm of all gradients taken together, as if concatenated into one vector:
// (sum_p ||grad_p||_q^q)^(1/q) for norm_type q > 0, max |grad| for q = inf. Parameters without
// a gradient are skipped (0 when none has one). Accumulated in float64 on the host.
// Throws [clip_grad_norm_] for norm_type <= 0 or NaN.
double total_grad_norm(const std::vector<Tensor>& params, double norm_type = 2.0);

// torch.nn.utils.clip_grad_norm_: scales every gradient in place by
// min(1, max_norm / (total_norm + 1e-6)) and returns total_norm (before clipping). A
// non-finite norm leaves the gradients alone (the NaN guard reports it) unless
// error_if_nonfinite, which throws [clip_grad_norm_] with the norm.
// Throws [clip_grad_norm_] for max_norm <= 0 or a bad norm_type.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// The first non-finite value among named tensors: the tensor's name, the flat index (row-major)
// and the value; name empty when every value is finite.
struct NonFinite {
    std::string name;
    int64_t index = -1;
    double value = 0.0;
    bool found() const { return !name.empty(); }
};

// Scans each tensor in order (any device, floating dtypes only; others are skipped).
NonFinite find_non_finite(const std::vector<std::pair<std::string, Tensor>>& tensors);

// The guard run after backward: when `loss` is not finite, or a parameter value or gradient of
// `module` is not, throws
//   [nan_guard] step <step>: loss is nan; first non-finite: gradient of blocks.0.attn.qkv.weight
//   at index 17 = nan
// naming the parameter values first (a value that is already broken explains its gradient),
// then the gradients, in named_parameters order ("every parameter and gradient is finite" when
// only the loss is broken). The full scan runs only when the loss or the gradient norm is not
// finite; `grad_norm` (from clip_grad_norm_) saves computing the norm again.
void check_finite(const nn::Module& module, double loss, int64_t step,
                  std::optional<double> grad_norm = std::nullopt);

}  // namespace lumen::train
