// softmax and log_softmax: checks, the contiguous layout the kernels need, and the backward
// rules, which run dedicated kernels on the saved output (the input is not kept). Kernels in
// ops/cpu/softmax.cpp and ops/cuda/softmax.cu.
#include "ops/softmax.h"

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/softmax_kernels.h"

namespace lumen {

namespace {

Tensor softmax_along(const Tensor& x, int64_t dim, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    profiler::Scope profile(profiler::Kind::op, op, x);
    bool half = x.dtype() == DType::float16 || x.dtype() == DType::bfloat16;
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64 || (half && x.is_cuda()),
                op, "expects a float32 or float64 tensor (float16/bfloat16 on CUDA), got a ",
                x.dtype(), " ", x.is_cuda() ? "CUDA" : "CPU", " tensor (shape ", x.shape(), ")");
    int d = wrap_dim(dim, x.ndim(), op);
    Tensor input;
    {
        NoGradGuard no_grad;  // the node below maps the gradient to x directly
        input = x.contiguous();
    }
    Tensor y = empty(x.shape(), x.dtype(), x.device());
    LUMEN_DISPATCH(x, softmax_forward, strided(input, op), strided(y, op), d, log);
    // softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g); sums along d
    record_backward(op, {x}, y, [d, log, op, saved_y = save(y)](const Tensor& grad_out) {
        Tensor y = saved_y.get();
        Tensor g = grad_out.contiguous();
        Tensor grad_x = empty(y.shape(), y.dtype(), y.device());
        LUMEN_DISPATCH(y, softmax_backward, strided(y, op), strided(g, op), strided(grad_x, op), d,
                       log);
        return std::vector<Tensor>{grad_x};
    });
    return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_along(x, dim, false); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_along(x, dim, true); }

}  // namespace lumen
