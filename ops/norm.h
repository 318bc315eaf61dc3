// Normalization ops with PyTorch names and semantics (torch.nn.functional): layer_norm, rms_norm,
// group_norm, instance_norm, batch_norm, normalize, plus seq_norm (normalization over the token
// axis of (B, N, D), the sequence normalization of Khader et al., Sec. 2.1) and sync_batch_norm
// (batch_norm over the samples of several processes, nn.SyncBatchNorm). float32/float64 on CPU
// and CUDA; layer_norm and rms_norm also take float16/bfloat16 on CUDA (statistics in float32,
// weight and bias of the input's dtype). Optional weight/bias are undefined Tensors when absent;
// every tensor must be on the input's device. Every op is differentiable in x, weight and bias
// through dedicated backward kernels; variances in the normalization are biased (divide by the
// count), statistics accumulate in double (CPU) or float (CUDA; double for float64).
#pragma once

#include <functional>

#include "core/tensor.h"

namespace lumen {

// Normalizes over the last normalized_shape.size() dims of x (which must equal
// normalized_shape): y = (x - mean) / sqrt(var + eps) * weight + bias; weight and bias have
// shape normalized_shape.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// y = x / sqrt(mean(x^2) + eps) * weight over the last normalized_shape.size() dims
// (torch.nn.functional.rms_norm; PyTorch's eps=None means finfo(dtype).eps, here eps is
// explicit).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                double eps = 1e-6);

// x (N, C, *): the C channels split into num_groups groups, each normalized over its channels
// and all spatial positions; weight and bias have shape (C). C % num_groups must be 0.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// x (N, C, *spatial) with at least one spatial dim; each (n, c) plane is normalized over its
// spatial positions (use_input_stats, the default). Given running_mean/running_var (shape (C)),
// they are updated in place: r = (1 - momentum) r + momentum * (the batch mean over n of the
// per-instance mean, resp. unbiased variance). use_input_stats = false normalizes with the
// running statistics instead (they are then required). weight, bias: (C).
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = Tensor(),
                     const Tensor& running_var = Tensor(), const Tensor& weight = Tensor(),
                     const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

// x (N, C), (N, C, L), (N, C, H, W) or (N, C, D, H, W): per channel statistics over every
// dim but C. training: normalizes with the batch mean and biased variance (the gradient flows
// through them) and, when given, updates running_mean/running_var in place:
//   r = (1 - momentum) r + momentum * batch value (unbiased variance for running_var).
// nn.BatchNorm's momentum=None (cumulative average) is the caller passing
// momentum = 1 / num_batches_tracked. Training needs more than one value per channel.
// Evaluation (training = false) normalizes with the running statistics (required then).
// running stats, weight and bias have shape (C).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

// Sums a small tensor over the processes of a data-parallel job, in place (a sum all-reduce,
// as torch.distributed.all_reduce): every process calls it in the same order with a tensor of
// the same shape, contiguous, float64, on the input's device. One process: the identity.
using AllReduceSum = std::function<void(Tensor&)>;

// batch_norm in training mode over the samples of every process that calls it together
// (nn.SyncBatchNorm): per channel, the mean and biased variance of the global batch (each
// process's count, mean and M2 merged with two all_reduce calls), normalization with them,
// and running_mean/running_var (optional, together) updated with the global mean and unbiased
// variance, exactly as one process holding the global batch would. The backward all-reduces
// the per-channel sums of grad_out and grad_out * xhat, so grad_x is the row of the global
// batch's gradient; grad_weight and grad_bias are this process's part (sum them over the
// processes, as data-parallel gradient averaging does). x's batch size may differ between
// processes (0 too); the channels may not. With an identity all_reduce it is batch_norm with
// training = true. Shapes as batch_norm; float32/float64, CPU and CUDA. Throws
// [sync_batch_norm] for the shapes batch_norm refuses, without all_reduce, or for a global
// batch with exactly one value per channel (on every process alike).
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       const AllReduceSum& all_reduce);

// Sequence normalization: x (B, N, D); for every b and feature d, mean and biased variance
// over the N tokens, y = (x - mean) / sqrt(var + eps) * weight[d] + bias[d]; weight/bias (D).
Tensor seq_norm(const Tensor& x, const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                double eps = 1e-5);

// x / max(||x||_p, eps) along dim (F.normalize); p >= 1 and finite. The gradient does not flow
// through the norm where it is clamped to eps; d|x|/dx at 0 is 0.
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

}  // namespace lumen
