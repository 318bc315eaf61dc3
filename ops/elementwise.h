// Elementwise ops with PyTorch names: unary math and activations, binary arithmetic with
// NumPy/PyTorch broadcasting (tensor-tensor and tensor-scalar), comparisons, where and
// masked_fill. All are differentiable in their floating inputs (comparisons are not).
// Dtypes: binary ops promote like PyTorch (int op float -> float; a scalar never widens a
// float tensor); float-only math on an integer tensor computes in float32.
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"

namespace lumen {

// ---- unary math: y = f(x), same shape ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);      // d/dx = sign(x) (0 at 0)
Tensor sign(const Tensor& x);     // -1, 0, 1; zero gradient
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);    // 1 / sqrt(x)
Tensor square(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);  // 1 / (1 + exp(-x))
Tensor pow(const Tensor& x, double exponent);

// ---- activations ----
Tensor relu(const Tensor& x);  // gradient 0 at x = 0, as in PyTorch
// approximate: "none" = 0.5 x (1 + erf(x / sqrt 2)); "tanh" = the tanh approximation.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);  // x * sigmoid(x)
Tensor elu(const Tensor& x, double alpha = 1.0);
// log(1 + exp(beta x)) / beta, linear where beta x > threshold.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// x for x > 0, negative_slope * x otherwise; gradient 1 for x > 0, negative_slope for x <= 0.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// Clamps to [min_val, max_val]; unlike clamp, the gradient is 0 at exactly the bounds
// (PyTorch: it passes only where min_val < x < max_val).
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
// Clamps to [min, max] (either may be absent); gradient 1 inside and at the bounds (as in
// PyTorch), 0 where clamped.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

// ---- binary arithmetic, broadcasting ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division (ints give float32)
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // ties split the gradient equally
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
// dst += src in place (src broadcasts to dst's shape, same dtype and device), never recorded:
// the autograd engine's gradient accumulation into a buffer it alone holds.
void add_into(const Tensor& dst, const Tensor& src);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);

// ---- comparisons (bool result, no gradient) ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);

// ---- selection ----
// condition ? a : b, all three broadcast; condition must be bool.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, double b);
// x with `value` where mask (bool, broadcastable to x) is true; no gradient there.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- operators ----
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b);
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }

}  // namespace lumen
