// CUDA elementwise kernels with the semantics of ops/cpu/elementwise.cpp: one thread per
// output element in a grid-stride loop; dense views index directly, scalar operands (every
// stride 0) read one element, others go through their strides. Dense float32 and half
// tensors with 16-byte aligned pointers move 16 bytes per load and store. The op switch is
// uniform across a launch, so it costs no divergence. float32 computes in float, float64 in
// double, float16/bfloat16 in float (acc_t, rounded to nearest even on the way back).
#include <limits>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/elementwise_kernels.h"

namespace lumen::cuda {
namespace {

// dispatch_numeric plus the half types (computed in float).
template <typename F>
decltype(auto) dispatch_numeric_half(DType dtype, const char* op, F&& body) {
    if (dtype == DType::float16) return body.template operator()<Half>();
    if (dtype == DType::bfloat16) return body.template operator()<BFloat16>();
    return dispatch_numeric(dtype, op, static_cast<F&&>(body));
}

// Types whose dense launches use 16-byte packs.
template <typename T>
constexpr bool kVectorized = std::is_same_v<T, float> || is_half_v<T>;

template <typename T>
constexpr int kVec = 16 / int(sizeof(T));

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
    T v[V];
};

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// How a kernel finds an operand's element i.
enum Access : int { kDense, kScalar, kStrided };

Access access_of(const StridedView& view) {
    if (is_dense(view)) return kDense;
    bool scalar = true;
    for (int d = 0; d < view.ndim; ++d) scalar = scalar && view.strides[d] == 0;
    return scalar ? kScalar : kStrided;
}

__device__ __forceinline__ int64_t offset_of(const StridedView& view, int64_t i, Access access) {
    return access == kDense ? i : (access == kScalar ? 0 : strided_offset(view, i));
}

// The 1-D grid of a grid-stride loop over `count` items.
__device__ __forceinline__ int64_t first_index() {
    return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

// v < 0 without a pointless comparison for unsigned types.
template <typename T>
__device__ bool negative(T v) {
    if constexpr (std::is_unsigned_v<T>)
        return false;
    else
        return v < T(0);
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
        case UnaryOp::relu: return negative(v) ? T(0) : v;  // NaN and -0 pass through
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
        case UnaryOp::relu: return s <= 0 ? T(0) : go;  // s is the output
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
__global__ void unary_kernel(UnaryOp op, acc_t<T> a, acc_t<T> b, StridedView x, StridedView y,
                             int64_t n, bool dense) {
    const T* in = static_cast<const T*>(x.data);
    T* out = static_cast<T*>(y.data);
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        acc_t<T> v = to_acc(dense ? in[i] : in[strided_offset(x, i)]);
        out[dense ? i : strided_offset(y, i)] = from_acc<T>(unary_value(op, v, a, b));
    }
}

// Dense x and y, 16-byte aligned: packs of V elements, then the last n % V one by one.
template <typename T, int V>
__global__ void unary_vec_kernel(UnaryOp op, acc_t<T> a, acc_t<T> b, const T* x, T* y, int64_t n) {
    int64_t packs = n / V;
    for (int64_t p = first_index(); p < packs; p += grid_stride()) {
        Pack<T, V> pack = reinterpret_cast<const Pack<T, V>*>(x)[p];
#pragma unroll
        for (int c = 0; c < V; ++c)
            pack.v[c] = from_acc<T>(unary_value(op, to_acc(pack.v[c]), a, b));
        reinterpret_cast<Pack<T, V>*>(y)[p] = pack;
    }
    int64_t i = packs * V + first_index();
    if (i < n) y[i] = from_acc<T>(unary_value(op, to_acc(x[i]), a, b));
}

template <typename T>
__global__ void logical_not_kernel(StridedView x, StridedView y, int64_t n) {
    const T* in = static_cast<const T*>(x.data);
    bool* out = static_cast<bool*>(y.data);
    for (int64_t i = first_index(); i < n; i += grid_stride())
        out[strided_offset(y, i)] = to_acc(in[strided_offset(x, i)]) == acc_t<T>(0);
}

// All three buffers dense (and 16-byte aligned when V > 1).
template <typename T, int V>
__global__ void unary_backward_kernel(UnaryOp op, acc_t<T> a, acc_t<T> b, const T* saved,
                                      const T* grad_out, T* grad_x, int64_t n) {
    int64_t packs = n / V;
    for (int64_t p = first_index(); p < packs; p += grid_stride()) {
        Pack<T, V> s = reinterpret_cast<const Pack<T, V>*>(saved)[p];
        Pack<T, V> g = reinterpret_cast<const Pack<T, V>*>(grad_out)[p];
#pragma unroll
        for (int c = 0; c < V; ++c)
            s.v[c] = from_acc<T>(unary_derivative(op, to_acc(g.v[c]), to_acc(s.v[c]), a, b));
        reinterpret_cast<Pack<T, V>*>(grad_x)[p] = s;
    }
    int64_t i = packs * V + first_index();
    if (i < n)
        grad_x[i] = from_acc<T>(unary_derivative(op, to_acc(grad_out[i]), to_acc(saved[i]), a, b));
}

template <typename T>
__device__ T binary_value(BinaryOp op, T x, T y) {
    switch (op) {
        case BinaryOp::add: return T(x + y);
        case BinaryOp::sub: return T(x - y);
        case BinaryOp::mul: return T(x * y);
        case BinaryOp::div: return T(x / y);
        case BinaryOp::pow:
            if constexpr (std::is_floating_point_v<T>)
                return pow(x, y);
            else
                return T(pow(double(x), double(y)));
        case BinaryOp::maximum: return x != x ? x : (y != y ? y : (x > y ? x : y));
        case BinaryOp::minimum: return x != x ? x : (y != y ? y : (x < y ? x : y));
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

// Operand accesses: a, b, out.
struct BinaryAccess {
    Access a, b, out;
};

template <typename Out, typename T>
__global__ void binary_kernel(BinaryOp op, StridedView a, StridedView b, StridedView out, int64_t n,
                              BinaryAccess access) {
    const T* x = static_cast<const T*>(a.data);
    const T* y = static_cast<const T*>(b.data);
    Out* o = static_cast<Out*>(out.data);
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        acc_t<T> u = to_acc(x[offset_of(a, i, access.a)]);
        acc_t<T> v = to_acc(y[offset_of(b, i, access.b)]);
        int64_t to = offset_of(out, i, access.out);
        if constexpr (std::is_same_v<Out, bool>) {
            o[to] = compare_value(op, u, v);
        } else {
            o[to] = from_acc<T>(binary_value(op, u, v));
        }
    }
}

// Dense, 16-byte aligned output; each operand dense and aligned, or a scalar.
template <typename T, int V>
__global__ void binary_vec_kernel(BinaryOp op, const T* x, const T* y, T* o, int64_t n,
                                  bool x_scalar, bool y_scalar) {
    int64_t packs = n / V;
    acc_t<T> x0 = x_scalar ? to_acc(x[0]) : acc_t<T>(0), y0 = y_scalar ? to_acc(y[0]) : acc_t<T>(0);
    for (int64_t p = first_index(); p < packs; p += grid_stride()) {
        Pack<T, V> u, v;
        if (!x_scalar) u = reinterpret_cast<const Pack<T, V>*>(x)[p];
        if (!y_scalar) v = reinterpret_cast<const Pack<T, V>*>(y)[p];
#pragma unroll
        for (int c = 0; c < V; ++c) {
            acc_t<T> xc = x_scalar ? x0 : to_acc(u.v[c]), yc = y_scalar ? y0 : to_acc(v.v[c]);
            u.v[c] = from_acc<T>(binary_value(op, xc, yc));
        }
        reinterpret_cast<Pack<T, V>*>(o)[p] = u;
    }
    int64_t i = packs * V + first_index();
    if (i < n) {
        acc_t<T> xc = x_scalar ? x0 : to_acc(x[i]), yc = y_scalar ? y0 : to_acc(y[i]);
        o[i] = from_acc<T>(binary_value(op, xc, yc));
    }
}

template <typename T>
__global__ void where_kernel(StridedView c, StridedView a, StridedView b, StridedView out,
                             int64_t n) {
    const bool* cond = static_cast<const bool*>(c.data);
    const T* x = static_cast<const T*>(a.data);
    const T* y = static_cast<const T*>(b.data);
    T* o = static_cast<T*>(out.data);
    for (int64_t i = first_index(); i < n; i += grid_stride())
        o[strided_offset(out, i)] =
            cond[strided_offset(c, i)] ? x[strided_offset(a, i)] : y[strided_offset(b, i)];
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

void unary_forward(UnaryOp op, const UnaryParams& params, const StridedView& x,
                   const StridedView& y) {
    int64_t n = y.numel();
    if (n == 0) return;
    if (op == UnaryOp::logical_not) {
        dispatch_all(x.dtype, "logical_not",
                     [&]<typename T>() { logical_not_kernel<T><<<grid_for(n), 256>>>(x, y, n); });
        LUMEN_CUDA_CHECK_LAUNCH("logical_not_kernel");
        return;
    }
    bool dense = is_dense(x) && is_dense(y);
    dispatch_numeric_half(x.dtype, "elementwise", [&]<typename T>() {
        using A = acc_t<T>;
        if constexpr (!std::is_floating_point_v<A>) {
            LUMEN_CHECK(integer_capable(op), "elementwise", "unary op ", int(op),
                        " is not defined for integer dtype ", dtype_name(x.dtype));
        }
        A a = clamp_bound<A>(params.a), b = clamp_bound<A>(params.b);
        if constexpr (kVectorized<T>) {
            if (dense && aligned(x.data) && aligned(y.data)) {
                unary_vec_kernel<T, kVec<T>>
                    <<<grid_for(n / kVec<T>), 256>>>(op, a, b, x.ptr<const T>(), y.ptr<T>(), n);
                return;
            }
        }
        unary_kernel<T><<<grid_for(n), 256>>>(op, a, b, x, y, n, dense);
    });
    LUMEN_CUDA_CHECK_LAUNCH("unary_kernel");
}

void unary_backward(UnaryOp op, const UnaryParams& params, const StridedView& saved,
                    const StridedView& grad_out, const StridedView& grad_x) {
    int64_t n = grad_x.numel();
    if (n == 0) return;
    dispatch_floating_half(saved.dtype, "elementwise backward", [&]<typename T>() {
        using A = acc_t<T>;
        A a = A(params.a), b = A(params.b);
        const T* s = saved.ptr<const T>();
        const T* g = grad_out.ptr<const T>();
        T* out = grad_x.ptr<T>();
        if constexpr (kVectorized<T>) {
            if (aligned(s) && aligned(g) && aligned(out)) {
                unary_backward_kernel<T, kVec<T>>
                    <<<grid_for(n / kVec<T>), 256>>>(op, a, b, s, g, out, n);
                return;
            }
        }
        unary_backward_kernel<T, 1><<<grid_for(n), 256>>>(op, a, b, s, g, out, n);
    });
    LUMEN_CUDA_CHECK_LAUNCH("unary_backward_kernel");
}

void binary_forward(BinaryOp op, const StridedView& a, const StridedView& b,
                    const StridedView& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    BinaryAccess access{access_of(a), access_of(b), access_of(out)};
    bool logical = op >= BinaryOp::eq;
    if (logical) {
        dispatch_all(a.dtype, "elementwise", [&]<typename T>() {
            binary_kernel<bool, T><<<grid_for(n), 256>>>(op, a, b, out, n, access);
        });
        LUMEN_CUDA_CHECK_LAUNCH("binary_kernel");
        return;
    }
    dispatch_numeric_half(a.dtype, "elementwise", [&]<typename T>() {
        if constexpr (kVectorized<T>) {
            auto packs_ok = [](const StridedView& v, Access access) {
                return access == kScalar || (access == kDense && aligned(v.data));
            };
            if (access.out == kDense && aligned(out.data) && packs_ok(a, access.a) &&
                packs_ok(b, access.b)) {
                binary_vec_kernel<T, kVec<T>><<<grid_for(n / kVec<T>), 256>>>(
                    op, a.ptr<const T>(), b.ptr<const T>(), out.ptr<T>(), n, access.a == kScalar,
                    access.b == kScalar);
                return;
            }
        }
        binary_kernel<T, T><<<grid_for(n), 256>>>(op, a, b, out, n, access);
    });
    LUMEN_CUDA_CHECK_LAUNCH("binary_kernel");
}

void where_forward(const StridedView& condition, const StridedView& a, const StridedView& b,
                   const StridedView& out) {
    int64_t n = out.numel();
    if (n == 0) return;
    dispatch_all(out.dtype, "where", [&]<typename T>() {
        where_kernel<T><<<grid_for(n), 256>>>(condition, a, b, out, n);
    });
    LUMEN_CUDA_CHECK_LAUNCH("where_kernel");
}

}  // namespace lumen::cuda
