// Internal: the per-element formulas of the pointwise losses, shared by the CPU kernels
// (ops/cpu/loss_pointwise.cpp) and the CUDA kernels (ops/cuda/loss_pointwise.cu). `Math`
// supplies the two primitives that differ: exp_neg_abs(z) = e^-|z| and log1p_unit(e) =
// log(1 + e) for e in [0, 1] (vectorizable polynomials on the CPU, exp and log1p on the GPU).
#pragma once

#include <algorithm>
#include <cmath>

#include "core/strided.h"
#include "ops/loss_kernels.h"

namespace lumen::loss_math {

template <typename T>
LUMEN_HOST_DEVICE inline T sign(T d) {
    return T((d > T(0)) - (d < T(0)));
}

// softplus(z) = log(1 + e^z) without overflow: max(z, 0) + log1p(e^-|z|).
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T softplus(T z) {
    return std::max(z, T(0)) + Math::log1p_unit(Math::exp_neg_abs(z));
}

// 1 / (1 + e^-z) from e = e^-|z|, so that no exp overflows.
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T sigmoid(T z) {
    T e = Math::exp_neg_abs(z);
    T numerator = z >= T(0) ? T(1) : e;
    return numerator / (T(1) + e);
}

// 2 atanh(s) = log((1 + s) / (1 - s)) for |s| <= 1/3: an odd series in s whose terms past s^15
// are below float precision. Plain arithmetic, so that the CPU loops around it vectorize (the
// CPU's log1p and log of the loss kernels are built on it).
inline float two_atanh_series(float s) {
    float s2 = s * s;
    float p = 1.0f / 15.0f;
    p = p * s2 + 1.0f / 13.0f;
    p = p * s2 + 1.0f / 11.0f;
    p = p * s2 + 1.0f / 9.0f;
    p = p * s2 + 1.0f / 7.0f;
    p = p * s2 + 1.0f / 5.0f;
    p = p * s2 + 1.0f / 3.0f;
    p = p * s2 + 1.0f;
    return 2.0f * s * p;
}

// log clamped at -100 as in PyTorch, so x = 0 or 1 gives a finite bce.
template <typename T>
LUMEN_HOST_DEVICE inline T clamped_log(T v) {
    return std::max(std::log(v), T(-100));
}

// The loss of one element; w and pw are used by the bce kinds only. Both sides of every
// piecewise formula are computed before the select: GCC (with its default -ftrapping-math)
// does not vectorize loops whose arithmetic sits inside a condition.
template <PointwiseLoss K, typename Math, typename T>
LUMEN_HOST_DEVICE inline T element_loss(T x, T y, T w, T pw, T param) {
    T d = x - y;
    if constexpr (K == PointwiseLoss::mse) {
        return d * d;
    } else if constexpr (K == PointwiseLoss::l1) {
        return std::abs(d);
    } else if constexpr (K == PointwiseLoss::smooth_l1) {
        T a = std::abs(d), quadratic = T(0.5) * d * d / param, linear = a - T(0.5) * param;
        return a < param ? quadratic : linear;
    } else if constexpr (K == PointwiseLoss::huber) {
        T a = std::abs(d), quadratic = T(0.5) * d * d, linear = param * (a - T(0.5) * param);
        return a < param ? quadratic : linear;
    } else if constexpr (K == PointwiseLoss::charbonnier) {
        return std::sqrt(d * d + param * param);
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        return -w * (y * clamped_log(x) + (T(1) - y) * clamped_log(T(1) - x));
    } else {
        // (1 - y) x + (1 + (pw - 1) y) log(1 + e^-x): the PyTorch form, e^-x never computed
        // for large negative x.
        return w * ((T(1) - y) * x + (T(1) + (pw - T(1)) * y) * softplus<Math>(-x));
    }
}

// d loss / d x of one element (d loss / d y is -this for the difference losses).
template <PointwiseLoss K, typename Math, typename T>
LUMEN_HOST_DEVICE inline T element_grad_input(T x, T y, T w, T pw, T param) {
    T d = x - y;
    if constexpr (K == PointwiseLoss::mse) {
        return T(2) * d;
    } else if constexpr (K == PointwiseLoss::l1) {
        return sign(d);
    } else if constexpr (K == PointwiseLoss::smooth_l1) {
        T inside = d / param, outside = sign(d);
        return std::abs(d) < param ? inside : outside;
    } else if constexpr (K == PointwiseLoss::huber) {
        return std::clamp(d, -param, param);
    } else if constexpr (K == PointwiseLoss::charbonnier) {
        return d / std::sqrt(d * d + param * param);
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        // PyTorch's form: the denominator is kept off 0 with 1e-12.
        return w * d / std::max(x * (T(1) - x), T(1e-12));
    } else {
        return w * ((T(1) + (pw - T(1)) * y) * sigmoid<Math>(x) - pw * y);
    }
}

template <PointwiseLoss K, typename Math, typename T>
LUMEN_HOST_DEVICE inline T element_grad_target(T x, T y, T w, T pw, T param) {
    if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        return w * (clamped_log(T(1) - x) - clamped_log(x));
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy_with_logits) {
        // log_sigmoid(-x) - pw log_sigmoid(x) = pw softplus(-x) - softplus(x)
        // = (pw - 1) softplus(-x) - x: the difference of the two softplus terms, each ~log 2
        // for small |x|, would lose |x| / log 2 of the result to cancellation (PyTorch: -x
        // without pos_weight).
        return w * ((pw - T(1)) * softplus<Math>(-x) - x);
    } else {
        return -element_grad_input<K, Math>(x, y, w, pw, param);
    }
}

// The class losses keep a sample's logsumexp over C in two parts, max = max_c x_c and
// log_sum = log sum_c e^(x_c - max) in [0, log C]. Their sum, rounded to the dtype, is off by
// up to half an ulp of max (5e-4 for float logits near 1e4), and e^(x - lse) would carry that
// as a relative error into every probability: the gradient p_t - 1 of a confident sample then
// cancels to nothing. x - max is exact whenever x is within a factor 2 of max (Sterbenz), so
// e^((x - max) - log_sum) is accurate to a few ulp. `Math` supplies exp_nonpositive(v) = e^v
// for v <= 0 (the CPU's vectorizable exp, exp on the GPU).
template <typename Math, typename T>
LUMEN_HOST_DEVICE inline T class_probability(T x, T max, T log_sum) {
    return Math::exp_nonpositive(T(T(x - max) - log_sum));
}

// lse - x = (max - x) + log_sum, >= 0, without forming lse.
template <typename T>
LUMEN_HOST_DEVICE inline T lse_minus(T x, T max, T log_sum) {
    return T(max - x) + log_sum;
}

// Calls body.template operator()<K>() for the runtime kind.
template <typename Body>
void dispatch_kind(PointwiseLoss kind, const Body& body) {
    switch (kind) {
        case PointwiseLoss::mse: return body.template operator()<PointwiseLoss::mse>();
        case PointwiseLoss::l1: return body.template operator()<PointwiseLoss::l1>();
        case PointwiseLoss::smooth_l1: return body.template operator()<PointwiseLoss::smooth_l1>();
        case PointwiseLoss::huber: return body.template operator()<PointwiseLoss::huber>();
        case PointwiseLoss::charbonnier:
            return body.template operator()<PointwiseLoss::charbonnier>();
        case PointwiseLoss::binary_cross_entropy:
            return body.template operator()<PointwiseLoss::binary_cross_entropy>();
        case PointwiseLoss::binary_cross_entropy_with_logits:
            return body.template operator()<PointwiseLoss::binary_cross_entropy_with_logits>();
    }
}

}  // namespace lumen::loss_math
