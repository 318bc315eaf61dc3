// Internal: the elementwise kernel signatures. One op enum per arity; a kernel switches on the
// op once, outside its loops. Views may broadcast (stride 0) and be strided. The per-element
// formulas of both backends are in ops/elementwise_math.h.
#pragma once

#include <limits>
#include <type_traits>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

enum class UnaryOp {
    neg, abs, sign, exp, log, sqrt, rsqrt, square, sin, cos, tanh, sigmoid,
    relu, gelu, gelu_tanh, silu, elu, softplus, clamp, pow_scalar, leaky_relu, hardtanh,
    logical_not
};

// Scalar arguments of the parameterized unary ops:
//   elu: a = alpha; softplus: a = beta, b = threshold; clamp: a = min, b = max (infinities when
//   absent); pow_scalar: a = exponent; leaky_relu: a = negative_slope; hardtanh: a = min_val,
//   b = max_val.
struct UnaryParams {
    double a = 0;
    double b = 0;
};

enum class BinaryOp { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge,
                      logical_and, logical_or };

// A clamp bound as T, saturated so that an absent (infinite) bound is safe for integers.
template <typename T>
T clamp_bound(double bound) {
    if constexpr (std::is_floating_point_v<T>) {
        return T(bound);
    } else {
        if (bound <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
        if (bound >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
        return T(bound);
    }
}

// Whether the backward of op is cheapest from its output (exp, tanh, sigmoid, sqrt, rsqrt, relu)
// rather than its input.
bool unary_backward_uses_output(UnaryOp op);

namespace cpu {
// y = op(x); x and y have the same shape (x may be strided), same dtype except logical_not.
void unary_forward(UnaryOp op, const UnaryParams& params, const StridedView& x, const StridedView& y);
// grad_x = grad_out * op'(x), with `saved` = x or y (unary_backward_uses_output); all three
// contiguous and of the same shape and floating dtype.
void unary_backward(UnaryOp op, const UnaryParams& params, const StridedView& saved,
                    const StridedView& grad_out, const StridedView& grad_x);
// out = a op b; a and b are already broadcast to out's shape and converted to the compute
// dtype; out has that dtype (bool for comparisons and logical ops).
void binary_forward(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out);
// out = condition ? a : b, all broadcast to out's shape; a, b and out share a dtype.
void where_forward(const StridedView& condition, const StridedView& a, const StridedView& b,
                   const StridedView& out);
}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/elementwise.cu), for float32,
// float64, int64, int32, uint8 (and bool for the logical ops and where), and float16/bfloat16
// computed in float (the CPU kernels reject the half types).
namespace cuda {
LUMEN_CUDA_API void unary_forward(UnaryOp op, const UnaryParams& params, const StridedView& x,
                                  const StridedView& y);
LUMEN_CUDA_API void unary_backward(UnaryOp op, const UnaryParams& params, const StridedView& saved,
                                   const StridedView& grad_out, const StridedView& grad_x);
LUMEN_CUDA_API void binary_forward(BinaryOp op, const StridedView& a, const StridedView& b,
                                   const StridedView& out);
LUMEN_CUDA_API void where_forward(const StridedView& condition, const StridedView& a,
                                  const StridedView& b, const StridedView& out);
}  // namespace cuda

}  // namespace lumen
