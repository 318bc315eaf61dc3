// interpolate: resampling of the spatial dims of (B, C, L), (B, C, H, W) or (B, C, D, H, W)
// tensors, as torch.nn.functional.interpolate (PyTorch 1.13 index formulas, bit-compatible
// index choices). float32/float64, CPU or CUDA; gradient with respect to x. Kernels in
// ops/cpu/interpolate.cpp and ops/cuda/interpolate.cu.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/reduce.h"

namespace lumen {

// Shapes: x (B, C, *in) with 1 to 3 spatial dims -> (B, C, *out).
// Give exactly one of
//   size:         the output spatial sizes (one value for every dim, or one per dim), or
//   scale_factor: out = floor(in * scale_factor) per dim (one value or one per dim); the
//                 source positions then use 1 / scale_factor (not in / out) unless
//                 recompute_scale_factor is true.
// mode:
//   "nearest"       PyTorch's legacy nearest: src = min(floor(dst * scale), in - 1), with
//                   scale = in / out (or 1 / scale_factor) in x's dtype, as PyTorch's NCHW
//                   kernel (its channels-last kernel, used for C == 1, rounds the scale to
//                   float, so float64 results may differ there in rare cases)
//   "nearest-exact" src = min(floor((dst + 0.5) * scale), in - 1)
//   "linear" (3-D), "bilinear" (4-D), "trilinear" (5-D): separable linear blend of the two
//                   neighbours of src = dst * (in - 1) / (out - 1) when align_corners, else
//                   max((dst + 0.5) * scale - 0.5, 0); align_corners unset means false
//   "area"          adaptive average pooling to the output size
// The gradient is the transposed map: each output's gradient is added to the inputs it was
// made from, with the same weights.
// Throws [interpolate] for: a rank other than 3-5, a mode that does not fit the rank, an
// unknown mode, align_corners set with a nearest or area mode, both or neither of size and
// scale_factor, a wrong number of sizes or scale factors, recompute_scale_factor with a
// size, zero-size spatial dims or an output size below 1, a non-floating dtype.
Tensor interpolate(const Tensor& x, const Dims& size = {},
                   const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt);

}  // namespace lumen
