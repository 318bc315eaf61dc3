// pad: constant, reflect, replicate and circular padding of trailing dims, as
// torch.nn.functional.pad. CPU or CUDA; gradient with respect to x for float32 and float64.
// Kernels in ops/cpu/pad.cpp and ops/cuda/pad.cu.
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"
#include "ops/reduce.h"

namespace lumen {

// pad lists (before, after) pairs starting from the LAST dim, as PyTorch's F.pad:
// (left, right) pads W, then (top, bottom) pads H, then (front, back) pads D.
// Shapes: x (..., in_k) -> (..., in_k + before_k + after_k) for each padded dim k.
// mode:
//   "constant"  the new positions hold `value` (default 0); any number of trailing dims (up to
//               x.ndim()); negative pads crop. Any numeric or bool dtype.
//   "reflect"   mirror without repeating the edge: [1 2 3] padded by 2 -> [3 2 1 2 3 2 1];
//               each pad must be smaller than its dim.
//   "replicate" repeat the edge: [1 2 3] -> [1 1 1 2 3 3 3].
//   "circular"  wrap around: [1 2 3] -> [2 3 1 2 3 1 2]; each pad at most its dim.
// The last three take 2, 4 or 6 pad values for 1-3 padded dims of a batched (B, C, spatial...)
// or unbatched (C, spatial...) input, as PyTorch does, and float32/float64 only.
// Gradient: the sum of grad_out over every output that copied an input element (constant:
// grad_out cropped back, zero where x was cropped away).
// Throws [pad] for: an odd number of pad values or more than 2 x.ndim(), an unknown mode, a
// value with a non-constant mode, a rank that does not fit the mode, a reflect pad >= its dim,
// a circular pad > its dim, a replicate pad of an empty dim, a negative output size.
Tensor pad(const Tensor& x, const Dims& pad, const std::string& mode = "constant",
           std::optional<double> value = std::nullopt);

}  // namespace lumen
