// Internal: the per-element formulas of the elementwise ops, shared by the CPU kernels
// (ops/cpu/elementwise.cpp) and the CUDA kernels (ops/cuda/elementwise.cu). Each op's forward
// and backward is written once here, templated on a `Math` policy that supplies the
// primitives (exp, erf, sigmoid, ...): LibraryMath is the C++/CUDA math library and serves
// the GPU (float16/bfloat16 computed in float) and the CPU's double; the CPU replaces its
// float primitives with ones in plain arithmetic so that the loops vectorize (CpuMath in
// ops/cpu/elementwise.cpp). visit_unary/visit_binary turn a runtime op into a compile-time
// one: the CPU calls them once outside its loops, the GPU per element (uniform per launch).
#pragma once

#include <cmath>
#include <type_traits>

#include "core/strided.h"
#include "ops/elementwise_kernels.h"

namespace lumen::elementwise_math {

// GELU (Hendrycks & Gimpel 2016): x Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2, and its
// tanh approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluTanhCubic = 0.044715;

// The math library's primitives. The CPU's float replacements keep these meanings (within a
// few ulp).
struct LibraryMath {
    template <typename T>
    LUMEN_HOST_DEVICE static T exp(T v) {
        return std::exp(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T log(T v) {
        return std::log(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T sqrt(T v) {
        return std::sqrt(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T sin(T v) {
        return std::sin(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T cos(T v) {
        return std::cos(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T tanh(T v) {
        return std::tanh(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T erf(T v) {
        return std::erf(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T log1p(T v) {
        return std::log1p(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T pow(T v, T p) {
        return std::pow(v, p);
    }
    // log(1 + e^v), softplus's core.
    template <typename T>
    LUMEN_HOST_DEVICE static T log1p_exp(T v) {
        return std::log1p(std::exp(v));
    }
    // e^v for v <= 0 (the caller guarantees the sign).
    template <typename T>
    LUMEN_HOST_DEVICE static T exp_nonpositive(T v) {
        return std::exp(v);
    }
    // e^v and e^v - 1 where v <= 0; any value for v > 0, which where_positive discards.
    template <typename T>
    LUMEN_HOST_DEVICE static T exp_below(T v) {
        return std::exp(v);
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T expm1_below(T v) {
        return std::expm1(v);
    }
    // v > 0 ? above : below: +0, -0 and NaN take `below` (PyTorch's ELU backward takes
    // alpha e^x at both zeros, and NaN there).
    template <typename T>
    LUMEN_HOST_DEVICE static T where_positive(T v, T above, T below) {
        return v > T(0) ? above : below;
    }
    // The logistic function 1 / (1 + e^-v).
    template <typename T>
    LUMEN_HOST_DEVICE static T sigmoid(T v) {
        return T(1) / (T(1) + std::exp(-v));
    }
    // tanh inside the GELU tanh approximation, which needs an absolute error of ~1e-7 only.
    template <typename T>
    LUMEN_HOST_DEVICE static T tanh_gelu(T u) {
        return std::tanh(u);
    }
};

// v < 0 without a pointless comparison for unsigned types.
template <typename T>
LUMEN_HOST_DEVICE constexpr bool negative(T v) {
    if constexpr (std::is_unsigned_v<T>)
        return false;
    else
        return v < T(0);
}

template <typename T>
LUMEN_HOST_DEVICE constexpr bool is_zero(T v) {  // logical_not
    return v == T(0);
}

// The unary ops defined for integer dtypes too (the others need a floating dtype).
constexpr bool integer_capable(UnaryOp op) {
    return op == UnaryOp::neg || op == UnaryOp::abs || op == UnaryOp::sign ||
           op == UnaryOp::square || op == UnaryOp::relu || op == UnaryOp::clamp ||
           op == UnaryOp::hardtanh;
}

// The unary ops with a backward kernel (autograd handles neg itself; sign and logical_not
// have no gradient).
constexpr bool has_backward(UnaryOp op) {
    return op != UnaryOp::neg && op != UnaryOp::sign && op != UnaryOp::logical_not;
}

// The binary ops with a bool result (comparisons and logical ops).
constexpr bool bool_result(BinaryOp op) { return op >= BinaryOp::eq; }

// y = op(v); a and b are the UnaryParams as T (clamp_bound for clamp and hardtanh). A
// floating-point op on an integer T, and logical_not (is_zero), return v: the kernels check
// integer_capable first.
template <UnaryOp O, typename Math, typename T>
LUMEN_HOST_DEVICE inline T unary_value(T v, T a, T b) {
    if constexpr (O == UnaryOp::neg) {
        return T(-v);
    } else if constexpr (O == UnaryOp::abs) {
        return negative(v) ? T(-v) : v;
    } else if constexpr (O == UnaryOp::sign) {
        return T((v > T(0)) - negative(v));
    } else if constexpr (O == UnaryOp::square) {
        return T(v * v);
    } else if constexpr (O == UnaryOp::relu) {
        return negative(v) ? T(0) : v;  // NaN and -0 pass through, as PyTorch's clamp_min(0)
    } else if constexpr (O == UnaryOp::clamp || O == UnaryOp::hardtanh) {
        return v < a ? a : (v > b ? b : v);  // NaN propagates: comparisons with it are false
    } else if constexpr (!std::is_floating_point_v<T>) {
        return v;
    } else if constexpr (O == UnaryOp::exp) {
        return Math::exp(v);
    } else if constexpr (O == UnaryOp::log) {
        return Math::log(v);
    } else if constexpr (O == UnaryOp::sqrt) {
        return Math::sqrt(v);
    } else if constexpr (O == UnaryOp::rsqrt) {
        return T(1) / Math::sqrt(v);
    } else if constexpr (O == UnaryOp::sin) {
        return Math::sin(v);
    } else if constexpr (O == UnaryOp::cos) {
        return Math::cos(v);
    } else if constexpr (O == UnaryOp::tanh) {
        return Math::tanh(v);
    } else if constexpr (O == UnaryOp::sigmoid) {
        return Math::sigmoid(v);
    } else if constexpr (O == UnaryOp::gelu) {
        return T(0.5) * v * (T(1) + Math::erf(T(v * T(kSqrt1_2))));
    } else if constexpr (O == UnaryOp::gelu_tanh) {
        T inner = T(kSqrt2OverPi) * (v + T(kGeluTanhCubic) * v * v * v);
        return T(0.5) * v * (T(1) + Math::tanh_gelu(inner));
    } else if constexpr (O == UnaryOp::silu) {  // x sigmoid(x) (Elfwing et al. 2018)
        return v * Math::sigmoid(v);
    } else if constexpr (O == UnaryOp::elu) {  // alpha (e^x - 1) below 0 (Clevert et al. 2016)
        return Math::where_positive(v, v, T(a * Math::expm1_below(v)));
    } else if constexpr (O == UnaryOp::softplus) {
        // log(1 + e^(beta x)) / beta; linear above the threshold, where it equals x in
        // floating point.
        return v * a > b ? v : Math::log1p_exp(T(v * a)) / a;
    } else if constexpr (O == UnaryOp::pow_scalar) {
        return Math::pow(v, a);
    } else if constexpr (O == UnaryOp::leaky_relu) {
        return Math::where_positive(v, v, T(v * a));
    } else {
        return v;
    }
}

// grad_x = go * op'(x) from `s`: the output y for the ops of unary_backward_uses_output, the
// input x for the others. Floating T only.
template <UnaryOp O, typename Math, typename T>
LUMEN_HOST_DEVICE inline T unary_grad(T go, T s, T a, T b) {
    if constexpr (O == UnaryOp::abs) {  // sign(x), 0 at 0
        return go * T((s > T(0)) - (s < T(0)));
    } else if constexpr (O == UnaryOp::exp) {  // y
        return go * s;
    } else if constexpr (O == UnaryOp::log) {  // 1 / x
        return go / s;
    } else if constexpr (O == UnaryOp::sqrt) {  // 1 / (2 y)
        return go / (T(2) * s);
    } else if constexpr (O == UnaryOp::rsqrt) {  // d x^-1/2 = -y^3 / 2
        return T(-0.5) * go * s * s * s;
    } else if constexpr (O == UnaryOp::square) {
        return T(2) * go * s;
    } else if constexpr (O == UnaryOp::sin) {
        return go * Math::cos(s);
    } else if constexpr (O == UnaryOp::cos) {
        return -go * Math::sin(s);
    } else if constexpr (O == UnaryOp::tanh) {  // 1 - y^2
        return go * (T(1) - s * s);
    } else if constexpr (O == UnaryOp::sigmoid) {  // y (1 - y)
        return go * s * (T(1) - s);
    } else if constexpr (O == UnaryOp::relu) {
        // PyTorch's threshold_backward: 0 where the output is <= 0, the gradient elsewhere (NaN).
        return s <= T(0) ? T(0) : go;
    } else if constexpr (O == UnaryOp::gelu) {  // Phi(x) + x phi(x)
        T cdf = T(0.5) * (T(1) + Math::erf(T(s * T(kSqrt1_2))));
        T pdf = T(kInvSqrt2Pi) * Math::exp_nonpositive(T(T(-0.5) * s * s));
        return go * (cdf + s * pdf);
    } else if constexpr (O == UnaryOp::gelu_tanh) {
        // 0.5 (1 + t) + 0.5 x (1 - t^2) u' with t = tanh(u), u = c (x + k x^3)
        T t = Math::tanh_gelu(T(T(kSqrt2OverPi) * (s + T(kGeluTanhCubic) * s * s * s)));
        T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * s * s);
        return go * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * du);
    } else if constexpr (O == UnaryOp::silu) {  // sg (1 + x (1 - sg))
        T sg = Math::sigmoid(s);
        return go * sg * (T(1) + s * (T(1) - sg));
    } else if constexpr (O == UnaryOp::elu) {  // 1 for x > 0, alpha e^x otherwise
        return Math::where_positive(s, go, T(go * a * Math::exp_below(s)));
    } else if constexpr (O == UnaryOp::softplus) {  // sigmoid(beta x) below the threshold, 1 above
        return s * a > b ? go : go * Math::sigmoid(s * a);
    } else if constexpr (O == UnaryOp::clamp) {  // 1 inside [min, max] (inclusive), 0 where clamped
        return s >= a && s <= b ? go : T(0);
    } else if constexpr (O == UnaryOp::leaky_relu) {  // 1 for x > 0, negative_slope otherwise
        return Math::where_positive(s, go, T(go * a));
    } else if constexpr (O == UnaryOp::hardtanh) {  // 1 strictly inside (min, max), 0 at and beyond
        return s > a && s < b ? go : T(0);
    } else if constexpr (O == UnaryOp::pow_scalar) {  // p x^(p-1); exactly 0 for p == 0
        return a == T(0) ? T(0) : go * a * Math::pow(s, T(a - T(1)));
    } else {
        return T(0);  // no backward (has_backward)
    }
}

// out = x op y: T for the arithmetic ops, bool for bool_result ones. maximum and minimum
// propagate NaN as in PyTorch; pow of integers goes through double.
template <BinaryOp O, typename Math, typename T>
LUMEN_HOST_DEVICE inline auto binary_value(T x, T y) {
    if constexpr (O == BinaryOp::add) {
        return T(x + y);
    } else if constexpr (O == BinaryOp::sub) {
        return T(x - y);
    } else if constexpr (O == BinaryOp::mul) {
        return T(x * y);
    } else if constexpr (O == BinaryOp::div) {
        return T(x / y);
    } else if constexpr (O == BinaryOp::pow) {
        if constexpr (std::is_floating_point_v<T>)
            return T(Math::pow(x, y));
        else
            return T(Math::pow(double(x), double(y)));
    } else if constexpr (O == BinaryOp::maximum) {
        return x != x ? x : (y != y ? y : (x > y ? x : y));
    } else if constexpr (O == BinaryOp::minimum) {
        return x != x ? x : (y != y ? y : (x < y ? x : y));
    } else if constexpr (O == BinaryOp::eq) {
        return x == y;
    } else if constexpr (O == BinaryOp::ne) {
        return x != y;
    } else if constexpr (O == BinaryOp::lt) {
        return x < y;
    } else if constexpr (O == BinaryOp::le) {
        return x <= y;
    } else if constexpr (O == BinaryOp::gt) {
        return x > y;
    } else if constexpr (O == BinaryOp::ge) {
        return x >= y;
    } else if constexpr (O == BinaryOp::logical_and) {
        return x != T(0) && y != T(0);
    } else {
        static_assert(O == BinaryOp::logical_or);
        return x != T(0) || y != T(0);
    }
}

// Calls body.template operator()<O>() for the runtime op.
template <typename Body>
LUMEN_HOST_DEVICE inline void visit_unary(UnaryOp op, Body&& body) {
    switch (op) {
        case UnaryOp::neg: return body.template operator()<UnaryOp::neg>();
        case UnaryOp::abs: return body.template operator()<UnaryOp::abs>();
        case UnaryOp::sign: return body.template operator()<UnaryOp::sign>();
        case UnaryOp::exp: return body.template operator()<UnaryOp::exp>();
        case UnaryOp::log: return body.template operator()<UnaryOp::log>();
        case UnaryOp::sqrt: return body.template operator()<UnaryOp::sqrt>();
        case UnaryOp::rsqrt: return body.template operator()<UnaryOp::rsqrt>();
        case UnaryOp::square: return body.template operator()<UnaryOp::square>();
        case UnaryOp::sin: return body.template operator()<UnaryOp::sin>();
        case UnaryOp::cos: return body.template operator()<UnaryOp::cos>();
        case UnaryOp::tanh: return body.template operator()<UnaryOp::tanh>();
        case UnaryOp::sigmoid: return body.template operator()<UnaryOp::sigmoid>();
        case UnaryOp::relu: return body.template operator()<UnaryOp::relu>();
        case UnaryOp::gelu: return body.template operator()<UnaryOp::gelu>();
        case UnaryOp::gelu_tanh: return body.template operator()<UnaryOp::gelu_tanh>();
        case UnaryOp::silu: return body.template operator()<UnaryOp::silu>();
        case UnaryOp::elu: return body.template operator()<UnaryOp::elu>();
        case UnaryOp::softplus: return body.template operator()<UnaryOp::softplus>();
        case UnaryOp::clamp: return body.template operator()<UnaryOp::clamp>();
        case UnaryOp::pow_scalar: return body.template operator()<UnaryOp::pow_scalar>();
        case UnaryOp::leaky_relu: return body.template operator()<UnaryOp::leaky_relu>();
        case UnaryOp::hardtanh: return body.template operator()<UnaryOp::hardtanh>();
        case UnaryOp::logical_not: return body.template operator()<UnaryOp::logical_not>();
    }
}

template <typename Body>
LUMEN_HOST_DEVICE inline void visit_binary(BinaryOp op, Body&& body) {
    switch (op) {
        case BinaryOp::add: return body.template operator()<BinaryOp::add>();
        case BinaryOp::sub: return body.template operator()<BinaryOp::sub>();
        case BinaryOp::mul: return body.template operator()<BinaryOp::mul>();
        case BinaryOp::div: return body.template operator()<BinaryOp::div>();
        case BinaryOp::pow: return body.template operator()<BinaryOp::pow>();
        case BinaryOp::maximum: return body.template operator()<BinaryOp::maximum>();
        case BinaryOp::minimum: return body.template operator()<BinaryOp::minimum>();
        case BinaryOp::eq: return body.template operator()<BinaryOp::eq>();
        case BinaryOp::ne: return body.template operator()<BinaryOp::ne>();
        case BinaryOp::lt: return body.template operator()<BinaryOp::lt>();
        case BinaryOp::le: return body.template operator()<BinaryOp::le>();
        case BinaryOp::gt: return body.template operator()<BinaryOp::gt>();
        case BinaryOp::ge: return body.template operator()<BinaryOp::ge>();
        case BinaryOp::logical_and: return body.template operator()<BinaryOp::logical_and>();
        case BinaryOp::logical_or: return body.template operator()<BinaryOp::logical_or>();
    }
}

}  // namespace lumen::elementwise_math
