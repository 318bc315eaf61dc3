// Internal: the per-element formulas of the normalizations (LayerNorm, Ba et al. 2016;
// GroupNorm, Wu & He 2018; InstanceNorm; BatchNorm, Ioffe & Szegedy 2015; p-norm
// normalization), shared by the CPU kernels (ops/cpu/norm_rows.cpp, norm_channels.cpp) and the
// CUDA kernels (ops/cuda/norm_rows.cu, norm_channels.cu). Each backend takes its sums its own
// way; what it does with them is written here.
#pragma once

#include <cmath>

#include "core/philox.h"  // LUMEN_HOST_DEVICE

namespace lumen::norm_math {

// rstd = 1 / sqrt(var + eps), in double.
LUMEN_HOST_DEVICE inline double inv_std(double var, double eps) {
    return 1.0 / std::sqrt(var + eps);
}

// y = (x - mean) rstd w + b.
template <typename T>
LUMEN_HOST_DEVICE inline T affine(T x, T mean, T rstd, T w, T b) {
    return (x - mean) * rstd * w + b;
}

// The same as y = x scale + shift per statistic: scale = rstd w, shift = b - mean scale.
LUMEN_HOST_DEVICE inline void scale_shift(double mean, double var, double eps, double w, double b,
                                          double& scale, double& shift) {
    scale = inv_std(var, eps) * w;
    shift = b - mean * scale;
}

// The backward of y = xhat w + b, xhat = (x - mean) rstd, over a row of n entries:
// grad_x = rstd (g w - a - (x - mean) rstd c) with a = mean(g w) (0 when the row is not
// centered, as in RMS-style norms) and c = mean(g w xhat).
template <typename T>
LUMEN_HOST_DEVICE inline T grad_x(T gw, T x, T mean, T rstd, T a, T c) {
    return rstd * (gw - a - (x - mean) * rstd * c);
}

// ||x||_p from total = sum |x|^p (p = 1 and 2 without pow).
LUMEN_HOST_DEVICE inline double p_norm(double total, double p) {
    return p == 2.0 ? std::sqrt(total) : p == 1.0 ? total : std::pow(total, 1.0 / p);
}

}  // namespace lumen::norm_math
