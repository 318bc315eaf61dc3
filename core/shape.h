// Shape arithmetic shared by the core and the ops: element counts, contiguous strides,
// dimension wrapping and NumPy/PyTorch broadcasting.
#pragma once

#include <cstdint>
#include <vector>

namespace lumen {

using Shape = std::vector<int64_t>;

// Kernels take at most this many dims (UTNet's patchify permutes 8-D tensors).
constexpr int kMaxDims = 8;

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

// Wraps a possibly negative dim into [0, ndim); throws [op] when out of range.
// A 0-d tensor accepts dims -1 and 0, as in PyTorch.
int wrap_dim(int64_t dim, int64_t ndim, const char* op);

// The broadcast shape of a and b (align right, 1 stretches); throws [op] naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace lumen
