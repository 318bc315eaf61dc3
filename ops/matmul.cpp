// matmul and linear: argument checks, torch.matmul's shape rules (1-D operands, broadcast batch
// dims), folding a batch times a matrix into one large GEMM, dispatch, and the backward rules.
// The GEMM itself is Eigen's (ops/cpu/matmul.cpp) or cuBLAS's (ops/cuda/matmul.cu).
#include "ops/matmul.h"

#include <algorithm>
#include <atomic>

#include "core/autocast.h"
#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/matmul_kernels.h"
#include "ops/reduce.h"

namespace lumen {

namespace {

// Checks shared by matmul and linear: defined, at least 1-D, one floating dtype, one device.
void check_operands(const char* op, const Tensor& a, const Tensor& b) {
    LUMEN_CHECK(a.defined() && b.defined(), op, "got an undefined tensor");
    LUMEN_CHECK(a.ndim() >= 1 && b.ndim() >= 1, op,
                "both arguments need at least 1 dim, got shapes ", a.shape(), " and ", b.shape());
    check_same_device(op, {a, b});
    DType lowered;  // autocast: float32 operands (or float32 with the autocast dtype) are lowered
    if (autocast::lowers_gemm(a.dtype(), b.dtype(), lowered)) return;
    LUMEN_CHECK(a.dtype() == b.dtype(), op, "expected both operands to have the same dtype, got ",
                a.dtype(), " ", a.shape(), " and ", b.dtype(), " ", b.shape());
    bool half = a.dtype() == DType::float16 || a.dtype() == DType::bfloat16;
    LUMEN_CHECK(!half || a.is_cuda(), op, a.dtype(), " products run on CUDA only (cuBLAS); on ",
                "the CPU convert to float32 first, got operands of shapes ", a.shape(), " and ",
                b.shape());
    LUMEN_CHECK(half || a.dtype() == DType::float32 || a.dtype() == DType::float64, op,
                "supports float32 and float64 (and float16/bfloat16 on CUDA), got ", a.dtype(),
                " operands of shapes ", a.shape(), " and ", b.shape());
}

// The process-wide TF32 switch of matmul.h; read by the CUDA kernel at every product.
std::atomic<bool> allow_tf32{false};

Shape batch_dims(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 2); }

// Whether two batch shapes broadcast (aligned from the right, 1 stretches).
bool batches_broadcast(const Shape& x, const Shape& y) {
    for (size_t i = 1; i <= std::min(x.size(), y.size()); ++i) {
        int64_t dx = x[x.size() - i], dy = y[y.size() - i];
        if (dx != dy && dx != 1 && dy != 1) return false;
    }
    return true;
}

// The number of rows of x seen as one matrix (all dims but the last folded together).
int64_t folded_rows(const Tensor& x) {
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < x.ndim(); ++d) rows *= x.size(d);
    return rows;
}

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
    batch.push_back(rows);
    batch.push_back(cols);
    return batch;
}

// x itself when the GEMM can read its matrices in place, else a contiguous copy (recorded, so
// gradients flow through it).
Tensor gemm_ready(const Tensor& x) {
    bool in_place = matrix_layout(x.size(-2), x.size(-1), x.stride(-2), x.stride(-1)).valid;
    return in_place ? x : x.contiguous();
}

// The gradients below are computed in their operand's memory layout: for a column-major
// operand (a transposed view such as k^T in q k^T, or W^T in linear) the product is formed
// transposed, so the view's backward turns it into a contiguous gradient for the viewed tensor.

// grad_a = grad_out b^T, summed down to a's shape.
Tensor grad_lhs(const Tensor& grad_out, const Tensor& b, const Shape& a_shape, bool a_col_major) {
    if (a_col_major)
        return sum_to(matmul(b, grad_out.transpose(-1, -2)).transpose(-1, -2), a_shape);
    return sum_to(matmul(grad_out, b.transpose(-1, -2)), a_shape);
}

// grad_b = a^T grad_out, summed down to b's shape. When b is one matrix shared by a whole
// batch, the batch sum is folded into the GEMM: a (B*n, k)^T @ grad_out (B*n, m).
Tensor grad_rhs(const Tensor& a, const Tensor& grad_out, const Shape& b_shape, bool b_col_major) {
    if (b_shape.size() == 2 && a.ndim() > 2) {
        int64_t k = a.size(-1), m = grad_out.size(-1), rows = folded_rows(a);
        Tensor a_rows = a.reshape({rows, k}), grad_rows = grad_out.reshape({rows, m});
        if (b_col_major) return matmul(grad_rows.t(), a_rows).t();
        return matmul(a_rows.t(), grad_rows);
    }
    if (b_col_major)
        return sum_to(matmul(grad_out.transpose(-1, -2), a).transpose(-1, -2), b_shape);
    return sum_to(matmul(a.transpose(-1, -2), grad_out), b_shape);
}

// Whether the matrices of x are stored column-major (x is a transposed row-major tensor).
bool is_col_major(const Tensor& x) { return x.stride(-2) == 1 && x.stride(-1) != 1; }

// grad_out (in the result's shape) back in the (..., n, m) shape of the product. A 0-d result
// (vector . vector) is expanded: reshaping a 0-d tensor is not supported by view().
Tensor as_product_shape(const Tensor& grad_out, const Shape& product_shape) {
    if (grad_out.ndim() == 0) return grad_out.expand(product_shape);
    return grad_out.reshape(product_shape);
}

// The GEMM alone, nothing recorded: a @ b (+ bias in every row) in `result_shape`, the product
// in `out_dtype` (a's dtype, or float32 for autocast's half operands).
Tensor product_of(const char* op, const Tensor& a, const Tensor& b, const Tensor& bias,
                  const Shape& result_shape, DType out_dtype) {
    int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
    Shape batch = broadcast_shapes(batch_dims(a), batch_dims(b), op);
    Tensor product = empty(with_matrix(batch, n, m), out_dtype, a.device());
    StridedView a_view = strided_as(a, with_matrix(batch, n, k), op);
    StridedView b_view = strided_as(b, with_matrix(batch, k, m), op);
    StridedView bias_view = bias.defined() ? strided(bias, op) : StridedView{};
    LUMEN_DISPATCH(a, matmul_forward, a_view, b_view, bias_view, strided(product, op));
    return product.view(result_shape);
}

// x converted to `dtype` with its matrices' layout kept (a column-major operand such as W^T
// stays a view of a converted W: no transposing copy); x itself when it has that dtype.
Tensor converted(const Tensor& x, DType dtype) {
    if (x.dtype() == dtype) return x;
    NoGradGuard no_grad;
    if (is_col_major(x)) return x.detach().transpose(-1, -2).to(dtype).transpose(-1, -2);
    return x.detach().to(dtype);
}

// The one recorded op: a @ b (+ bias in every row), returned in `result_shape` (the product's
// (..., n, m) with the dims of 1-D operands dropped, or the unfolded batch; same numel).
// Shapes: a (..., n, k), b (..., k, m), batch dims broadcast; bias (m) or undefined.
// Under autocast (core/autocast.h) the operands are rounded to the half dtype, kept so for the
// backward, and multiplied into a float32 product: by cuBLAS on CUDA, and on the CPU as their
// exact float32 copies (the same numbers to summation order). The backward runs its products
// under the same autocast, so the incoming gradient is rounded too, and returns gradients in
// the operands' own dtypes.
Tensor batched_matmul(const char* op, const Tensor& a_in, const Tensor& b_in, const Tensor& bias,
                      const Shape& result_shape) {
    DType half = DType::float32;
    const bool lowered = autocast::lowers_gemm(a_in.dtype(), b_in.dtype(), half);
    Tensor a, b, out;
    {
        NoGradGuard no_grad;  // the node below connects a_in and b_in directly
        a = gemm_ready(a_in.detach()), b = gemm_ready(b_in.detach());
        if (lowered) a = converted(a, half), b = converted(b, half);
    }
    if (!lowered) {
        out = product_of(op, a, b, bias, result_shape, a.dtype());
    } else if (a.is_cuda()) {
        out = product_of(op, a, b, bias, result_shape, DType::float32);
    } else {
        out = product_of(op, converted(a, DType::float32), converted(b, DType::float32), bias,
                         result_shape, DType::float32);
    }
    if (!needs_recording({a_in, b_in, bias})) return out;

    bool need_a = a_in.requires_grad(), need_b = b_in.requires_grad();
    bool need_bias = bias.defined() && bias.requires_grad();
    SavedTensor saved_a = need_b ? save(a) : SavedTensor();
    SavedTensor saved_b = need_a ? save(b) : SavedTensor();
    Shape a_shape = a.shape(), b_shape = b.shape();
    Shape product_shape =
        with_matrix(broadcast_shapes(batch_dims(a), batch_dims(b), op), a.size(-2), b.size(-1));
    const int64_t m = b.size(-1);
    bool a_col_major = is_col_major(a), b_col_major = is_col_major(b);
    const DType a_dtype = a_in.dtype(), b_dtype = b_in.dtype();
    // grad_a = grad_out b^T and grad_b = a^T grad_out, each summed over the batch dims its
    // operand was broadcast along; grad_bias = grad_out summed over all rows.
    record_backward(op, {a_in, b_in, bias}, out, [=](const Tensor& grad_out) {
        autocast::Guard autocast(lowered ? half : DType::float32);
        Tensor g = as_product_shape(grad_out, product_shape);
        std::vector<Tensor> grads(3);
        if (need_a) grads[0] = grad_lhs(g, saved_b.get(), a_shape, a_col_major).to(a_dtype);
        if (need_b) grads[1] = grad_rhs(saved_a.get(), g, b_shape, b_col_major).to(b_dtype);
        if (need_bias) grads[2] = sum_to(g, {m});
        return grads;
    });
    return out;
}

// (..., n, k) @ (k, m), b one matrix. When a's rows are stored row-major, the whole batch is
// one (B*n, k) @ (k, m) GEMM (a reshape, viewing when the batch dims allow): one large GEMM
// runs much faster than B small ones. A transposed a stays batched and is read in place.
Tensor matmul_by_matrix(const char* op, const Tensor& a, const Tensor& b, const Tensor& bias,
                        const Shape& result_shape) {
    if (a.ndim() <= 2 || a.stride(-1) != 1) return batched_matmul(op, a, b, bias, result_shape);
    Tensor rows = a.reshape({folded_rows(a), a.size(-1)});
    return batched_matmul(op, rows, b, bias, result_shape);
}

}  // namespace

void set_matmul_allow_tf32(bool allow) { allow_tf32.store(allow); }
bool matmul_allow_tf32() { return allow_tf32.load(); }

Tensor matmul(const Tensor& a, const Tensor& b) {
    profiler::Scope profile(profiler::Kind::op, "matmul", a);
    check_operands("matmul", a, b);
    int64_t inner_a = a.size(-1), inner_b = b.ndim() == 1 ? b.size(0) : b.size(-2);
    LUMEN_CHECK(inner_a == inner_b, "matmul", "shapes ", a.shape(), " and ", b.shape(),
                " cannot be multiplied (", inner_a, " != ", inner_b, ")");
    Shape batch_a = a.ndim() > 2 ? batch_dims(a) : Shape{};
    Shape batch_b = b.ndim() > 2 ? batch_dims(b) : Shape{};
    LUMEN_CHECK(batches_broadcast(batch_a, batch_b), "matmul", "batch dims ", batch_a, " and ",
                batch_b, " of shapes ", a.shape(), " and ", b.shape(), " cannot be broadcast");
    // A 1-D operand becomes a matrix, (k) -> (1, k) on the left and (k) -> (k, 1) on the
    // right, and that dim is left out of the result.
    Shape result = broadcast_shapes(batch_a, batch_b, "matmul");
    if (a.ndim() > 1) result.push_back(a.size(-2));
    if (b.ndim() > 1) result.push_back(b.size(-1));
    Tensor a_matrix = a.ndim() == 1 ? a.unsqueeze(0) : a;
    Tensor b_matrix = b.ndim() == 1 ? b.unsqueeze(1) : b;
    if (b_matrix.ndim() == 2) return matmul_by_matrix("matmul", a_matrix, b_matrix, {}, result);
    return batched_matmul("matmul", a_matrix, b_matrix, {}, result);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    profiler::Scope profile(profiler::Kind::op, "linear", x);
    check_operands("linear", x, weight);
    LUMEN_CHECK(weight.ndim() == 2, "linear",
                "weight must be (out_features, in_features), got shape ", weight.shape());
    LUMEN_CHECK(x.size(-1) == weight.size(1), "linear", "input of shape ", x.shape(),
                " does not match weight of shape ", weight.shape(), " (", x.size(-1),
                " != ", weight.size(1), ")");
    if (bias.defined()) {
        LUMEN_CHECK(bias.ndim() == 1 && bias.size(0) == weight.size(0), "linear", "bias must be (",
                    weight.size(0), ") for weight of shape ", weight.shape(), ", got shape ",
                    bias.shape());
        LUMEN_CHECK(bias.dtype() == weight.dtype() && bias.device() == weight.device(), "linear",
                    "bias is ", bias.dtype(), " on ", bias.device(), " but weight is ",
                    weight.dtype(), " on ", weight.device());
    }
    // y = x W^T + b: W^T is a column-major view of W that the GEMM reads in place, and the bias
    // is fused into the GEMM's output initialization.
    Shape result = x.shape();
    result.back() = weight.size(0);
    Tensor x_matrix = x.ndim() == 1 ? x.unsqueeze(0) : x;
    return matmul_by_matrix("linear", x_matrix, weight.t(), bias, result);
}

}  // namespace lumen
