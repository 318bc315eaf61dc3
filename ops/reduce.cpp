// Reductions (sum, mean, max/min, amax/amin, argmax/argmin, var/std, logsumexp) and sum_to:
// dim handling, output shape and dtype, device dispatch, and each backward rule beside its
// forward. Kernels in ops/cpu/reduce.cpp and ops/cuda/reduce.cu; backward rules are written
// with ops, so they run on either device.
#include "ops/reduce.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/reduce_kernels.h"

namespace lumen {

namespace {

std::vector<Tensor> one(const Tensor& t) { return {t}; }

bool is_half(DType dtype) { return dtype == DType::float16 || dtype == DType::bfloat16; }

// The half types reduce on CUDA only (accumulating in float32); the CPU kernels reject them.
void check_half_on_cuda(const Tensor& x, const char* op) {
    LUMEN_CHECK(!is_half(x.dtype()) || x.is_cuda(), op,
                "float16/bfloat16 reductions run on CUDA only, got a ", x.dtype(),
                " CPU tensor (shape ", x.shape(), "); convert it with .to(DType::float32)");
}

// The kernels of x's device.
void reduce_kernel(ReduceOp kind, const Tensor& x, const StridedView& out, uint32_t mask,
                   const char* op) {
    check_half_on_cuda(x, op);
    LUMEN_DISPATCH(x, reduce_forward, kind, strided(x, op), out, mask);
}

// The reduced dims of x as bits (bit d = dim d); an empty `dims` reduces every dim.
uint32_t dims_mask(const Tensor& x, const Dims& dims, const char* op) {
    LUMEN_CHECK(x.ndim() <= kMaxDims, op, "supports at most ", kMaxDims, " dims, got shape ",
                x.shape());
    if (x.ndim() == 0) {
        for (int64_t dim : dims) wrap_dim(dim, 0, op);
        return 0;
    }
    if (dims.empty()) return uint32_t((1u << x.ndim()) - 1);
    uint32_t mask = 0;
    for (int64_t dim : dims) {
        int d = wrap_dim(dim, x.ndim(), op);
        LUMEN_CHECK(!(mask >> d & 1), op, "dim ", d, " appears more than once in dims ", dims,
                    " (shape ", x.shape(), ")");
        mask |= 1u << d;
    }
    return mask;
}

Dims mask_dims(uint32_t mask, int64_t ndim) {
    Dims dims;
    for (int64_t d = 0; d < ndim; ++d)
        if (mask >> d & 1) dims.push_back(d);
    return dims;
}

// x's shape with the reduced dims set to 1 (keepdim) or removed.
Shape reduced_shape(const Shape& shape, uint32_t mask, bool keepdim) {
    Shape out;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (!(mask >> d & 1)) {
            out.push_back(shape[d]);
        } else if (keepdim) {
            out.push_back(1);
        }
    }
    return out;
}

int64_t reduced_count(const Shape& shape, uint32_t mask) {
    int64_t count = 1;
    for (size_t d = 0; d < shape.size(); ++d)
        if (mask >> d & 1) count *= shape[d];
    return count;
}

// A fresh output in the keepdim shape, and its view with x's shape (stride 0 along the
// reduced dims) that the kernels write through.
struct Output {
    Tensor keep;
    StridedView view;
};

Output make_output(const Tensor& x, uint32_t mask, DType dtype, const char* op) {
    Tensor keep = empty(reduced_shape(x.shape(), mask, true), dtype, x.device());
    return {keep, strided_as(keep, x.shape(), op)};
}

// The keepdim result as the caller asked for it (a view: no copy, no autograd node yet).
Tensor shaped(const Tensor& keep, const Tensor& x, uint32_t mask, bool keepdim) {
    return keepdim ? keep : keep.view(reduced_shape(x.shape(), mask, false));
}

// A gradient of the reduced shape in the keepdim shape. A 0-d one is expanded instead
// (a view either way).
Tensor keep_shaped(const Tensor& grad_out, const Shape& keep_shape) {
    return grad_out.ndim() == 0 ? grad_out.expand(keep_shape) : grad_out.reshape(keep_shape);
}

// A gradient of the reduced shape, broadcast back over the reduced dims of x.
Tensor expand_back(const Tensor& grad_out, const Shape& keep_shape, const Shape& x_shape) {
    return keep_shaped(grad_out, keep_shape).expand(x_shape);
}

// float32/float64, and float16/bfloat16 on CUDA.
void check_floating(const Tensor& x, const char* op) {
    bool ok = x.dtype() == DType::float32 || x.dtype() == DType::float64 ||
              (is_half(x.dtype()) && x.is_cuda());
    LUMEN_CHECK(ok, op, "expects a float32 or float64 tensor (float16/bfloat16 on CUDA), got a ",
                x.dtype(), " ", x.is_cuda() ? "CUDA" : "CPU", " tensor (shape ", x.shape(),
                "); convert it with .to(DType::float32)");
}

// amax/amin and the whole-tensor max/min; the gradient is split equally among tied extrema.
Tensor extremum(const Tensor& x, const Dims& dims, bool keepdim, bool is_max, const char* op) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    uint32_t mask = dims_mask(x, dims, op);
    LUMEN_CHECK(reduced_count(x.shape(), mask) > 0, op, "cannot reduce over zero elements: dims ",
                mask_dims(mask, x.ndim()), " of shape ", x.shape(), " are empty");
    Output out = make_output(x, mask, x.dtype(), op);
    reduce_kernel(is_max ? ReduceOp::amax : ReduceOp::amin, x, out.view, mask, op);
    Tensor result = shaped(out.keep, x, mask, keepdim);
    Dims reduced = mask_dims(mask, x.ndim());
    // d amax / dx_i = [x_i == amax] / (number of ties)
    record_backward(
        op, {x}, result,
        [reduced, saved_x = save(x), saved_out = save(out.keep)](const Tensor& grad_out) {
            Tensor x = saved_x.get(), keep = saved_out.get();
            Tensor is_extremum = eq(x, keep);
            Tensor ties = sum(is_extremum, reduced, true);
            return one(where(is_extremum, div(keep_shaped(grad_out, keep.shape()), ties), 0.0));
        });
    return result;
}

// max/min along one dim with indices; records no gradient (max/min do).
ValuesIndices arg_extremum(const Tensor& x, int64_t dim, bool keepdim, bool is_max,
                           const char* op) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_half_on_cuda(x, op);
    int d = wrap_dim(dim, x.ndim(), op);
    uint32_t mask = dims_mask(x, {dim}, op);
    LUMEN_CHECK(reduced_count(x.shape(), mask) > 0, op, "cannot reduce over dim ", d,
                " of size 0 (shape ", x.shape(), ")");
    Output values = make_output(x, mask, x.dtype(), op);
    Output indices = make_output(x, mask, DType::int64, op);
    LUMEN_DISPATCH(x, arg_reduce_forward, is_max, strided(x, op), x.ndim() ? d : 0, values.view,
                   indices.view);
    return {shaped(values.keep, x, mask, keepdim), shaped(indices.keep, x, mask, keepdim)};
}

ValuesIndices max_or_min(const Tensor& x, int64_t dim, bool keepdim, bool is_max) {
    const char* op = is_max ? "max" : "min";
    ValuesIndices result;
    {
        NoGradGuard no_grad;
        result = arg_extremum(x, dim, keepdim, is_max, op);
    }
    int d = wrap_dim(dim, x.ndim(), op);
    Shape x_shape = x.shape();
    Tensor keep_indices = keepdim || x.ndim() == 0 ? result.indices : result.indices.unsqueeze(d);
    // d max / dx_i = [i == argmax]: the gradient lands at the stored index
    record_backward(
        op, {x}, result.values, [d, x_shape, saved = save(keep_indices)](const Tensor& grad_out) {
            if (x_shape.empty()) return one(grad_out);
            Tensor indices = saved.get();
            Shape line(x_shape.size(), 1);
            line[size_t(d)] = x_shape[size_t(d)];
            Tensor positions =
                arange(0, double(x_shape[size_t(d)]), 1, DType::int64, indices.device()).view(line);
            Tensor hit = eq(positions, indices);  // broadcasts to x's shape
            return one(where(hit, keep_shaped(grad_out, indices.shape()), 0.0));
        });
    return result;
}

// var (take_sqrt false) and std.
Tensor variance(const Tensor& x, const Dims& dims, double correction, bool keepdim,
                bool take_sqrt) {
    const char* op = take_sqrt ? "std" : "var";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_floating(x, op);
    uint32_t mask = dims_mask(x, dims, op);
    Output out = make_output(x, mask, x.dtype(), op);
    LUMEN_DISPATCH(x, var_forward, strided(x, op), out.view, mask, correction, take_sqrt);
    Tensor result = shaped(out.keep, x, mask, keepdim);
    Dims reduced = mask_dims(mask, x.ndim());
    double divisor = std::max(double(reduced_count(x.shape(), mask)) - correction, 0.0);
    // d var / dx = 2 (x - mean) / (n - correction); d std / dx = that / (2 std)
    record_backward(op, {x}, result,
                    [reduced, divisor, take_sqrt, saved_x = save(x),
                     saved_out = save(out.keep)](const Tensor& grad_out) {
                        Tensor x = saved_x.get(), keep = saved_out.get();
                        Tensor centered = sub(x, mean(x, reduced, true));
                        Tensor scale = keep_shaped(grad_out, keep.shape());
                        scale =
                            take_sqrt ? div(scale, mul(keep, divisor)) : mul(scale, 2.0 / divisor);
                        return one(mul(centered, scale));
                    });
    return result;
}

}  // namespace

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
    profiler::Scope profile(profiler::Kind::op, "sum", x);
    uint32_t mask = dims_mask(x, dims, "sum");
    DType dtype = x.is_floating_point() ? x.dtype() : DType::int64;
    Output out = make_output(x, mask, dtype, "sum");
    reduce_kernel(ReduceOp::sum, x, out.view, mask, "sum");
    Tensor result = shaped(out.keep, x, mask, keepdim);
    Shape keep_shape = out.keep.shape(), x_shape = x.shape();
    // d sum / dx = 1: the gradient broadcasts back over the reduced dims
    record_backward("sum", {x}, result, [keep_shape, x_shape](const Tensor& grad_out) {
        return one(expand_back(grad_out, keep_shape, x_shape));
    });
    return result;
}

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
    profiler::Scope profile(profiler::Kind::op, "mean", x);
    check_floating(x, "mean");
    uint32_t mask = dims_mask(x, dims, "mean");
    Output out = make_output(x, mask, x.dtype(), "mean");
    reduce_kernel(ReduceOp::mean, x, out.view, mask, "mean");
    Tensor result = shaped(out.keep, x, mask, keepdim);
    Shape keep_shape = out.keep.shape(), x_shape = x.shape();
    double scale = 1.0 / double(reduced_count(x_shape, mask));
    // d mean / dx = 1 / n, broadcast back over the reduced dims
    record_backward("mean", {x}, result, [keep_shape, x_shape, scale](const Tensor& grad_out) {
        return one(expand_back(mul(grad_out, scale), keep_shape, x_shape));
    });
    return result;
}

Tensor max(const Tensor& x) {
    LUMEN_CHECK(x.numel() > 0, "max", "cannot take the max of an empty tensor (shape ", x.shape(),
                ")");
    return extremum(x, {}, false, true, "max");
}

Tensor min(const Tensor& x) {
    LUMEN_CHECK(x.numel() > 0, "min", "cannot take the min of an empty tensor (shape ", x.shape(),
                ")");
    return extremum(x, {}, false, false, "min");
}

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) {
    return max_or_min(x, dim, keepdim, true);
}

ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
    return max_or_min(x, dim, keepdim, false);
}

Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
    return extremum(x, dims, keepdim, true, "amax");
}

Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) {
    return extremum(x, dims, keepdim, false, "amin");
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
    NoGradGuard no_grad;
    return arg_extremum(x, dim, keepdim, true, "argmax").indices;
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
    NoGradGuard no_grad;
    return arg_extremum(x, dim, keepdim, false, "argmin").indices;
}

Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
    return variance(x, dims, correction, keepdim, false);
}

Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
    return variance(x, dims, correction, keepdim, true);
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
    profiler::Scope profile(profiler::Kind::op, "logsumexp", x);
    check_floating(x, "logsumexp");
    uint32_t mask = dims_mask(x, dims, "logsumexp");
    Output out = make_output(x, mask, x.dtype(), "logsumexp");
    LUMEN_DISPATCH(x, logsumexp_forward, strided(x, "logsumexp"), out.view, mask);
    Tensor result = shaped(out.keep, x, mask, keepdim);
    // d logsumexp / dx = exp(x - logsumexp): the softmax over the reduced dims
    record_backward("logsumexp", {x}, result,
                    [saved_x = save(x), saved_out = save(out.keep)](const Tensor& grad_out) {
                        Tensor x = saved_x.get(), keep = saved_out.get();
                        return one(mul(exp(sub(x, keep)), keep_shaped(grad_out, keep.shape())));
                    });
    return result;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
    profiler::Scope profile(profiler::Kind::op, "sum_to", x);
    if (x.shape() == shape) return x;
    LUMEN_CHECK(x.ndim() <= kMaxDims, "sum_to", "supports at most ", kMaxDims, " dims, got shape ",
                x.shape());
    int64_t lead = x.ndim() - int64_t(shape.size());
    bool fits = lead >= 0;
    uint32_t mask = 0;
    for (int64_t d = 0; fits && d < x.ndim(); ++d) {
        int64_t target = d < lead ? 1 : shape[size_t(d - lead)];
        fits = target == x.shape()[size_t(d)] || target == 1;
        if (d < lead || (target == 1 && x.shape()[size_t(d)] != 1)) mask |= 1u << d;
    }
    LUMEN_CHECK(fits, "sum_to", "cannot sum shape ", x.shape(), " down to ", shape,
                ": it does not broadcast to ", x.shape());
    // Only size-1 dims go away: the same elements, so a reshape (a view when possible).
    if (shape_numel(shape) == x.numel()) return x.reshape(shape);
    Tensor out = empty(shape, x.is_floating_point() ? x.dtype() : DType::int64, x.device());
    reduce_kernel(ReduceOp::sum, x, strided_as(out, x.shape(), "sum_to"), mask, "sum_to");
    Shape x_shape = x.shape();
    // d sum_to / dx = 1: the gradient broadcasts back to x's shape
    record_backward("sum_to", {x}, out,
                    [x_shape](const Tensor& grad_out) { return one(grad_out.expand(x_shape)); });
    return out;
}

}  // namespace lumen
