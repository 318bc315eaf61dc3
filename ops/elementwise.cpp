// Elementwise ops: argument checks, dtype promotion, broadcasting, dispatch, and the backward
// rule beside each forward. Unary ops use fused backward kernels (one pass, no temporaries);
// binary backwards are written with lumen ops and reduce broadcast dims with sum_to.
#include "ops/elementwise.h"

#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/elementwise_kernels.h"
#include "ops/reduce.h"

namespace lumen {

namespace {

std::vector<Tensor> grads(Tensor a) { return {std::move(a)}; }

// The unary kernels of the tensors' device.
void unary_kernel(UnaryOp op, const UnaryParams& params, const Tensor& x, const Tensor& y,
                  const char* name) {
    LUMEN_DISPATCH(x, unary_forward, op, params, strided(x, name), strided(y, name));
}

void unary_backward_kernel(UnaryOp op, const UnaryParams& params, const Tensor& saved,
                           const Tensor& grad_out, const Tensor& grad_x) {
    LUMEN_DISPATCH(saved, unary_backward, op, params, strided(saved), strided(grad_out),
                   strided(grad_x));
}

// y = op(x) with a fused backward kernel. Float-only ops compute integer inputs in float32.
Tensor unary(UnaryOp op, const char* name, const Tensor& x, UnaryParams params = {},
             bool float_only = true) {
    profiler::Scope profile(profiler::Kind::op, name, x);
    LUMEN_CHECK(x.defined(), name, "got an undefined tensor");
    Tensor input = float_only && !x.is_floating_point() ? x.to(DType::float32) : x;
    Tensor y = empty(input.shape(), input.dtype(), input.device());
    unary_kernel(op, params, input, y, name);
    if (!needs_recording({input})) return y;
    SavedTensor saved = save(unary_backward_uses_output(op) ? y : input);
    record_backward(name, {input}, y, [op, params, saved](const Tensor& grad_out) {
        Tensor kept = saved.get().contiguous();
        Tensor g = grad_out.contiguous();
        Tensor grad_x = empty_like(kept);
        unary_backward_kernel(op, params, kept, g, grad_x);
        return grads(grad_x);
    });
    return y;
}

// The compute dtype of a binary op; true division of integers computes in float32.
DType binary_dtype(BinaryOp op, const Tensor& a, const Tensor& b) {
    DType dtype = promote_types(a.dtype(), b.dtype());
    if (op == BinaryOp::div && !is_floating(dtype)) dtype = DType::float32;
    return dtype;
}

// Checks, converts both operands to the compute dtype (differentiably) and runs the kernel.
// Returns the output; a_out/b_out receive the converted operands for the backward.
Tensor binary_forward(BinaryOp op, const char* name, const Tensor& a, const Tensor& b,
                      Tensor& a_out, Tensor& b_out) {
    profiler::Scope profile(profiler::Kind::op, name, a);
    LUMEN_CHECK(a.defined() && b.defined(), name, "got an undefined tensor");
    check_same_device(name, {a, b});
    Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
    DType dtype = binary_dtype(op, a, b);
    a_out = a.to(dtype);
    b_out = b.to(dtype);
    bool logical = op >= BinaryOp::eq;
    Tensor out = empty(shape, logical ? DType::bool_ : dtype, a.device());
    StridedView x = strided_as(a_out, shape, name), y = strided_as(b_out, shape, name);
    LUMEN_DISPATCH(a, binary_forward, op, x, y, strided(out, name));
    return out;
}

Tensor compare(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
    Tensor a_conv, b_conv;
    NoGradGuard no_grad;
    return binary_forward(op, name, a, b, a_conv, b_conv);
}

// A 0-d tensor holding a scalar operand: it takes the tensor's dtype, except that a
// non-integral scalar with an integer tensor gives float32 (as a Python float does).
Tensor scalar_like(const Tensor& x, double value) {
    LUMEN_CHECK(x.defined(), "elementwise", "got an undefined tensor");
    bool integral = std::isfinite(value) && std::floor(value) == value;
    DType dtype = x.is_floating_point() || integral ? x.dtype() : DType::float32;
    if (dtype == DType::bool_) dtype = integral ? DType::int64 : DType::float32;
    return scalar_tensor(value, dtype, x.device());
}

}  // namespace

// ---- unary ----

Tensor neg(const Tensor& x) {
    LUMEN_CHECK(x.defined(), "neg", "got an undefined tensor");
    LUMEN_CHECK(x.dtype() != DType::bool_, "neg", "not defined for bool tensors; use logical_not");
    Tensor y = empty(x.shape(), x.dtype(), x.device());
    unary_kernel(UnaryOp::neg, {}, x, y, "neg");
    // d(-x) = -1
    record_backward("neg", {x}, y, [](const Tensor& grad_out) { return grads(neg(grad_out)); });
    return y;
}

Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, "abs", x, {}, false); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, "exp", x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, "log", x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, "sqrt", x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::rsqrt, "rsqrt", x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::square, "square", x, {}, false); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::sin, "sin", x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::cos, "cos", x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, "tanh", x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, "sigmoid", x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, "relu", x, {}, false); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::silu, "silu", x); }
Tensor elu(const Tensor& x, double alpha) { return unary(UnaryOp::elu, "elu", x, {alpha, 0}); }
Tensor pow(const Tensor& x, double exponent) {
    return unary(UnaryOp::pow_scalar, "pow", x, {exponent, 0});
}

Tensor sign(const Tensor& x) {
    Tensor y = empty(x.shape(), x.dtype(), x.device());
    unary_kernel(UnaryOp::sign, {}, x, y, "sign");
    // d sign(x) = 0 almost everywhere
    record_backward("sign", {x}, y, [](const Tensor& grad_out) { return grads(zeros_like(grad_out)); });
    return y;
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
    LUMEN_CHECK(approximate == "none" || approximate == "tanh", "gelu",
                "approximate must be 'none' or 'tanh', got '", approximate, "'");
    return unary(approximate == "none" ? UnaryOp::gelu : UnaryOp::gelu_tanh, "gelu", x);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
    LUMEN_CHECK(beta != 0, "softplus", "beta must be non-zero");
    return unary(UnaryOp::softplus, "softplus", x, {beta, threshold});
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
    LUMEN_CHECK(min || max, "clamp", "at least one of min and max must be given");
    double inf = std::numeric_limits<double>::infinity();
    return unary(UnaryOp::clamp, "clamp", x, {min.value_or(-inf), max.value_or(inf)}, false);
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
    return unary(UnaryOp::leaky_relu, "leaky_relu", x, {negative_slope, 0});
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
    LUMEN_CHECK(min_val <= max_val, "hardtanh", "min_val cannot be greater than max_val, got min_val=",
                min_val, " and max_val=", max_val);
    return unary(UnaryOp::hardtanh, "hardtanh", x, {min_val, max_val}, false);
}

Tensor logical_not(const Tensor& x) {
    Tensor y = empty(x.shape(), DType::bool_, x.device());
    unary_kernel(UnaryOp::logical_not, {}, x, y, "logical_not");
    return y;
}

// ---- binary arithmetic ----

Tensor add(const Tensor& a, const Tensor& b) {
    Tensor x, y;
    Tensor out = binary_forward(BinaryOp::add, "add", a, b, x, y);
    // d(a + b) = (1, 1), summed over broadcast dims
    record_backward("add", {x, y}, out, [sa = x.shape(), sb = y.shape()](const Tensor& g) {
        return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
    });
    return out;
}

void add_into(const Tensor& dst, const Tensor& src) {
    profiler::Scope profile(profiler::Kind::op, "add_into", dst);
    LUMEN_CHECK(dst.defined() && src.defined(), "add_into", "got an undefined tensor");
    check_same_device("add_into", {dst, src});
    LUMEN_CHECK(dst.dtype() == src.dtype(), "add_into", "dtypes differ: ", dst.dtype(),
                " += ", src.dtype());
    for (int i = 0; i < dst.ndim(); ++i)
        LUMEN_CHECK(dst.strides()[i] != 0 || dst.shape()[i] <= 1, "add_into", "dst of shape ",
                    dst.shape(), " has stride 0 in dim ", i, ": an expanded view repeats elements");
    // The output aliases the first operand element for element, which a map allows.
    StridedView out = strided(dst, "add_into");
    LUMEN_DISPATCH(dst, binary_forward, BinaryOp::add, out,
                   strided_as(src, dst.shape(), "add_into"), out);
    dst.storage()->bump_version();
}

Tensor sub(const Tensor& a, const Tensor& b) {
    Tensor x, y;
    Tensor out = binary_forward(BinaryOp::sub, "sub", a, b, x, y);
    // d(a - b) = (1, -1)
    bool need_b = y.requires_grad();
    record_backward("sub", {x, y}, out, [sa = x.shape(), sb = y.shape(), need_b](const Tensor& g) {
        return std::vector<Tensor>{sum_to(g, sa), need_b ? neg(sum_to(g, sb)) : Tensor()};
    });
    return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
    Tensor x, y;
    Tensor out = binary_forward(BinaryOp::mul, "mul", a, b, x, y);
    // d(a b) = (b, a)
    bool need_a = x.requires_grad(), need_b = y.requires_grad();
    record_backward("mul", {x, y}, out,
                    [sx = save(need_b ? x : Tensor()), sy = save(need_a ? y : Tensor()), need_a,
                     need_b, shape_a = x.shape(), shape_b = y.shape()](const Tensor& g) {
                        return std::vector<Tensor>{
                            need_a ? sum_to(mul(g, sy.get()), shape_a) : Tensor(),
                            need_b ? sum_to(mul(g, sx.get()), shape_b) : Tensor()};
                    });
    return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
    Tensor x, y;
    Tensor out = binary_forward(BinaryOp::div, "div", a, b, x, y);
    // d(a / b) = (1 / b, -a / b^2)
    bool need_b = y.requires_grad();
    record_backward("div", {x, y}, out,
                    [sx = save(need_b ? x : Tensor()), sy = save(y), need_b, shape_a = x.shape(),
                     shape_b = y.shape()](const Tensor& g) {
                        Tensor b = sy.get();
                        Tensor grad_a = sum_to(div(g, b), shape_a);
                        Tensor grad_b;
                        if (need_b) grad_b = sum_to(neg(div(mul(g, sx.get()), mul(b, b))), shape_b);
                        return std::vector<Tensor>{grad_a, grad_b};
                    });
    return out;
}

Tensor pow(const Tensor& a, const Tensor& b) {
    Tensor x, y;
    Tensor out = binary_forward(BinaryOp::pow, "pow", a, b, x, y);
    // d(a^b) = (b a^(b-1), a^b log a); the second is 0 where a == 0 and b >= 0 (PyTorch)
    bool need_a = x.requires_grad(), need_b = y.requires_grad();
    record_backward("pow", {x, y}, out,
                    [sx = save(x), sy = save(y), so = save(out), need_a, need_b,
                     shape_a = x.shape(), shape_b = y.shape()](const Tensor& g) {
                        Tensor base = sx.get(), exponent = sy.get();
                        Tensor grad_a, grad_b;
                        if (need_a) grad_a = sum_to(mul(g, mul(exponent, pow(base, sub(exponent, 1.0)))), shape_a);
                        if (need_b) {
                            Tensor d = mul(g, mul(so.get(), log(base)));
                            d = masked_fill(d, logical_and(eq(base, 0.0), ge(exponent, 0.0)), 0.0);
                            grad_b = sum_to(d, shape_b);
                        }
                        return std::vector<Tensor>{grad_a, grad_b};
                    });
    return out;
}

namespace {
// maximum/minimum: the gradient goes to the selected operand; ties split it equally.
Tensor extremum(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
    Tensor x, y;
    Tensor out = binary_forward(op, name, a, b, x, y);
    bool is_max = op == BinaryOp::maximum;
    record_backward(name, {x, y}, out,
                    [sx = save(x), sy = save(y), is_max, shape_a = x.shape(),
                     shape_b = y.shape()](const Tensor& g) {
                        Tensor first = sx.get(), second = sy.get();
                        Tensor wins = is_max ? gt(first, second) : lt(first, second);
                        Tensor loses = is_max ? lt(first, second) : gt(first, second);
                        Tensor half = mul(g, 0.5);
                        Tensor tie_share = where(eq(first, second), half, 0.0);
                        return std::vector<Tensor>{
                            sum_to(where(wins, g, tie_share), shape_a),
                            sum_to(where(loses, g, tie_share), shape_b)};
                    });
    return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(BinaryOp::maximum, "maximum", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(BinaryOp::minimum, "minimum", a, b); }

Tensor add(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor sub(const Tensor& a, double b) { return sub(a, scalar_like(a, b)); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }
Tensor div(const Tensor& a, double b) { return div(a, scalar_like(a, b)); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(b, a), b); }

// ---- comparisons ----

Tensor eq(const Tensor& a, const Tensor& b) { return compare(BinaryOp::eq, "eq", a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(BinaryOp::ne, "ne", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(BinaryOp::lt, "lt", a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(BinaryOp::le, "le", a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(BinaryOp::gt, "gt", a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(BinaryOp::ge, "ge", a, b); }
Tensor eq(const Tensor& a, double b) { return eq(a, scalar_like(a, b)); }
Tensor ne(const Tensor& a, double b) { return ne(a, scalar_like(a, b)); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_like(a, b)); }
Tensor le(const Tensor& a, double b) { return le(a, scalar_like(a, b)); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_like(a, b)); }
Tensor ge(const Tensor& a, double b) { return ge(a, scalar_like(a, b)); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
    return compare(BinaryOp::logical_and, "logical_and", a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
    return compare(BinaryOp::logical_or, "logical_or", a, b);
}

// ---- selection ----

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
    profiler::Scope profile(profiler::Kind::op, "where", a);
    LUMEN_CHECK(condition.defined() && a.defined() && b.defined(), "where", "got an undefined tensor");
    LUMEN_CHECK(condition.dtype() == DType::bool_, "where", "condition must be bool, got ",
                condition.dtype());
    check_same_device("where", {condition, a, b});
    Shape shape = broadcast_shapes(broadcast_shapes(condition.shape(), a.shape(), "where"),
                                   b.shape(), "where");
    DType dtype = promote_types(a.dtype(), b.dtype());
    Tensor x = a.to(dtype), y = b.to(dtype);
    Tensor out = empty(shape, dtype, a.device());
    StridedView c_view = strided_as(condition, shape, "where");
    StridedView x_view = strided_as(x, shape, "where"), y_view = strided_as(y, shape, "where");
    LUMEN_DISPATCH(a, where_forward, c_view, x_view, y_view, strided(out, "where"));
    // d where(c, a, b) = (c, not c), summed over broadcast dims
    record_backward("where", {x, y}, out,
                    [sc = save(condition), shape_a = x.shape(), shape_b = y.shape()](const Tensor& g) {
                        Tensor c = sc.get();
                        return std::vector<Tensor>{sum_to(where(c, g, 0.0), shape_a),
                                                   sum_to(where(logical_not(c), g, 0.0), shape_b)};
                    });
    return out;
}

Tensor where(const Tensor& condition, const Tensor& a, double b) {
    return where(condition, a, scalar_like(a, b));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
    LUMEN_CHECK(broadcast_shapes(mask.shape(), x.shape(), "masked_fill") == x.shape(),
                "masked_fill", "mask of shape ", mask.shape(), " does not broadcast to input shape ",
                x.shape());
    Tensor fill = scalar_tensor(value, x.dtype(), x.device());
    return where(mask, fill, x);
}

}  // namespace lumen
