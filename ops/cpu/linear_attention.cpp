// CPU fused linear attention (ops/linear_attention.h): one task per batch element (a head of a
// sample), Eigen GEMMs on its matrices, phi computed on the fly into per-task buffers.
//
// Forward:  phi_k = phi(K), z = phi_k^T 1, S = phi_k^T V, phi_q = phi(Q),
//           den = phi_q z + eps, Y = (phi_q S) / den (row-wise).
// Backward, from G = dL/dY (the quotient rule of y = num / den, then the two products and phi):
//           gn = G / den,  gd_n = -(G_n . Y_n) / den_n,
//           dphi_q = gn S^T + gd z^T,  dS = phi_q^T gn,  dz = phi_q^T gd,
//           dphi_k = V dS^T + 1 dz^T,  dV = phi_k dS,
//           dQ = dphi_q * phi'(Q), dK = dphi_k * phi'(K),  phi'(x) = min(phi(x), 1).
// S and z (dk x dv and dk) are recomputed in backward rather than kept.

// Tuned generically, as ops/cpu/matmul.cpp explains (Eigen's GEMM kernel and -march=native on
// znver3 with GCC).
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC target("tune=generic")
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <Eigen/Core>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/linear_attention_kernels.h"

namespace lumen::cpu {

namespace {

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using RowVector = Eigen::Matrix<T, 1, Eigen::Dynamic>;
template <typename T>
using ColVector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <typename T>
using Map = Eigen::Map<Matrix<T>>;
template <typename T>
using ConstMap = Eigen::Map<const Matrix<T>>;
template <typename T>
using RowsMap = Eigen::Map<const Matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

// The offset of batch element e of a view whose last two dims are (rows, cols).
int64_t batch_offset(const StridedView& view, int64_t e) {
    StridedView batch = view;
    batch.ndim = view.ndim - 2;
    return strided_offset(batch, e);
}

// Calls fn(X) on the (rows, cols) matrix of batch element e as a row-major map: in place when
// its columns are adjacent, else through a copy in `buffer`.
template <typename T, typename F>
void with_rows(const StridedView& view, int64_t e, Matrix<T>& buffer, F&& fn) {
    const int64_t rows = view.shape[view.ndim - 2], cols = view.shape[view.ndim - 1];
    const int64_t rs = view.strides[view.ndim - 2], cs = view.strides[view.ndim - 1];
    const T* x = view.ptr<T>() + batch_offset(view, e);
    if (cs == 1 && (rs >= cols || rows <= 1)) {
        fn(RowsMap<T>(x, rows, cols, Eigen::OuterStride<>(std::max(rs, cols))));
        return;
    }
    buffer.resize(rows, cols);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) buffer(i, j) = x[i * rs + j * cs];
    fn(RowsMap<T>(buffer.data(), rows, cols, Eigen::OuterStride<>(cols)));
}

// phi = elu(x) + 1 of batch element e's (rows, cols) matrix, read in its storage order.
template <typename T>
void feature_map(const StridedView& view, int64_t e, Matrix<T>& phi) {
    const int64_t rows = view.shape[view.ndim - 2], cols = view.shape[view.ndim - 1];
    const int64_t rs = view.strides[view.ndim - 2], cs = view.strides[view.ndim - 1];
    const T* x = view.ptr<T>() + batch_offset(view, e);
    phi.resize(rows, cols);
    auto phi_of = [](T value) { return value > T(0) ? value + T(1) : std::exp(value); };
    if (cs <= rs) {
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) phi(i, j) = phi_of(x[i * rs + j * cs]);
    } else {  // column-major storage (GDLA's channel-major maps): down the columns
        for (int64_t j = 0; j < cols; ++j)
            for (int64_t i = 0; i < rows; ++i) phi(i, j) = phi_of(x[i * rs + j * cs]);
    }
}

// Per-task buffers, reused across the batch elements of a task.
template <typename T>
struct Buffers {
    using Scalar = T;
    Matrix<T> phi_q, phi_k, state, v_copy, scaled_grad, grad_state;
    RowVector<T> key_sum, grad_key_sum;
    ColVector<T> den, grad_den;
};

// phi_k, z, S and phi_q of batch element e, and den = phi_q z + eps.
template <typename T>
void recompute(const LinearAttentionProblem& p, const StridedView& q, const StridedView& k,
               const StridedView& v, int64_t e, Buffers<T>& b) {
    feature_map(k, e, b.phi_k);
    b.key_sum = b.phi_k.colwise().sum();
    with_rows(v, e, b.v_copy,
              [&](const RowsMap<T>& values) { b.state.noalias() = b.phi_k.transpose() * values; });
    feature_map(q, e, b.phi_q);
    b.den.noalias() = b.phi_q * b.key_sum.transpose();
    b.den.array() += T(p.eps);
}

// body(e, buffers) for every batch element e after recompute(), the elements split across
// threads, each with its own buffers.
template <typename F>
void each_element(const LinearAttentionProblem& p, const StridedView& q, const StridedView& k,
                  const StridedView& v, const char* name, F&& body) {
    dispatch_floating(q.dtype, name, [&]<typename T>() {
        parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
            Buffers<T> b;
            for (int64_t e = begin; e < end; ++e) {
                recompute(p, q, k, v, e, b);
                body(e, b);
            }
        });
    });
}

}  // namespace

void linear_attention_forward(const LinearAttentionProblem& p, const StridedView& q,
                              const StridedView& k, const StridedView& v, const StridedView& out) {
    each_element(p, q, k, v, "linear_attention", [&](int64_t e, auto& b) {
        using T = typename std::decay_t<decltype(b)>::Scalar;
        Map<T> y(out.ptr<T>() + e * p.n * p.dv, p.n, p.dv);
        y.noalias() = b.phi_q * b.state;
        y.array().colwise() /= b.den.array();
    });
}

void linear_attention_backward(const LinearAttentionProblem& p, const StridedView& q,
                               const StridedView& k, const StridedView& v, const StridedView& out,
                               const StridedView& grad_out, const StridedView& grad_q,
                               const StridedView& grad_k, const StridedView& grad_v) {
    each_element(p, q, k, v, "linear_attention backward", [&](int64_t e, auto& b) {
        using T = typename std::decay_t<decltype(b)>::Scalar;
        ConstMap<T> g(grad_out.ptr<T>() + e * p.n * p.dv, p.n, p.dv);
        ConstMap<T> y(out.ptr<T>() + e * p.n * p.dv, p.n, p.dv);
        b.scaled_grad = g;
        b.scaled_grad.array().colwise() /= b.den.array();
        b.grad_den = -(g.cwiseProduct(y).rowwise().sum().array() / b.den.array());

        Map<T> gq(grad_q.ptr<T>() + e * p.n * p.dk, p.n, p.dk);
        gq.noalias() = b.scaled_grad * b.state.transpose();
        gq.noalias() += b.grad_den * b.key_sum;
        gq.array() *= b.phi_q.array().min(T(1));

        b.grad_state.noalias() = b.phi_q.transpose() * b.scaled_grad;
        b.grad_key_sum.noalias() = b.grad_den.transpose() * b.phi_q;
        Map<T> gk(grad_k.ptr<T>() + e * p.m * p.dk, p.m, p.dk);
        Map<T> gv(grad_v.ptr<T>() + e * p.m * p.dv, p.m, p.dv);
        with_rows(v, e, b.v_copy, [&](const RowsMap<T>& values) {
            gk.noalias() = values * b.grad_state.transpose();
        });
        gk.rowwise() += b.grad_key_sum;
        gk.array() *= b.phi_k.array().min(T(1));
        gv.noalias() = b.phi_k * b.grad_state;
    });
}

}  // namespace lumen::cpu
