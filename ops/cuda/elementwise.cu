// CUDA elementwise kernels with the semantics of ops/cpu/elementwise.cpp: one thread per
// output element in a grid-stride loop; dense views index directly, others through their
// strides (broadcast operands have stride 0). The op switch is uniform across a launch, so it
// costs no divergence. float32 computes in float, float64 in double.
#include <limits>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/dispatch.h"
#include "core/cuda/strided.cuh"
#include "ops/elementwise_kernels.h"

namespace lumen::cuda {
namespace {

// v < 0 without a pointless comparison for unsigned types.
template <typename T>
__device__ bool negative(T v) {
    if constexpr (std::is_unsigned_v<T>) return false;
    else return v < T(0);
}

template <typename T>
__device__ T sigmoid_of(T v) {
    return T(1) / (T(1) + exp(-v));
}

template <typename T>
__device__ T unary_value(UnaryOp op, T v, T a, T b) {
    switch (op) {
        case UnaryOp::neg: return T(-v);
        case UnaryOp::abs: return negative(v) ? T(-v) : v;
        case UnaryOp::sign: return T((v > T(0)) - negative(v));
        case UnaryOp::square: return T(v * v);
        case UnaryOp::relu: return v > 0 ? v : T(0);
        case UnaryOp::clamp:
        case UnaryOp::hardtanh: return v < a ? a : (v > b ? b : v);  // NaN propagates
        default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
        switch (op) {
            case UnaryOp::exp: return exp(v);
            case UnaryOp::log: return log(v);
            case UnaryOp::sqrt: return sqrt(v);
            case UnaryOp::rsqrt: return T(1) / sqrt(v);
            case UnaryOp::sin: return sin(v);
            case UnaryOp::cos: return cos(v);
            case UnaryOp::tanh: return tanh(v);
            case UnaryOp::sigmoid: return sigmoid_of(v);
            case UnaryOp::gelu: return T(0.5) * v * (T(1) + erf(v * T(kSqrt1_2)));
            case UnaryOp::gelu_tanh:
                return T(0.5) * v *
                       (T(1) + tanh(T(kSqrt2OverPi) * (v + T(kGeluTanhCubic) * v * v * v)));
            case UnaryOp::silu: return v * sigmoid_of(v);
            case UnaryOp::elu: return v > 0 ? v : a * expm1(v);
            case UnaryOp::softplus: return v * a > b ? v : log1p(exp(v * a)) / a;
            case UnaryOp::pow_scalar: return pow(v, a);
            case UnaryOp::leaky_relu: return v > 0 ? v : T(v * a);
            default: break;
        }
    }
    return v;  // unreachable: the host checked the op against the dtype
}

template <typename T>
__device__ T unary_derivative(UnaryOp op, T go, T s, T a, T b) {
    switch (op) {
        case UnaryOp::abs: return go * T((s > 0) - (s < 0));
        case UnaryOp::exp: return go * s;
        case UnaryOp::log: return go / s;
        case UnaryOp::sqrt: return go / (T(2) * s);
        case UnaryOp::rsqrt: return T(-0.5) * go * s * s * s;
        case UnaryOp::square: return T(2) * go * s;
        case UnaryOp::sin: return go * cos(s);
        case UnaryOp::cos: return -go * sin(s);
        case UnaryOp::tanh: return go * (T(1) - s * s);
        case UnaryOp::sigmoid: return go * s * (T(1) - s);
        case UnaryOp::relu: return s > 0 ? go : T(0);
        case UnaryOp::gelu: {
            T cdf = T(0.5) * (T(1) + erf(s * T(kSqrt1_2)));
            T pdf = T(kInvSqrt2Pi) * exp(T(-0.5) * s * s);
            return go * (cdf + s * pdf);
        }
        case UnaryOp::gelu_tanh: {
            T t = tanh(T(kSqrt2OverPi) * (s + T(kGeluTanhCubic) * s * s * s));
            T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * s * s);
            return go * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * du);
        }
        case UnaryOp::silu: {
            T sg = sigmoid_of(s);
            return go * sg * (T(1) + s * (T(1) - sg));
        }
        case UnaryOp::elu: return s > 0 ? go : go * a * exp(s);
        case UnaryOp::softplus: return s * a > b ? go : go * sigmoid_of(s * a);
        case UnaryOp::clamp: return s >= a && s <= b ? go : T(0);
        case UnaryOp::leaky_relu: return s > 0 ? go : T(go * a);
        case UnaryOp::hardtanh: return s > a && s < b ? go : T(0);
        case UnaryOp::pow_scalar: return a == T(0) ? T(0) : go * a * pow(s, a - T(1));
        default: return T(0);  // unreachable: the host checked the op
    }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, T a, T b, StridedView x, StridedView y, int64_t n,
                             bool dense) {
    const T* in = static_cast<const T*>(x.data);
    T* out = static_cast<T*>(y.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        T v = dense ? in[i] : in[strided_offset(x, i)];
        out[dense ? i : strided_offset(y, i)] = unary_value<T>(op, v, a, b);
    }
}

template <typename T>
__global__ void logical_not_kernel(StridedView x, StridedView y, int64_t n) {
    const T* in = static_cast<const T*>(x.data);
    bool* out = static_cast<bool*>(y.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        out[strided_offset(y, i)] = in[strided_offset(x, i)] == T(0);
}

template <typename T>
__global__ void unary_backward_kernel(UnaryOp op, T a, T b, const T* saved, const T* grad_out,
                                      T* grad_x, int64_t n) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        grad_x[i] = unary_derivative<T>(op, grad_out[i], saved[i], a, b);
}

template <typename T>
__device__ T binary_value(BinaryOp op, T x, T y) {
    switch (op) {
        case BinaryOp::add: return T(x + y);
        case BinaryOp::sub: return T(x - y);
        case BinaryOp::mul: return T(x * y);
        case BinaryOp::div: return T(x / y);
        case BinaryOp::pow:
            if constexpr (std::is_floating_point_v<T>) return pow(x, y);
            else return T(pow(double(x), double(y)));
        case BinaryOp::maximum: return x != x ? x : (x > y || y != y ? x : y);
        case BinaryOp::minimum: return x != x ? x : (x < y || y != y ? x : y);
        default: return T(0);
    }
}

template <typename T>
__device__ bool compare_value(BinaryOp op, T x, T y) {
    switch (op) {
        case BinaryOp::eq: return x == y;
        case BinaryOp::ne: return x != y;
        case BinaryOp::lt: return x < y;
        case BinaryOp::le: return x <= y;
        case BinaryOp::gt: return x > y;
        case BinaryOp::ge: return x >= y;
        case BinaryOp::logical_and: return x != T(0) && y != T(0);
        case BinaryOp::logical_or: return x != T(0) || y != T(0);
        default: return false;
    }
}

template <typename Out, typename T>
__global__ void binary_kernel(BinaryOp op, StridedView a, StridedView b, StridedView out,
                              int64_t n, bool dense) {
    const T* x = static_cast<const T*>(a.data);
    const T* y = static_cast<const T*>(b.data);
    Out* o = static_cast<Out*>(out.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        T u = dense ? x[i] : x[strided_offset(a, i)];
        T v = dense ? y[i] : y[strided_offset(b, i)];
        int64_t to = dense ? i : strided_offset(out, i);
        if constexpr (std::is_same_v<Out, bool>) {
            o[to] = compare_value<T>(op, u, v);
        } else {
            o[to] = binary_value<T>(op, u, v);
        }
    }
}

template <typename T>
__global__ void where_kernel(StridedView c, StridedView a, StridedView b, StridedView out,
                             int64_t n) {
    const bool* cond = static_cast<const bool*>(c.data);
    const T* x = static_cast<const T*>(a.data);
    const T* y = static_cast<const T*>(b.data);
    T* o = static_cast<T*>(out.data);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        o[strided_offset(out, i)] = cond[strided_offset(c, i)] ? x[strided_offset(a, i)] : y[strided_offset(b, i)];
}

bool integer_capable(UnaryOp op) {
    switch (op) {
        case UnaryOp::neg:
        case UnaryOp::abs:
        case UnaryOp::sign:
        case UnaryOp::square:
        case UnaryOp::relu:
        case UnaryOp::clamp:
        case UnaryOp::hardtanh: return true;
        default: return false;
    }
}

}  // namespace

void unary_forward(UnaryOp op, const UnaryParams& params, const StridedView& x, const StridedView& y) {
    int64_t n = y.numel();
    if (n == 0) return;
    if (op == UnaryOp::logical_not) {
        dispatch_numeric_bool(x.dtype, "logical_not", [&]<typename T>() {
            logical_not_kernel<T><<<grid_for(n), 256>>>(x, y, n);
        });
        LUMEN_CUDA_CHECK_LAUNCH("logical_not_kernel");
        return;
    }
    bool dense = is_dense(x) && is_dense(y);
    dispatch_numeric(x.dtype, "elementwise", [&]<typename T>() {
        if constexpr (!std::is_floating_point_v<T>) {
            LUMEN_CHECK(integer_capable(op), "elementwise", "unary op ", int(op),
                        " is not defined for integer dtype ", dtype_name(x.dtype));
        }
        unary_kernel<T><<<grid_for(n), 256>>>(op, clamp_bound<T>(params.a), clamp_bound<T>(params.b), x,
                                              y, n, dense);
    });
    LUMEN_CUDA_CHECK_LAUNCH("unary_kernel");
}

void unary_backward(UnaryOp op, const UnaryParams& params, const StridedView& saved,
                    const StridedView& grad_out, const StridedView& grad_x) {
    int64_t n = grad_x.numel();
    if (n == 0) return;
    if (saved.dtype == DType::float32) {
        unary_backward_kernel<float><<<grid_for(n), 256>>>(
            op, float(params.a), float(params.b), saved.ptr<const float>(),
            grad_out.ptr<const float>(), grad_x.ptr<float>(), n);
    } else if (saved.dtype == DType::float64) {
        unary_backward_kernel<double><<<grid_for(n), 256>>>(
            op, params.a, params.b, saved.ptr<const double>(), grad_out.ptr<const double>(),
            grad_x.ptr<double>(), n);
    } else {
        LUMEN_FAIL("elementwise backward", "has no CUDA kernel for dtype ", dtype_name(saved.dtype));
    }
    LUMEN_CUDA_CHECK_LAUNCH("unary_backward_kernel");
}

void binary_forward(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    bool dense = is_dense(a) && is_dense(b) && is_dense(out);
    bool logical = op >= BinaryOp::eq;
    if (logical) {
        dispatch_numeric_bool(a.dtype, "elementwise", [&]<typename T>() {
            binary_kernel<bool, T><<<grid_for(n), 256>>>(op, a, b, out, n, dense);
        });
    } else {
        dispatch_numeric(a.dtype, "elementwise", [&]<typename T>() {
            binary_kernel<T, T><<<grid_for(n), 256>>>(op, a, b, out, n, dense);
        });
    }
    LUMEN_CUDA_CHECK_LAUNCH("binary_kernel");
}

void where_forward(const StridedView& condition, const StridedView& a, const StridedView& b,
                   const StridedView& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    dispatch_numeric_bool(out.dtype, "where", [&]<typename T>() {
        where_kernel<T><<<grid_for(n), 256>>>(condition, a, b, out, n);
    });
    LUMEN_CUDA_CHECK_LAUNCH("where_kernel");
}

}  // namespace lumen::cuda
