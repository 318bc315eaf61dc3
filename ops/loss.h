// Loss functions with PyTorch's names, argument order, defaults and semantics
// (torch.nn.functional), plus charbonnier_loss. Each runs a dedicated kernel forward and
// backward; cross_entropy computes log_softmax over the class dim inside its kernel (no
// one-hot, no materialised log-probabilities). float32/float64 on CPU and CUDA (every tensor
// on the input's device; the result, reduced or not, too).
// reduction is "mean" (default), "sum" or "none": "mean" and "sum" give a 0-d tensor, "none"
// the per-element (per-sample for class losses) losses. Errors are lumen::Error "[op] ...".
#pragma once

#include <string>

#include "core/tensor.h"

namespace lumen {

// Shapes: input (N, C), (N, C, d1, ..., dk) or unbatched (C); the class dim is 1 (0 when
// unbatched). target is either
//  - class indices: int64 of shape (N), (N, d1, ..., dk) or () with values in [0, C) or
//    ignore_index. Per sample, with lse = logsumexp over C and ls = label_smoothing:
//      loss = (1 - ls) w[t] (lse - x[t]) + ls / C sum_c w[c] (lse - x[c]),  0 if ignored;
//    "mean" divides the sum by sum of w[t] over non-ignored samples (NaN when all are
//    ignored), exactly as PyTorch;
//  - class probabilities: a float tensor of input's shape and dtype; with q = (1 - ls) target
//    + ls / C: loss = sum_c w[c] q[c] (lse - x[c]); "mean" divides by the number of samples
//    (N d1 ... dk). ignore_index must stay negative here (PyTorch rejects it).
// weight: optional per-class weights (C) of input's dtype. Gradients: input, and target and
// weight in the probability form (as PyTorch, whose class-index form has no weight gradient).
// Throws on a target outside [0, C) (naming the value and C), on shapes that fit neither form, a
// wrong target or weight dtype, a weight not of length C, label_smoothing outside [0, 1], or an
// unknown reduction.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);

// Negative log-likelihood of log-probabilities: loss = -w[t] input[t] per sample, same shapes,
// class-index targets, weights, ignore_index and "mean" rule as cross_entropy. Gradient:
// input.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, const std::string& reduction = "mean");

// loss = w ((1 - y) x + (1 + (pos_weight - 1) y) log(1 + e^-x)) elementwise, computed stably
// (log1p and max, no overflow for any x). input and target of one shape; weight broadcasts to
// input's shape, pos_weight too (typically (C) along the last dim). Gradients: input and
// target (not the weights), as in PyTorch. "mean" divides by numel.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const std::string& reduction = "mean",
                                        const Tensor& pos_weight = Tensor());

// loss = -w (y log(x) + (1 - y) log(1 - x)) with each log clamped at -100, as in PyTorch.
// input holds probabilities in [0, 1] (throws naming the first value outside); target of
// input's shape; weight broadcasts to it. Gradients: input, target.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), const std::string& reduction = "mean");

// The regression losses take input and target of one dtype whose shapes broadcast together
// (as PyTorch, which warns); d = input - target; gradients for both.
// (d)^2.
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
// |d|; the gradient at d = 0 is 0.
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
// |d| < beta ? d^2 / (2 beta) : |d| - beta / 2; beta = 0 is l1_loss; beta < 0 throws.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);
// |d| < delta ? d^2 / 2 : delta (|d| - delta / 2); delta > 0 or throws.
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
// Charbonnier (a smooth L1): sqrt(d^2 + eps^2), eps = 1e-3 by default (eps inside the square,
// as in the denoising papers' losses); eps > 0 or throws.
Tensor charbonnier_loss(const Tensor& input, const Tensor& target, double eps = 1e-3,
                        const std::string& reduction = "mean");

}  // namespace lumen
