// CPU elementwise kernels: unary forward/backward and broadcasting binary ops, with the
// formulas of ops/elementwise_math.h. The op is turned into a template argument once, outside
// the loops; loops over unit strides are kept separate from the strided ones so GCC
// vectorizes them.
#include <bit>
#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_math.h"
#include "ops/reduce_kernels.h"

namespace lumen {

namespace em = elementwise_math;

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

// The primitives of ops/elementwise_math.h on the CPU: the library's, except for float ones
// in plain arithmetic so that the element loops vectorize (std::erf, std::exp, std::tanh and
// log1p are library calls; selects work on the bits, which vectorize even in a build without
// CMakeLists.txt's -fno-trapping-math). double keeps the library. Every primitive is always
// inlined: GCC left sigmoid out of line, a call per element.
struct CpuMath : em::LibraryMath {
    using LibraryMath::erf;
    using LibraryMath::exp;
    using LibraryMath::exp_below;
    using LibraryMath::exp_nonpositive;
    using LibraryMath::expm1_below;
    using LibraryMath::log1p_exp;
    using LibraryMath::sigmoid;
    using LibraryMath::tanh;
    using LibraryMath::tanh_gelu;
    using LibraryMath::where_positive;

    // Eigen's rational approximation x P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 in float
    // beyond), max relative error 3.7e-7 measured against double erf. The clamp to [-4, 4]
    // works on the bits: GCC does not if-convert float comparisons (they may trap). NaN maps
    // to +-1 here; GELU multiplies by x, so NaN still propagates.
    [[gnu::always_inline]] static float erf(float v) {
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

    // The vectorizable exp, tanh and log(1 + e^v) of ops/reduce_kernels.h.
    [[gnu::always_inline]] static float exp_nonpositive(float v) { return vec::exp_nonpositive(v); }
    [[gnu::always_inline]] static float exp(float v) { return vec::exp(v); }
    [[gnu::always_inline]] static float tanh(float v) { return vec::tanh(v); }
    [[gnu::always_inline]] static float log1p_exp(float v) { return vec::log1p_exp(v); }

    // All ones where v > 0 (its bits, read as an int, lie in (0, +inf]), else zero: +0, -0,
    // the negative numbers and every NaN. Integer compares, which GCC vectorizes.
    [[gnu::always_inline]] static int32_t positive_mask(float v) {
        int32_t bits = std::bit_cast<int32_t>(v);
        return -int32_t((bits > 0) & (bits <= 0x7f800000));
    }

    // exp_nonpositive sees min(v, 0) only (positive v masked to +0); NaN stays NaN. e^v - 1
    // is PyTorch's CPU ELU formula too (absolute error ~6e-8 near 0).
    [[gnu::always_inline]] static float exp_below(float v) {
        int32_t bits = std::bit_cast<int32_t>(v) & ~positive_mask(v);
        return vec::exp_nonpositive(std::bit_cast<float>(bits));
    }
    [[gnu::always_inline]] static float expm1_below(float v) { return exp_below(v) - 1.0f; }

    // Chosen through positive_mask: LibraryMath's v > 0 ? above : below, bit for bit.
    [[gnu::always_inline]] static float where_positive(float v, float above, float below) {
        int32_t positive = positive_mask(v);
        return std::bit_cast<float>((std::bit_cast<int32_t>(above) & positive) |
                                    (std::bit_cast<int32_t>(below) & ~positive));
    }

    // e = exp(-|v|) never overflows, and the result is 1 / (1 + e) for v >= 0, e / (1 + e)
    // below (both accurate to a few ulp). NaN stays NaN.
    [[gnu::always_inline]] static float sigmoid(float v) {
        int32_t bits = std::bit_cast<int32_t>(v);
        float e = vec::exp_nonpositive(std::bit_cast<float>(bits | int32_t(0x80000000)));
        float r = 1.0f / (1.0f + e);
        return where_positive(v, r, e * r);
    }

    // 2 sigmoid(2u) - 1: absolute error ~1e-7, which GELU's 0.5 x (1 + tanh) turns into a
    // relative one.
    [[gnu::always_inline]] static float tanh_gelu(float u) {
        return 2.0f * sigmoid(2.0f * u) - 1.0f;
    }
};

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

}  // namespace

void unary_forward(UnaryOp op, const UnaryParams& params, const StridedView& x, const StridedView& y) {
    if (op == UnaryOp::logical_not) {
        dispatch_numeric_bool(x.dtype, "logical_not", [&]<typename T>() {
            map_unary<bool, T>(x, y, [](T v) { return em::is_zero(v); });
        });
        return;
    }
    dispatch_numeric(x.dtype, "elementwise", [&]<typename T>() {
        const T a = clamp_bound<T>(params.a), b = clamp_bound<T>(params.b);
        em::visit_unary(op, [&]<UnaryOp O>() {
            if constexpr (O != UnaryOp::logical_not &&
                          (std::is_floating_point_v<T> || em::integer_capable(O))) {
                map_unary<T, T>(x, y, [=](T v) { return em::unary_value<O, CpuMath>(v, a, b); });
            } else {
                LUMEN_FAIL("elementwise", "unary op ", int(op), " not implemented for dtype ",
                           x.dtype);
            }
        });
    });
}

void unary_backward(UnaryOp op, const UnaryParams& params, const StridedView& saved,
                    const StridedView& grad_out, const StridedView& grad_x) {
    dispatch_floating(saved.dtype, "elementwise backward", [&]<typename T>() {
        const T a = T(params.a), b = T(params.b);
        const T* s = saved.ptr<T>();
        const T* g = grad_out.ptr<T>();
        T* out = grad_x.ptr<T>();
        em::visit_unary(op, [&]<UnaryOp O>() {
            if constexpr (em::has_backward(O)) {
                parallel_for(0, saved.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
                    for (int64_t i = lo; i < hi; ++i)
                        out[i] = em::unary_grad<O, CpuMath>(g[i], s[i], a, b);
                });
            } else {
                LUMEN_FAIL("elementwise", "unary op ", int(op), " has no backward kernel");
            }
        });
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
    em::visit_binary(op, [&]<BinaryOp O>() {
        using Out = std::conditional_t<em::bool_result(O), bool, T>;
        if constexpr (std::is_same_v<T, bool> && !em::bool_result(O)) {
            LUMEN_FAIL("elementwise", "binary op ", int(op), " not implemented for bool");
        } else {
            map_binary<Out, T>(a, b, out,
                               [](T x, T y) { return em::binary_value<O, CpuMath>(x, y); });
        }
    });
}

}  // namespace

void binary_forward(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out) {
    if (em::bool_result(op)) {
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
            // Unit-stride rows (each operand contiguous or one broadcast value) in loops GCC
            // vectorizes: the condition read as bytes (it has no vector type for bool loads).
            const auto* cr = reinterpret_cast<const uint8_t*>(c + off[1]);
            T* orow = o + off[0];
            const T *xr = x + off[2], *yr = y + off[3];
            bool unit = st[0] == 1 && st[1] == 1;
            if (unit && st[2] == 1 && st[3] == 1) {
                for (int64_t i = 0; i < n; ++i) orow[i] = cr[i] ? xr[i] : yr[i];
            } else if (unit && st[2] == 0 && st[3] == 1) {
                const T xv = xr[0];
                for (int64_t i = 0; i < n; ++i) orow[i] = cr[i] ? xv : yr[i];
            } else if (unit && st[2] == 1 && st[3] == 0) {
                const T yv = yr[0];
                for (int64_t i = 0; i < n; ++i) orow[i] = cr[i] ? xr[i] : yv;
            } else {
                for (int64_t i = 0; i < n; ++i)
                    o[off[0] + i * st[0]] =
                        c[off[1] + i * st[1]] ? x[off[2] + i * st[2]] : y[off[3] + i * st[3]];
            }
        });
    });
}

}  // namespace cpu
}  // namespace lumen
