// Matrix products with PyTorch semantics. CPU GEMM is Eigen's kernel run single-threaded on
// panels that lumen splits across its threads (core/parallel.h), CUDA GEMM is cuBLAS; transposed or otherwise
// strided operands are passed to the GEMM as they are whenever one of their two matrix strides
// is 1, so q @ k.transpose(-2, -1) copies nothing.
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

// Dtypes: float32 and float64 on every device; float16 and bfloat16 on CUDA only (cuBLAS
// accumulates them in float32 and rounds the result, bias included, once), the CPU throws.
// Gradients for every operand, through the same products.

// TF32 for float32 products on CUDA, as torch.backends.cuda.matmul.allow_tf32: when on,
// float32 matmul/linear (and their backward) may run on tensor cores in TF32 (10-bit
// mantissa inputs, float32 accumulation): several times faster on A100/H100, with relative
// errors around 1e-3 instead of 1e-6. Off by default; process-wide; convolutions ignore it
// (always full float32). The CPU, float64 and the half types are unaffected.
void set_matmul_allow_tf32(bool allow);
bool matmul_allow_tf32();

}  // namespace lumen
