// Matrix products with PyTorch semantics. CPU GEMM is Eigen's kernel run single-threaded on
// panels that lumen splits across OpenMP threads; transposed or otherwise strided operands are
// passed to the GEMM as they are whenever one of their two matrix strides is 1, so
// q @ k.transpose(-2, -1) copies nothing.
#pragma once

#include "core/tensor.h"

namespace lumen {

// torch.matmul: 1-D x 1-D -> dot (0-d); 2-D x 2-D -> mm; 1-D operands get a dim prepended
// (left) or appended (right) that is removed afterwards; >= 3-D operands multiply batches of
// matrices with broadcast batch dims. Shapes: (..., n, k) @ (..., k, m) -> (..., n, m).
// Both operands must have the same floating dtype and device.
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x W^T + b. Shapes: x (..., in), weight (out, in), bias (out) or undefined -> (..., out).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace lumen
