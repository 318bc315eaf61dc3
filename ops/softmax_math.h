// Internal: the per-element formulas of softmax and log_softmax, shared by the CPU kernels
// (ops/cpu/softmax.cpp) and the CUDA kernels (ops/cuda/softmax.cu). A row's max m and
// total = sum exp(x - m) come first (each backend reduces its own way); then
//   softmax:     y = e^(x - m) / total          dx = y (g - sum(g y))
//   log_softmax: y = (x - m) - log(total)       dx = g - e^y sum(g)
// (x - m) - log(total) rather than x - (m + log(total)): x - m is exact for the largest
// entries, so results near 0 keep their precision. `Math` supplies exp_nonpositive(v) = e^v
// for v <= 0 (the CPU's vectorizing float exp, or elementwise_math::LibraryMath).
#pragma once

#include <cmath>

#include "core/strided.h"  // LUMEN_HOST_DEVICE

namespace lumen::softmax_math {

// What multiplies (softmax) or is subtracted (log_softmax) per row: 1 / total or log(total).
template <typename T>
LUMEN_HOST_DEVICE inline T row_factor(T total, bool log) {
    return log ? T(std::log(total)) : T(1) / total;
}

// y from `value` (x for log_softmax, e^(x - m) for softmax), the max and the row factor.
template <typename T>
LUMEN_HOST_DEVICE inline T output(T value, T max, T factor, bool log) {
    return log ? T((value - max) - factor) : T(value * factor);
}

// y from d = x - m alone (the exp computed here).
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T output_shifted(T d, T factor, bool log) {
    return log ? T(d - factor) : T(Math::exp_nonpositive(d) * factor);
}

// What the backward sums over a row: g for log_softmax, g y for softmax.
template <typename T>
LUMEN_HOST_DEVICE inline T backward_term(T y, T g, bool log) {
    return log ? g : T(g * y);
}

// dx from y, g and the row's sum of backward_term.
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T grad(T y, T g, T total, bool log) {
    return log ? T(g - Math::exp_nonpositive(y) * total) : T(y * (g - total));
}

}  // namespace lumen::softmax_math
