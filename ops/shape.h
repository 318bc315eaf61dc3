// Shape ops. The views (reshape, permute, transpose, narrow, slice, expand, squeeze, ...)
// are Tensor methods (core/tensor.h) defined in shape.cpp; free-function forms are here
// together with the ops that build new tensors from several (cat, stack) or split one into
// several views (split, chunk). All are differentiable.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace lumen {

inline Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
inline Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) { return x.permute(dims); }
inline Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
    return x.transpose(dim0, dim1);
}
inline Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1) {
    return x.flatten(start_dim, end_dim);
}
inline Tensor unsqueeze(const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }
inline Tensor squeeze(const Tensor& x, int64_t dim) { return x.squeeze(dim); }

// Joins tensors of equal shape except along dim (negative counts from the end).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins tensors of equal shape along a new dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Views of consecutive pieces of `split_size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
// Views of pieces with the given sizes along dim (they must add up to x.size(dim)).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// `chunks` views of ceil(size / chunks) along dim, as torch.chunk (may return fewer).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

}  // namespace lumen
