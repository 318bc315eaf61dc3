// CPU elementwise kernels: unary forward/backward and broadcasting binary ops. Loops over
// unit strides are kept separate from the strided ones so GCC vectorizes them.
#include <bit>
#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/elementwise_kernels.h"
#include "ops/reduce_kernels.h"

namespace lumen {

bool unary_backward_uses_output(UnaryOp op) {
    switch (op) {
        case UnaryOp::exp:
        case UnaryOp::tanh:
        case UnaryOp::sigmoid:
        case UnaryOp::sqrt:
        case UnaryOp::rsqrt:
        case UnaryOp::relu: return true;
        default: return false;
    }
}

namespace cpu {

namespace {

// y[i] = f(x[i]) over two views of the same shape.
template <typename Out, typename In, typename F>
void map_unary(const StridedView& x_in, const StridedView& y_in, F f) {
    StridedView views[2] = {y_in, x_in};
    coalesce_dims(views, 2);
    Out* y = views[0].ptr<Out>();
    const In* x = views[1].ptr<In>();
    for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
        Out* out = y + offsets[0];
        const In* in = x + offsets[1];
        if (steps[0] == 1 && steps[1] == 1) {
            for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
        } else {
            for (int64_t i = 0; i < n; ++i) out[i * steps[0]] = f(in[i * steps[1]]);
        }
    });
}

// erf for float in plain arithmetic so that GELU loops vectorize (std::erf does not): Eigen's
// rational approximation x P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 in float beyond), max
// relative error 3.7e-7 measured against double erf. The clamp to [-4, 4] works on the bits:
// GCC does not if-convert float comparisons (they may trap) and would not vectorize. NaN maps
// to +-1 here; GELU multiplies by x, so NaN still propagates. double keeps std::erf.
inline float erf_of(float v) {
    int32_t bits = std::bit_cast<int32_t>(v);
    bool beyond = (bits & 0x7fffffff) > 0x40800000;  // |v| > 4 (or NaN)
    float x = std::bit_cast<float>(beyond ? (bits & int32_t(0x80000000)) | 0x40800000 : bits);
    float x2 = x * x;
    float p = vec::madd(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
    p = vec::madd(x2, p, -2.10102402082508e-06f);
    p = vec::madd(x2, p, -5.69250639462346e-05f);
    p = vec::madd(x2, p, -7.34990630326855e-04f);
    p = vec::madd(x2, p, -2.95459980854025e-03f);
    p = vec::madd(x2, p, -1.60960333262415e-02f);
    float q = vec::madd(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
    q = vec::madd(x2, q, -1.68282697438203e-03f);
    q = vec::madd(x2, q, -7.37332916720468e-03f);
    q = vec::madd(x2, q, -1.42647390514189e-02f);
    return x * p / q;
}
inline double erf_of(double v) { return std::erf(v); }

template <typename T>
T sigmoid_of(T v) {
    return T(1) / (T(1) + std::exp(-v));
}

// float sigmoid that vectorizes: e = exp(-|v|) never overflows, and the result is 1 / (1 + e)
// for v >= 0, e / (1 + e) below (both accurate to a few ulp). The choice is a mask from the
// sign bit (GCC will not if-convert a float select whose arm may trap). NaN stays NaN.
template <>
inline float sigmoid_of(float v) {
    int32_t bits = std::bit_cast<int32_t>(v);
    float e = vec::exp_nonpositive(std::bit_cast<float>(bits | int32_t(0x80000000)));
    float r = 1.0f / (1.0f + e);
    int32_t negative = bits >> 31;  // all ones for v < 0
    return std::bit_cast<float>((std::bit_cast<int32_t>(e * r) & negative) |
                                (std::bit_cast<int32_t>(r) & ~negative));
}

// tanh inside the GELU tanh approximation: 2 sigmoid(2u) - 1 for float (absolute error ~1e-7,
// which GELU's 0.5 x (1 + tanh) turns into a relative one), std::tanh for double.
inline float gelu_tanh_of(float u) { return 2.0f * sigmoid_of(2.0f * u) - 1.0f; }
inline double gelu_tanh_of(double u) { return std::tanh(u); }

// float ELU that vectorizes (std::expm1 and a branch do not): alpha (e^v - 1) below 0, v
// above, chosen by a sign-bit mask as in sigmoid_of; e^v - 1 is PyTorch's CPU formula too
// (absolute error ~6e-8 near 0). exp_nonpositive sees min(v, 0) only; NaN stays NaN.
struct elu_float {
    float alpha;
    float operator()(float v) const {
        int32_t bits = std::bit_cast<int32_t>(v);
        int32_t negative = bits >> 31;  // all ones for v < 0 (and -0)
        float below = alpha * (vec::exp_nonpositive(std::bit_cast<float>(bits & negative)) - 1.0f);
        return std::bit_cast<float>((std::bit_cast<int32_t>(below) & negative) |
                                    (bits & ~negative));
    }
};

// Its gradient from the input: go alpha e^x below 0, go above.
struct elu_grad_float {
    float alpha;
    float operator()(float go, float x) const {
        int32_t bits = std::bit_cast<int32_t>(x);
        int32_t negative = bits >> 31;
        float below = go * alpha * vec::exp_nonpositive(std::bit_cast<float>(bits & negative));
        return std::bit_cast<float>((std::bit_cast<int32_t>(below) & negative) |
                                    (std::bit_cast<int32_t>(go) & ~negative));
    }
};

template <typename T>
void unary_typed(UnaryOp op, const UnaryParams& p, const StridedView& x, const StridedView& y) {
    switch (op) {
        case UnaryOp::neg: return map_unary<T, T>(x, y, [](T v) { return T(-v); });
        case UnaryOp::abs: return map_unary<T, T>(x, y, [](T v) { return v < 0 ? T(-v) : v; });
        case UnaryOp::sign: return map_unary<T, T>(x, y, [](T v) { return T((v > 0) - (v < 0)); });
        case UnaryOp::square: return map_unary<T, T>(x, y, [](T v) { return T(v * v); });
        // NaN and -0 pass through, as PyTorch's relu (clamp_min(0)).
        case UnaryOp::relu: return map_unary<T, T>(x, y, [](T v) { return v < 0 ? T(0) : v; });
        case UnaryOp::clamp:
        case UnaryOp::hardtanh: {
            // NaN propagates, as in PyTorch: comparisons with NaN are false.
            const T lo = clamp_bound<T>(p.a), hi = clamp_bound<T>(p.b);
            return map_unary<T, T>(x, y, [=](T v) { return v < lo ? lo : (v > hi ? hi : v); });
        }
        default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
        const T a = T(p.a), b = T(p.b);
        switch (op) {
            case UnaryOp::exp: return map_unary<T, T>(x, y, [](T v) { return std::exp(v); });
            case UnaryOp::log: return map_unary<T, T>(x, y, [](T v) { return std::log(v); });
            case UnaryOp::sqrt: return map_unary<T, T>(x, y, [](T v) { return std::sqrt(v); });
            case UnaryOp::rsqrt:
                return map_unary<T, T>(x, y, [](T v) { return T(1) / std::sqrt(v); });
            case UnaryOp::sin: return map_unary<T, T>(x, y, [](T v) { return std::sin(v); });
            case UnaryOp::cos: return map_unary<T, T>(x, y, [](T v) { return std::cos(v); });
            case UnaryOp::tanh: return map_unary<T, T>(x, y, [](T v) { return std::tanh(v); });
            case UnaryOp::sigmoid: return map_unary<T, T>(x, y, [](T v) { return sigmoid_of(v); });
            case UnaryOp::gelu:
                return map_unary<T, T>(x, y, [](T v) {
                    return T(0.5) * v * (T(1) + erf_of(T(v * T(kSqrt1_2))));
                });
            case UnaryOp::gelu_tanh:
                return map_unary<T, T>(x, y, [](T v) {
                    T inner = T(kSqrt2OverPi) * (v + T(kGeluTanhCubic) * v * v * v);
                    return T(0.5) * v * (T(1) + gelu_tanh_of(inner));
                });
            case UnaryOp::silu: return map_unary<T, T>(x, y, [](T v) { return v * sigmoid_of(v); });
            case UnaryOp::elu:
                if constexpr (std::is_same_v<T, float>) return map_unary<T, T>(x, y, elu_float{a});
                return map_unary<T, T>(x, y, [=](T v) { return v > 0 ? v : a * std::expm1(v); });
            case UnaryOp::softplus:
                // Linear above the threshold, where log1p(exp(bx)) / b == x in floating point.
                return map_unary<T, T>(x, y, [=](T v) {
                    return v * a > b ? v : std::log1p(std::exp(v * a)) / a;
                });
            case UnaryOp::pow_scalar:
                return map_unary<T, T>(x, y, [=](T v) { return std::pow(v, a); });
            case UnaryOp::leaky_relu:
                return map_unary<T, T>(x, y, [=](T v) { return v > 0 ? v : T(v * a); });
            default: break;
        }
    }
    LUMEN_FAIL("elementwise", "unary op ", int(op), " not implemented for dtype ", x.dtype);
}

}  // namespace

void unary_forward(UnaryOp op, const UnaryParams& params, const StridedView& x, const StridedView& y) {
    if (op == UnaryOp::logical_not) {
        dispatch_numeric_bool(x.dtype, "logical_not", [&]<typename T>() {
            map_unary<bool, T>(x, y, [](T v) { return v == T(0); });
        });
        return;
    }
    dispatch_numeric(x.dtype, "elementwise", [&]<typename T>() { unary_typed<T>(op, params, x, y); });
}

namespace {

// grad_x[i] = d(grad_out[i], saved[i]) over contiguous buffers.
template <typename T, typename D>
void map_backward(const StridedView& saved, const StridedView& grad_out, const StridedView& grad_x,
                  D derivative) {
    const T* s = saved.ptr<T>();
    const T* g = grad_out.ptr<T>();
    T* out = grad_x.ptr<T>();
    parallel_for(0, saved.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) out[i] = derivative(g[i], s[i]);
    });
}

template <typename T>
void unary_backward_typed(UnaryOp op, const UnaryParams& p, const StridedView& s,
                          const StridedView& g, const StridedView& out) {
    const T a = T(p.a), b = T(p.b);
    switch (op) {
        case UnaryOp::abs:  // d|x| = sign(x), 0 at 0
            return map_backward<T>(s, g, out, [](T go, T x) { return go * T((x > 0) - (x < 0)); });
        case UnaryOp::exp: return map_backward<T>(s, g, out, [](T go, T y) { return go * y; });
        case UnaryOp::log: return map_backward<T>(s, g, out, [](T go, T x) { return go / x; });
        case UnaryOp::sqrt:  // d sqrt(x) = 1 / (2 y)
            return map_backward<T>(s, g, out, [](T go, T y) { return go / (T(2) * y); });
        case UnaryOp::rsqrt:  // d x^-1/2 = -y^3 / 2
            return map_backward<T>(s, g, out, [](T go, T y) { return T(-0.5) * go * y * y * y; });
        case UnaryOp::square: return map_backward<T>(s, g, out, [](T go, T x) { return T(2) * go * x; });
        case UnaryOp::sin: return map_backward<T>(s, g, out, [](T go, T x) { return go * std::cos(x); });
        case UnaryOp::cos: return map_backward<T>(s, g, out, [](T go, T x) { return -go * std::sin(x); });
        case UnaryOp::tanh:  // 1 - y^2
            return map_backward<T>(s, g, out, [](T go, T y) { return go * (T(1) - y * y); });
        case UnaryOp::sigmoid:  // y (1 - y)
            return map_backward<T>(s, g, out, [](T go, T y) { return go * y * (T(1) - y); });
        // PyTorch's threshold_backward: 0 where the output is <= 0, the gradient elsewhere (NaN).
        case UnaryOp::relu: return map_backward<T>(s, g, out, [](T go, T y) { return y <= 0 ? T(0) : go; });
        case UnaryOp::gelu:  // Phi(x) + x phi(x)
            return map_backward<T>(s, g, out, [](T go, T x) {
                T cdf = T(0.5) * (T(1) + erf_of(T(x * T(kSqrt1_2))));
                T pdf = T(kInvSqrt2Pi) * vec::exp_nonpositive(T(T(-0.5) * x * x));
                return go * (cdf + x * pdf);
            });
        case UnaryOp::gelu_tanh:  // 0.5 (1 + t) + 0.5 x (1 - t^2) u', u = c (x + k x^3)
            return map_backward<T>(s, g, out, [](T go, T x) {
                T t = gelu_tanh_of(T(T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x * x * x)));
                T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * x * x);
                return go * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
            });
        case UnaryOp::silu:  // s (1 + x (1 - s))
            return map_backward<T>(s, g, out, [](T go, T x) {
                T sg = sigmoid_of(x);
                return go * sg * (T(1) + x * (T(1) - sg));
            });
        case UnaryOp::elu:  // 1 for x > 0, alpha exp(x) otherwise
            if constexpr (std::is_same_v<T, float>)
                return map_backward<T>(s, g, out, elu_grad_float{a});
            return map_backward<T>(s, g, out, [=](T go, T x) { return x > 0 ? go : go * a * std::exp(x); });
        case UnaryOp::softplus:  // sigmoid(beta x) below the threshold, 1 above
            return map_backward<T>(s, g, out, [=](T go, T x) {
                return x * a > b ? go : go * sigmoid_of(x * a);
            });
        case UnaryOp::clamp:  // 1 inside [min, max] (inclusive), 0 where clamped
            return map_backward<T>(s, g, out, [=](T go, T x) { return x >= a && x <= b ? go : T(0); });
        case UnaryOp::leaky_relu:  // 1 for x > 0, negative_slope otherwise
            return map_backward<T>(s, g, out, [=](T go, T x) { return x > 0 ? go : T(go * a); });
        case UnaryOp::hardtanh:  // 1 strictly inside (min, max), 0 at and beyond the bounds
            return map_backward<T>(s, g, out, [=](T go, T x) { return x > a && x < b ? go : T(0); });
        case UnaryOp::pow_scalar:  // p x^(p-1); exactly 0 for p == 0
            return map_backward<T>(s, g, out, [=](T go, T x) {
                return a == T(0) ? T(0) : go * a * std::pow(x, a - T(1));
            });
        default: LUMEN_FAIL("elementwise", "unary op ", int(op), " has no backward kernel");
    }
}

}  // namespace

void unary_backward(UnaryOp op, const UnaryParams& params, const StridedView& saved,
                    const StridedView& grad_out, const StridedView& grad_x) {
    dispatch_floating(saved.dtype, "elementwise backward", [&]<typename T>() {
        unary_backward_typed<T>(op, params, saved, grad_out, grad_x);
    });
}

namespace {

// out[i] = f(a[i], b[i]) over three views of out's shape; fast paths for unit strides and
// for one operand broadcast as a scalar along the row (stride 0).
template <typename Out, typename T, typename F>
void map_binary(const StridedView& a_in, const StridedView& b_in, const StridedView& out_in, F f) {
    StridedView views[3] = {out_in, a_in, b_in};
    coalesce_dims(views, 3);
    Out* out = views[0].ptr<Out>();
    const T* a = views[1].ptr<T>();
    const T* b = views[2].ptr<T>();
    for_each_row(views, [&](const int64_t* offsets, int64_t n, const int64_t* steps) {
        Out* o = out + offsets[0];
        const T* x = a + offsets[1];
        const T* y = b + offsets[2];
        if (steps[0] == 1 && steps[1] == 1 && steps[2] == 1) {
            for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
        } else if (steps[0] == 1 && steps[1] == 1 && steps[2] == 0) {
            const T scalar = y[0];
            for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], scalar);
        } else if (steps[0] == 1 && steps[1] == 0 && steps[2] == 1) {
            const T scalar = x[0];
            for (int64_t i = 0; i < n; ++i) o[i] = f(scalar, y[i]);
        } else {
            for (int64_t i = 0; i < n; ++i) o[i * steps[0]] = f(x[i * steps[1]], y[i * steps[2]]);
        }
    });
}

template <typename T>
void binary_typed(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out) {
    switch (op) {
        case BinaryOp::add: return map_binary<T, T>(a, b, out, [](T x, T y) { return T(x + y); });
        case BinaryOp::sub: return map_binary<T, T>(a, b, out, [](T x, T y) { return T(x - y); });
        case BinaryOp::mul: return map_binary<T, T>(a, b, out, [](T x, T y) { return T(x * y); });
        case BinaryOp::div: return map_binary<T, T>(a, b, out, [](T x, T y) { return T(x / y); });
        case BinaryOp::pow:
            return map_binary<T, T>(a, b, out, [](T x, T y) { return T(std::pow(x, y)); });
        // NaN propagates through maximum/minimum as in PyTorch.
        case BinaryOp::maximum:
            return map_binary<T, T>(a, b, out, [](T x, T y) { return x != x ? x : (y != y ? y : (x > y ? x : y)); });
        case BinaryOp::minimum:
            return map_binary<T, T>(a, b, out, [](T x, T y) { return x != x ? x : (y != y ? y : (x < y ? x : y)); });
        case BinaryOp::eq: return map_binary<bool, T>(a, b, out, [](T x, T y) { return x == y; });
        case BinaryOp::ne: return map_binary<bool, T>(a, b, out, [](T x, T y) { return x != y; });
        case BinaryOp::lt: return map_binary<bool, T>(a, b, out, [](T x, T y) { return x < y; });
        case BinaryOp::le: return map_binary<bool, T>(a, b, out, [](T x, T y) { return x <= y; });
        case BinaryOp::gt: return map_binary<bool, T>(a, b, out, [](T x, T y) { return x > y; });
        case BinaryOp::ge: return map_binary<bool, T>(a, b, out, [](T x, T y) { return x >= y; });
        case BinaryOp::logical_and:
            return map_binary<bool, T>(a, b, out, [](T x, T y) { return x != T(0) && y != T(0); });
        case BinaryOp::logical_or:
            return map_binary<bool, T>(a, b, out, [](T x, T y) { return x != T(0) || y != T(0); });
    }
}

}  // namespace

void binary_forward(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out) {
    bool logical = op >= BinaryOp::eq;
    if (logical) {
        dispatch_numeric_bool(a.dtype, "elementwise", [&]<typename T>() { binary_typed<T>(op, a, b, out); });
    } else {
        dispatch_numeric(a.dtype, "elementwise", [&]<typename T>() { binary_typed<T>(op, a, b, out); });
    }
}

void where_forward(const StridedView& condition, const StridedView& a, const StridedView& b,
                   const StridedView& out) {
    StridedView views[4] = {out, condition, a, b};
    coalesce_dims(views, 4);
    dispatch_numeric_bool(out.dtype, "where", [&]<typename T>() {
        T* o = views[0].ptr<T>();
        const bool* c = views[1].ptr<bool>();
        const T* x = views[2].ptr<T>();
        const T* y = views[3].ptr<T>();
        for_each_row(views, [&](const int64_t* off, int64_t n, const int64_t* st) {
            for (int64_t i = 0; i < n; ++i)
                o[off[0] + i * st[0]] = c[off[1] + i * st[1]] ? x[off[2] + i * st[2]] : y[off[3] + i * st[3]];
        });
    });
}

}  // namespace cpu
}  // namespace lumen
