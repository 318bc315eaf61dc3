// linear_attention: argument checks, the reference composition, and the fused CPU op with its
// backward (the kernels are in ops/cpu/linear_attention.cpp).
#include "ops/linear_attention.h"

#include <cmath>

#include "core/autograd.h"
#include "core/profiler.h"
#include "ops/elementwise.h"
#include "ops/linear_attention_kernels.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace lumen {

namespace {

constexpr const char* kOp = "linear_attention";

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
    batch.push_back(rows);
    batch.push_back(cols);
    return batch;
}

// Checks the operands; returns their broadcast batch shape.
Shape check_arguments(const Tensor& q, const Tensor& k, const Tensor& v, double eps) {
    LUMEN_CHECK(q.defined() && k.defined() && v.defined(), kOp, "got an undefined tensor");
    LUMEN_CHECK(q.ndim() >= 2 && k.ndim() >= 2 && v.ndim() >= 2, kOp,
                "expects q (..., N, dk), k (..., M, dk), v (..., M, dv), got shapes ", q.shape(),
                ", ", k.shape(), ", ", v.shape());
    LUMEN_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), kOp,
                "q and k need the same feature size and k and v the same number of keys, got ",
                "shapes ", q.shape(), ", ", k.shape(), ", ", v.shape());
    LUMEN_CHECK(q.dtype() == k.dtype() && k.dtype() == v.dtype() &&
                    (q.dtype() == DType::float32 || q.dtype() == DType::float64),
                kOp, "expects float32 or float64 q, k, v of one dtype, got ", q.dtype(), ", ",
                k.dtype(), ", ", v.dtype());
    check_same_device(kOp, {q, k, v});
    LUMEN_CHECK(std::isfinite(eps) && eps >= 0.0, kOp, "eps must be finite and >= 0, got ", eps);
    return broadcast_shapes(broadcast_shapes(batch_of(q), batch_of(k), kOp), batch_of(v), kOp);
}

}  // namespace

Tensor linear_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, double eps) {
    check_arguments(q, k, v, eps);
    Tensor phi_q = add(elu(q, 1.0), 1.0), phi_k = add(elu(k, 1.0), 1.0);
    // The dk x dv state and the dk normaliser first: never an N x M matrix.
    Tensor state = matmul(phi_k.transpose(-2, -1), v);              // (..., dk, dv)
    Tensor key_sum = sum(phi_k, {-2}, true);                        // (..., 1, dk)
    Tensor numerator = matmul(phi_q, state);                        // (..., N, dv)
    Tensor denominator = matmul(phi_q, key_sum.transpose(-2, -1));  // (..., N, 1)
    return div(numerator, add(denominator, eps));
}

Tensor linear_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, double eps) {
    profiler::Scope profile(profiler::Kind::op, kOp, q_in);
    Shape batch = check_arguments(q_in, k_in, v_in, eps);
    if (batch.empty())  // one matrix each: a batch of one
        return linear_attention(q_in.unsqueeze(0), k_in.unsqueeze(0), v_in.unsqueeze(0), eps)
            .squeeze(0);
    LinearAttentionProblem p;
    p.n = q_in.size(-2), p.m = k_in.size(-2), p.dk = q_in.size(-1), p.dv = v_in.size(-1);
    p.eps = eps;
    p.batch = 1;
    for (int64_t size : batch) p.batch *= size;
    // CUDA has no fused kernel yet; empty problems are exact and free through the ops.
    if (q_in.is_cuda() || p.batch == 0 || p.n == 0 || p.m == 0 || p.dk == 0 || p.dv == 0)
        return linear_attention_reference(q_in, k_in, v_in, eps);

    Tensor q = q_in.detach(), k = k_in.detach(), v = v_in.detach();
    const Shape q_shape = with_matrix(batch, p.n, p.dk), k_shape = with_matrix(batch, p.m, p.dk);
    const Shape v_shape = with_matrix(batch, p.m, p.dv), out_shape = with_matrix(batch, p.n, p.dv);
    Tensor out = empty(out_shape, q.dtype(), q.device());
    {
        profiler::Scope kernel(profiler::Kind::kernel, "linear_attention_forward", q);
        cpu::linear_attention_forward(p, strided_as(q, q_shape, kOp), strided_as(k, k_shape, kOp),
                                      strided_as(v, v_shape, kOp), strided(out, kOp));
    }
    record_backward(kOp, {q_in, k_in, v_in}, out,
                    [p, q_shape, k_shape, v_shape, sq = save(q), sk = save(k), sv = save(v),
                     so = save(out)](const Tensor& grad_out) {
                        Tensor q = sq.get(), k = sk.get(), v = sv.get(), out = so.get();
                        Tensor g = grad_out.contiguous();
                        Tensor gq = empty(q_shape, q.dtype(), q.device());
                        Tensor gk = empty(k_shape, q.dtype(), q.device());
                        Tensor gv = empty(v_shape, q.dtype(), q.device());
                        {
                            profiler::Scope kernel(profiler::Kind::kernel,
                                                   "linear_attention_backward", q);
                            cpu::linear_attention_backward(
                                p, strided_as(q, q_shape, kOp), strided_as(k, k_shape, kOp),
                                strided_as(v, v_shape, kOp), strided(out, kOp), strided(g, kOp),
                                strided(gq, kOp), strided(gk, kOp), strided(gv, kOp));
                        }
                        // Operands broadcast along batch dims get their gradients summed back.
                        return std::vector<Tensor>{sum_to(gq, q.shape()), sum_to(gk, k.shape()),
                                                   sum_to(gv, v.shape())};
                    });
    return out;
}

}  // namespace lumen
