// Internal: the loss kernels. Class losses (cross_entropy, nll_loss) see their input as
// contiguous (N, C, S): S = d1 * ... * dk positions per sample, so element (n, c, s) sits at
// (n * C + c) * S + s. Pointwise losses (mse, l1, smooth_l1, huber, charbonnier,
// binary_cross_entropy[_with_logits]) see contiguous input and target of one shape and
// optional broadcast weights. An absent optional view has data == nullptr. Totals are summed
// per fixed block of the data and the blocks added in order in double, so they do not depend
// on the thread count. Kernels in ops/cpu/loss.cpp and ops/cpu/loss_pointwise.cpp; the CUDA
// ones (same signatures and semantics, totals summed per block and the blocks added in order
// in float, double for float64) in ops/cuda/loss.cu and ops/cuda/loss_pointwise.cu.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// The per-element losses that share one kernel; `param` is beta, delta or eps.
enum class PointwiseLoss {
    mse,                               // (x - y)^2
    l1,                                // |x - y|
    smooth_l1,                         // |d| < beta ? d^2 / (2 beta) : |d| - beta / 2   (beta > 0)
    huber,                             // |d| < delta ? d^2 / 2 : delta (|d| - delta / 2)
    charbonnier,                       // sqrt(d^2 + eps^2)
    binary_cross_entropy,              // -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100))
    binary_cross_entropy_with_logits,  // w ((1 - y) x + (1 + (pw - 1) y) softplus(-x))
};

struct ClassLossOptions {
    int64_t ignore_index = -100;
    double label_smoothing = 0.0;  // cross_entropy only
    bool from_logits = true;       // cross_entropy: log_softmax over C inside the kernel
};

namespace cpu {

// ---- class-index targets: cross_entropy (from logits) and nll_loss (from log-probs) ----

// Shapes: input (N, C, S) contiguous float32/float64; target (N, S) int64 contiguous; weight
// (C) of input's dtype or absent; losses (N, S) and lse (2, N, S) of input's dtype, each
// optional (lse is only written when from_logits): lse[0] the max over C, lse[1] the log of
// sum_c e^(x_c - max), so that lse = lse[0] + lse[1] (kept apart: ops/loss_math.h). For each
// sample with target t != ignore_index:
//   loss = (1 - ls) w[t] (lse - x[t]) + ls / C sum_c w[c] (lse - x[c])   (from logits)
//   loss = -w[t] x[t]                                                     (nll)
// and 0 for ignored samples. totals[0] = sum of losses, totals[1] = sum of w[t] over
// non-ignored samples. Returns -1, or the flat index of the first target outside [0, C)
// that is not ignore_index (the losses are then unspecified).
int64_t class_loss_forward(const StridedView& input, const StridedView& target,
                           const StridedView& weight, const ClassLossOptions& options,
                           const StridedView& losses, const StridedView& lse, double totals[2]);

// grad_input (N, C, S) contiguous, with g = scale * (grad_losses ? grad_losses[n, s] : 1):
//   from logits: g ((1 - ls) w[t] + ls / C sum w) softmax_c - g (1 - ls) w[t] [c == t]
//                - g ls / C w[c]
//   nll:         -g w[t] [c == t]
// and zero rows for ignored samples. `lse` is the forward's (needed when from_logits).
void class_loss_backward(const StridedView& input, const StridedView& target,
                         const StridedView& weight, const ClassLossOptions& options,
                         const StridedView& lse, const StridedView& grad_losses, double scale,
                         const StridedView& grad_input);

// ---- class-probability targets: cross_entropy with a float target of the input's shape ----

// Shapes: input, target (N, C, S) contiguous; weight (C) or absent; losses (N, S), optional;
// lse (2, N, S) as for class_loss_forward. With q = (1 - ls) target + ls / C:
//   loss = sum_c w[c] q[c] (lse - x[c]);   totals[0] = sum of losses.
void soft_cross_entropy_forward(const StridedView& input, const StridedView& target,
                                const StridedView& weight, double label_smoothing,
                                const StridedView& losses, const StridedView& lse, double* total);

// grad_input = g (softmax_c sum_k w[k] q[k] - w[c] q[c]) and, when grad_target is given,
// grad_target = g (1 - ls) w[c] (lse - x[c]); g as in class_loss_backward.
void soft_cross_entropy_backward(const StridedView& input, const StridedView& target,
                                 const StridedView& weight, double label_smoothing,
                                 const StridedView& lse, const StridedView& grad_losses,
                                 double scale, const StridedView& grad_input,
                                 const StridedView& grad_target);

// ---- pointwise losses ----

// input, target contiguous of one shape and dtype; weight and pos_weight (bce kinds only)
// absent or viewed with input's shape (broadcast strides). Writes the per-element loss to
// `out` (contiguous, optional) and returns the sum of all of them in double. For
// binary_cross_entropy, returns -1 in *invalid or the first flat index whose input lies
// outside [0, 1] (or is NaN); *invalid is -1 for the other kinds.
double pointwise_loss_forward(PointwiseLoss kind, double param, const StridedView& input,
                              const StridedView& target, const StridedView& weight,
                              const StridedView& pos_weight, const StridedView& out,
                              int64_t* invalid);

// d loss / d input and d loss / d target (each optional) times g = scale * (grad_losses ?
// grad_losses[i] : 1); gradients are contiguous of input's shape.
//   mse 2d, l1 sign(d), smooth_l1 |d| < beta ? d / beta : sign(d), huber clamp(d, +-delta),
//   charbonnier d / sqrt(d^2 + eps^2)   (d = x - y; grad_target = -grad_input)
//   bce: w (x - y) / max(x (1 - x), 1e-12); target: w (max(log(1 - x), -100) - max(log x, -100))
//   bce_with_logits: w ((1 + (pw - 1) y) sigmoid(x) - pw y);
//                    target: w (log_sigmoid(-x) - pw log_sigmoid(x))
void pointwise_loss_backward(PointwiseLoss kind, double param, const StridedView& input,
                             const StridedView& target, const StridedView& weight,
                             const StridedView& pos_weight, const StridedView& grad_losses,
                             double scale, const StridedView& grad_input,
                             const StridedView& grad_target);

}  // namespace cpu

// The same kernels on the tensors' CUDA device, float32/float64. The host values they return
// (totals, the first invalid index) are copied back after the launches (one synchronization).
namespace cuda {
LUMEN_CUDA_API int64_t class_loss_forward(const StridedView& input, const StridedView& target,
                                          const StridedView& weight,
                                          const ClassLossOptions& options,
                                          const StridedView& losses, const StridedView& lse,
                                          double totals[2]);
LUMEN_CUDA_API void class_loss_backward(const StridedView& input, const StridedView& target,
                                        const StridedView& weight, const ClassLossOptions& options,
                                        const StridedView& lse, const StridedView& grad_losses,
                                        double scale, const StridedView& grad_input);
LUMEN_CUDA_API void soft_cross_entropy_forward(const StridedView& input, const StridedView& target,
                                               const StridedView& weight, double label_smoothing,
                                               const StridedView& losses, const StridedView& lse,
                                               double* total);
LUMEN_CUDA_API void soft_cross_entropy_backward(const StridedView& input, const StridedView& target,
                                                const StridedView& weight, double label_smoothing,
                                                const StridedView& lse,
                                                const StridedView& grad_losses, double scale,
                                                const StridedView& grad_input,
                                                const StridedView& grad_target);
LUMEN_CUDA_API double pointwise_loss_forward(PointwiseLoss kind, double param,
                                             const StridedView& input, const StridedView& target,
                                             const StridedView& weight,
                                             const StridedView& pos_weight, const StridedView& out,
                                             int64_t* invalid);
LUMEN_CUDA_API void pointwise_loss_backward(
    PointwiseLoss kind, double param, const StridedView& input, const StridedView& target,
    const StridedView& weight, const StridedView& pos_weight, const StridedView& grad_losses,
    double scale, const StridedView& grad_input, const StridedView& grad_target);
}  // namespace cuda

}  // namespace lumen
