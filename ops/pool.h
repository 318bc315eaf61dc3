// Max, average and adaptive pooling over the last 2 (H, W) or 3 (D, H, W) dims, as
// torch.nn.functional does: batched (B, C, spatial...) or unbatched (C, spatial...) input,
// float32/float64, CPU or CUDA. Every op has a gradient with respect to x; the max pools route
// it through the saved argmax indices. Kernels in ops/cpu/pool.cpp and ops/cuda/pool.cu.
#pragma once

#include <optional>

#include "core/tensor.h"
#include "ops/reduce.h"

namespace lumen {

// Every Dims argument below holds one value (used for every spatial dim) or one per spatial
// dim, like PyTorch's `int | tuple`. An empty stride means stride = kernel_size.
// Output size per dim (PyTorch's pooling_output_shape):
//   out = floor_or_ceil((in + 2 padding - dilation (kernel - 1) - 1) / stride) + 1,
// and in ceil_mode the last window must start inside the input or the left padding.
// Throws [op] for: a wrong rank or dtype, a zero-size C or spatial dim, kernel_size, stride or
// dilation < 1, padding < 0 or > kernel_size / 2, a wrong number of values, or an output
// smaller than 1.

// Shapes: x (B, C, H, W) or (C, H, W) -> (B, C, outH, outW) or (C, outH, outW).
// y = max over each window (padding never wins: padded taps are skipped); NaN propagates.
// The gradient goes to the (first) maximal element of each window, summed where windows
// overlap.
Tensor max_pool2d(const Tensor& x, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, const Dims& dilation = {1}, bool ceil_mode = false);
// The same, with indices (int64, shape of values): the flat position h * W + w of each
// maximum inside its (H, W) plane, as F.max_pool2d(..., return_indices=True).
ValuesIndices max_pool2d_with_indices(const Tensor& x, const Dims& kernel_size,
                                      const Dims& stride = {}, const Dims& padding = {0},
                                      const Dims& dilation = {1}, bool ceil_mode = false);
// Shapes: x (B, C, D, H, W) or (C, D, H, W); indices are (d * H + h) * W + w.
Tensor max_pool3d(const Tensor& x, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, const Dims& dilation = {1}, bool ceil_mode = false);
ValuesIndices max_pool3d_with_indices(const Tensor& x, const Dims& kernel_size,
                                      const Dims& stride = {}, const Dims& padding = {0},
                                      const Dims& dilation = {1}, bool ceil_mode = false);

// Shapes: as max_pool2d. y = sum over the window / divisor, where the divisor is
// divisor_override if given (non-zero, else throws), else the window size counting zero
// padding (count_include_pad) or only the input elements. Windows are clipped to the padded
// input first (ceil_mode); a window with no input element gives 0. Gradient: grad / divisor
// to every input element of the window.
Tensor avg_pool2d(const Tensor& x, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Shapes: as max_pool3d.
Tensor avg_pool3d(const Tensor& x, const Dims& kernel_size, const Dims& stride = {},
                  const Dims& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

// Adaptive pools: output_size holds 1 or 2 (3) positive sizes, possibly larger than the input.
// Output cell i along a dim of size in -> out covers [floor(i in / out), ceil((i + 1) in / out)).
// Shapes: x (B, C, H, W) or (C, H, W) -> (B, C, outH, outW) or (C, outH, outW).
// y = mean over each cell; gradient: grad / cell size to every element of the cell.
Tensor adaptive_avg_pool2d(const Tensor& x, const Dims& output_size);
// Shapes: x (B, C, D, H, W) or (C, D, H, W).
Tensor adaptive_avg_pool3d(const Tensor& x, const Dims& output_size);
// y = max over each cell (NaN propagates); the gradient goes to the first maximum. The
// _with_indices forms also return its flat position in the plane (int64), as max_pool.
Tensor adaptive_max_pool2d(const Tensor& x, const Dims& output_size);
ValuesIndices adaptive_max_pool2d_with_indices(const Tensor& x, const Dims& output_size);
Tensor adaptive_max_pool3d(const Tensor& x, const Dims& output_size);
ValuesIndices adaptive_max_pool3d_with_indices(const Tensor& x, const Dims& output_size);

}  // namespace lumen
