// Internal: the per-element formulas of the selective scan (Mamba, Gu & Dao 2023, Alg. 2),
// shared by the CPU kernel (ops/cpu/scan.cpp) and the CUDA kernel (ops/cuda/scan.cu): the step
// size softplus(delta + bias) and the output gate y silu(z) with its derivatives. `Math`
// supplies exp_nonpositive(v) = e^v for v <= 0: elementwise_math::LibraryMath on the GPU and
// for double, the CPU's vectorizing float exp otherwise.
#pragma once

#include <cmath>

#include "core/strided.h"  // LUMEN_HOST_DEVICE

namespace lumen::scan_math {

// softplus(x) = log(1 + e^x), x itself above PyTorch's threshold 20.
template <typename T>
LUMEN_HOST_DEVICE inline T softplus(T x) {
    return x > T(20) ? x : std::log1p(std::exp(x));
}

// 1 / (1 + e^-x) from e = e^-|x| <= 1 (no overflow for any x).
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T sigmoid(T x) {
    T e = Math::exp_nonpositive(T(-std::fabs(x)));
    return (x >= T(0) ? T(1) : e) / (T(1) + e);
}

// The gate out = y silu(z) = y z s with s = sigmoid(z): the factor z s.
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T gate(T z) {
    return z * sigmoid<Math>(z);
}

// Backward of out = y z s for dL/dout = g: returns dL/dy = g z s and sets
// grad_z = dL/dz = g y s (1 + z (1 - s)).
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T gate_backward(T g, T y, T z, T& grad_z) {
    T s = sigmoid<Math>(z);
    grad_z = g * y * s * (T(1) + z * (T(1) - s));
    return g * z * s;
}

}  // namespace lumen::scan_math
