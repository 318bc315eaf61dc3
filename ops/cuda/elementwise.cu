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
#include "ops/elementwise_math.h"

namespace lumen::cuda {
namespace {

namespace em = elementwise_math;

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

// The formulas of ops/elementwise_math.h with the CUDA math library, for the runtime op.
template <typename T>
__device__ T unary_value(UnaryOp op, T v, T a, T b) {
    T result = v;  // unreachable ops keep v: the host checked the op against the dtype
    em::visit_unary(op, [&]<UnaryOp O>() {
        result = em::unary_value<O, em::LibraryMath>(v, a, b);
    });
    return result;
}

template <typename T>
__device__ T unary_derivative(UnaryOp op, T go, T s, T a, T b) {
    T result = T(0);
    em::visit_unary(op, [&]<UnaryOp O>() {
        if constexpr (em::has_backward(O)) result = em::unary_grad<O, em::LibraryMath>(go, s, a, b);
    });
    return result;
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
        out[strided_offset(y, i)] = em::is_zero(to_acc(in[strided_offset(x, i)]));
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
    T result = T(0);
    em::visit_binary(op, [&]<BinaryOp O>() {
        if constexpr (!em::bool_result(O)) result = em::binary_value<O, em::LibraryMath>(x, y);
    });
    return result;
}

template <typename T>
__device__ bool compare_value(BinaryOp op, T x, T y) {
    bool result = false;
    em::visit_binary(op, [&]<BinaryOp O>() {
        if constexpr (em::bool_result(O)) result = em::binary_value<O, em::LibraryMath>(x, y);
    });
    return result;
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
            LUMEN_CHECK(em::integer_capable(op), "elementwise", "unary op ", int(op),
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
    if (em::bool_result(op)) {
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
