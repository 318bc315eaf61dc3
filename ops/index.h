// Indexing ops with PyTorch names and argument order: gather / scatter_add, index_select /
// index_add, embedding, repeat_interleave and one_hot. Index tensors are int64 (int32 is
// accepted too); an index outside [0, size) throws [op] naming the value and the valid range,
// and nothing is read out of bounds. Values: gather, index_select, embedding and
// repeat_interleave move any dtype; scatter_add and index_add take numeric dtypes. Gradients
// flow to the floating value inputs. CPU or CUDA; all tensors of a call on one device (else
// [op] throws).
#pragma once

#include <optional>

#include "core/tensor.h"

namespace lumen {

// out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (likewise for other dims), as torch.gather.
// index has x's rank (a 0-d x takes a 0-d or 1-element index) and index.size(d) <= x.size(d)
// for d != dim; out has index's shape and x's dtype. Backward: scatter_add of the gradient
// into zeros of x's shape (repeated indices accumulate).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);

// out = x, then out[index[i][j][k]][j][k] += src[i][j][k] for dim 0 (torch.scatter_add, out
// of place). index has the rank of x and src, index.size(d) <= src.size(d) for every d and
// <= x.size(d) for d != dim. src has x's dtype. Gradients: x gets grad_out; src gets
// gather(grad_out, dim, index) where index reaches it, 0 elsewhere.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// The slices of x at `index` (0-d or 1-D) along dim: out.size(dim) = index.numel(), other
// sizes as x. Backward: index_add of the gradient into zeros of x's shape.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);

// out = x, then out.select(dim, index[i]) += alpha * source.select(dim, i) for each i
// (torch.index_add, out of place). index is 0-d or 1-D; source has x's shape except
// source.size(dim) = index.numel(). Gradients: x gets grad_out; source gets
// alpha * index_select(grad_out, dim, index).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 double alpha = 1.0);

// Rows of the table weight (V, E) picked by indices of any shape: out = indices.shape + (E)
// (torch.embedding / F.embedding(indices, weight, padding_idx)). The weight gradient adds the
// output gradient rows of repeated indices; the row `padding_idx` (negative counts from V)
// gets zero gradient. Throws [embedding] for an index outside [0, V).
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);

// Each element of x repeated `repeats` times along dim (torch.repeat_interleave); without dim
// x is flattened first. Backward sums the gradient over each run of copies.
Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt);
// Slice i along dim repeated repeats[i] times; repeats is an int64/int32 tensor, 0-d or 1-D of
// size x.size(dim) (or 1, which applies to every slice), with no negative entry.
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats,
                         std::optional<int64_t> dim = std::nullopt);

// int64 tensor of shape indices.shape + (num_classes) with 1 at each index, 0 elsewhere
// (F.one_hot). num_classes = -1 takes max(indices) + 1. indices must be int64 or int32,
// non-negative and < num_classes. No gradient.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace lumen
