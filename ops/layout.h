// Layout ops with PyTorch names: roll, flip, repeat, tril/triu and the causal mask built from
// them, Swin's window_partition / window_reverse (2-D and 3-D), and cumsum. roll, flip, repeat,
// tril/triu and the window ops move elements of any dtype; all are differentiable in floating
// inputs. CPU or CUDA.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace lumen {

// Cyclic shift: out[.., (i + shift) mod n, ..] = x[.., i, ..] along each dims[k] by shifts[k]
// (negative shifts move toward lower indices; a dim listed twice shifts by the sum), as
// torch.roll. Without dims, x is rolled as if flattened (shifts must then hold one value).
// Backward: roll by -shifts.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts,
            const std::vector<int64_t>& dims = {});

// x reversed along each of `dims` (no duplicates), as torch.flip. Backward: flip again.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);

// x tiled sizes[k] times along each dim, as torch.Tensor.repeat: sizes has at least x.ndim()
// entries, extra leading ones add new dims. Output (sizes[k] * shape[k]). Backward sums the
// tiles.
Tensor repeat(const Tensor& x, const std::vector<int64_t>& sizes);

// Lower / upper triangle of the last two dims (rows, cols), the rest zero: tril keeps
// col - row <= diagonal, triu keeps col - row >= diagonal. x has at least 2 dims, any dtype.
// Backward: the same triangle of the gradient.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// Additive causal attention mask (L, L): 0 where key j <= query i, -inf above the diagonal
// (triu of -inf with diagonal 1). dtype must be floating.
Tensor causal_mask(int64_t size, DType dtype = kDefaultFloat, Device device = Device::cpu());

// Shapes: x (B, H, W, C) -> (B * nW, wh, ww, C), or (B, D, H, W, C) -> (B * nW, wd, wh, ww, C)
// with nW = (H / wh) * (W / ww) [* D / wd]. Windows are ordered by batch, then row-major over
// the window grid; each holds its tokens row-major, as Swin / Swin-UNETR's window_partition
// (MONAI's version is this with the window dims flattened: .flatten(1, -2)). Each spatial size
// must be a multiple of its window size. Built from reshape/permute, so differentiable.
Tensor window_partition(const Tensor& x, const std::vector<int64_t>& window_size);

// Inverse of window_partition: windows (B * nW, *window_size, C) or (B * nW, prod(window), C)
// -> (B, *spatial, C), with dims = (B, *spatial) as MONAI's window_reverse(windows,
// window_size, dims).
Tensor window_reverse(const Tensor& windows, const std::vector<int64_t>& window_size,
                      const Shape& dims);

// Running sum along dim: out[.., i, ..] = sum of x[.., k, ..] for k <= i, as torch.cumsum.
// Each line is one sequential sum (float32 accumulates in double, as PyTorch on CPU; CUDA does
// the same, and also takes float16/bfloat16, accumulated in float). Floating x keeps its dtype;
// integer and bool x give int64 (no gradient). Backward: the reversed running sum of the
// gradient.
Tensor cumsum(const Tensor& x, int64_t dim);

}  // namespace lumen
