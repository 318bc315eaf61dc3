// Internal: the kernels of the normalization ops. Two shapes of problem cover them all:
//   rows     — statistics per contiguous row (layer_norm, rms_norm, group_norm, instance_norm
//              with input statistics); the affine parameters index channels inside a row.
//   channels — x seen as (outer, length, channels, spatial), statistics per (outer, channel)
//              over (length, spatial); the affine parameters index the channel (batch_norm,
//              instance_norm with running statistics, seq_norm, normalize).
// Every view is contiguous; an absent optional tensor is a view with data == nullptr.
// CPU (ops/cpu/norm_*.cpp): float32/float64, statistics accumulate in double. CUDA
// (ops/cuda/norm_*.cu): the same signatures and semantics, statistics in float (double for
// float64); the row kernels also take float16/bfloat16, with mean/rstd in float32.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// `rows` rows of `length` elements; a row is `channels_per_group` channels of `spatial`
// elements each (length == channels_per_group * spatial), and row r holds group r % groups,
// so element i of row r uses affine entry (r % groups) * channels_per_group + i / spatial.
// layer_norm: groups 1, channels_per_group = length, spatial 1. `center` = false gives RMS
// normalization (no mean subtracted, rstd = 1 / sqrt(mean(x^2) + eps)).
struct RowNormLayout {
    int64_t rows = 0, length = 1, groups = 1, channels_per_group = 1, spatial = 1;
    bool center = true;
};

// x as (outer, length, channels, spatial); statistic s = a * channels + c.
struct ChannelNormLayout {
    int64_t outer = 1, length = 1, channels = 1, spatial = 1;
    int64_t count() const { return length * spatial; }  // elements per statistic
};

namespace cpu {

// y = (x - mean) * rstd * weight + bias per row; mean and rstd (one per row, x's dtype)
// are written for the backward (mean is 0 when !center).
void row_norm_forward(const RowNormLayout& layout, const StridedView& x, const StridedView& weight,
                      const StridedView& bias, double eps, const StridedView& y,
                      const StridedView& mean, const StridedView& rstd);

// grad_x, grad_weight, grad_bias (each optional) from x, the saved mean/rstd and grad_out:
//   gw = g * w, xhat = (x - mean) * rstd,
//   grad_x = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))   (no mean(gw) when !center)
//   grad_weight = sum over rows of g * xhat, grad_bias = sum of g (per affine entry).
void row_norm_backward(const RowNormLayout& layout, const StridedView& x, const StridedView& weight,
                       const StridedView& mean, const StridedView& rstd,
                       const StridedView& grad_out, const StridedView& grad_x,
                       const StridedView& grad_weight, const StridedView& grad_bias);

// mean and biased variance per statistic (outer * channels entries, x's dtype).
void channel_moments(const ChannelNormLayout& layout, const StridedView& x, const StridedView& mean,
                     const StridedView& var);

// y = (x - mean[s]) / sqrt(var[s] + eps) * weight[c] + bias[c]; mean/var hold one entry
// per statistic (outer * channels), of x's dtype.
void channel_norm_forward(const ChannelNormLayout& layout, const StridedView& x,
                          const StridedView& mean, const StridedView& var, double eps,
                          const StridedView& weight, const StridedView& bias, const StridedView& y);

// The backward of channel_norm_forward. batch_stats: mean/var were computed from x itself
// (training), so the gradient flows through them; otherwise they are constants.
void channel_norm_backward(const ChannelNormLayout& layout, const StridedView& x,
                           const StridedView& mean, const StridedView& var, double eps,
                           const StridedView& weight, bool batch_stats, const StridedView& grad_out,
                           const StridedView& grad_x, const StridedView& grad_weight,
                           const StridedView& grad_bias);

// normalize: norm[s] = (sum |x|^p)^(1/p) per statistic, y = x / max(norm, eps).
void normalize_forward(const ChannelNormLayout& layout, const StridedView& x, double p, double eps,
                       const StridedView& y, const StridedView& norm);
// grad_x = g / d - dnorm/dx * sum(g x) / d^2 where d = max(norm, eps); the second term only
// where norm >= eps. dnorm/dx = sign(x) |x / norm|^(p-1) (p = 1: sign(x), with sign(0) = 0).
void normalize_backward(const ChannelNormLayout& layout, const StridedView& x,
                        const StridedView& norm, double p, double eps, const StridedView& grad_out,
                        const StridedView& grad_x);

}  // namespace cpu

// The same kernels on the tensors' CUDA device. row_norm_*: float32, float64, float16,
// bfloat16, with mean/rstd in float32 for the half types (x's dtype otherwise); the others:
// float32, float64.
namespace cuda {
LUMEN_CUDA_API void row_norm_forward(const RowNormLayout& layout, const StridedView& x,
                                     const StridedView& weight, const StridedView& bias, double eps,
                                     const StridedView& y, const StridedView& mean,
                                     const StridedView& rstd);
LUMEN_CUDA_API void row_norm_backward(const RowNormLayout& layout, const StridedView& x,
                                      const StridedView& weight, const StridedView& mean,
                                      const StridedView& rstd, const StridedView& grad_out,
                                      const StridedView& grad_x, const StridedView& grad_weight,
                                      const StridedView& grad_bias);
LUMEN_CUDA_API void channel_moments(const ChannelNormLayout& layout, const StridedView& x,
                                    const StridedView& mean, const StridedView& var);
LUMEN_CUDA_API void channel_norm_forward(const ChannelNormLayout& layout, const StridedView& x,
                                         const StridedView& mean, const StridedView& var,
                                         double eps, const StridedView& weight,
                                         const StridedView& bias, const StridedView& y);
LUMEN_CUDA_API void channel_norm_backward(const ChannelNormLayout& layout, const StridedView& x,
                                          const StridedView& mean, const StridedView& var,
                                          double eps, const StridedView& weight, bool batch_stats,
                                          const StridedView& grad_out, const StridedView& grad_x,
                                          const StridedView& grad_weight,
                                          const StridedView& grad_bias);
LUMEN_CUDA_API void normalize_forward(const ChannelNormLayout& layout, const StridedView& x,
                                      double p, double eps, const StridedView& y,
                                      const StridedView& norm);
LUMEN_CUDA_API void normalize_backward(const ChannelNormLayout& layout, const StridedView& x,
                                       const StridedView& norm, double p, double eps,
                                       const StridedView& grad_out, const StridedView& grad_x);
}  // namespace cuda

}  // namespace lumen
