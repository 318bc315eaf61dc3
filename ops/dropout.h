// Dropout and drop path (stochastic depth), as torch.nn.functional.dropout and timm's
// drop_path. Masks come from lumen's counter-based generator (core/random.h): a seed and an
// offset fix every mask, whatever the thread count or device (CPU and CUDA masks are equal).
// float32/float64.
#pragma once

#include "core/random.h"
#include "core/tensor.h"

namespace lumen {

// Training: y = x * m / (1 - p) with m ~ Bernoulli(1 - p) per element (inverted dropout);
// p = 1 gives x * 0. Not training, or p = 0: returns x itself. The keep mask is drawn as
// bernoulli(x.shape(), 1 - p, x.dtype(), generator) would draw it (one uniform per element,
// 4 per Philox block for float32, 2 for float64) and is kept as uint8 for the backward,
// grad_x = grad_y * m / (1 - p). Throws for p outside [0, 1] or a non-float input.
// generator = nullptr uses the default generator.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true,
               Generator* generator = nullptr);

// Shapes: x (B, ...). Drops whole samples (timm's drop_path): y = x * m_b / keep_prob with
// m_b ~ Bernoulli(keep_prob = 1 - drop_prob) per sample b (dim 0), broadcast over the other
// dims; without scale_by_keep, y = x * m_b. Not training, or drop_prob = 0: returns x.
// drop_prob = 1 gives x * 0. Differentiable in x (composite of bernoulli and mul).
// Throws for drop_prob outside [0, 1], a 0-d x or a non-float x.
Tensor drop_path(const Tensor& x, double drop_prob = 0.0, bool training = false,
                 bool scale_by_keep = true, Generator* generator = nullptr);

// Channel dropout, as torch.nn.functional.dropout1d/2d/3d: x (B, C, *spatial) with
// `spatial_dims` spatial dims (or unbatched (C, *spatial)); y = x * m_bc / (1 - p) with
// m_bc ~ Bernoulli(1 - p) per channel of each sample, broadcast over the spatial dims (whole
// feature maps are zeroed). Not training, or p = 0: returns x; p = 1 gives x * 0.
// Differentiable in x (composite of bernoulli and mul). Throws [dropout<n>d] for p outside
// [0, 1], a non-float x or a rank other than spatial_dims + 1 or + 2.
Tensor channel_dropout(const Tensor& x, int64_t spatial_dims, double p = 0.5, bool training = true,
                       Generator* generator = nullptr);

}  // namespace lumen
