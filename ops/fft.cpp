// rfft / irfft / fftconv: argument checks, moving the transformed dim last (differentiable
// transposes around a row primitive), the norm scale factors, and the autograd nodes whose
// backwards are again FFTs. Kernels in ops/cpu/fft.cpp and ops/cuda/fft.cu.
#include "ops/fft.h"

#include <cmath>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/fft_kernels.h"

namespace lumen {

namespace {

void check_floating(const Tensor& x, const char* op) {
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, op,
                "expects a float32 or float64 tensor, got ", x.dtype(), " (shape ", x.shape(), ")");
}

// The factor of the norm mode: forward transforms (rfft) scale by 1, 1/n, 1/sqrt(n) for
// "backward", "forward", "ortho"; inverse transforms (irfft) by 1/n, 1, 1/sqrt(n).
double norm_scale(const std::string& norm, int64_t n, bool inverse, const char* op) {
    double length = double(n);
    if (norm == "backward") return inverse ? 1.0 / length : 1.0;
    if (norm == "forward") return inverse ? 1.0 : 1.0 / length;
    if (norm == "ortho") return 1.0 / std::sqrt(length);
    LUMEN_FAIL(op, "unknown norm \"", norm, "\" (expected \"backward\", \"forward\" or \"ortho\")");
}

// rfft along the last dim of x: (..., length) -> (..., n/2 + 1, 2).
Tensor rfft_rows(const Tensor& x, int64_t n, double scale) {
    profiler::Scope profile(profiler::Kind::op, "rfft", x);
    Tensor input;
    {
        NoGradGuard no_grad;
        input = x.contiguous();
    }
    int64_t length = x.size(-1), count = 1;
    for (int64_t i = 0; i + 1 < x.ndim(); ++i) count *= x.size(i);
    FftRows rows{x.dtype(), count, length, n, scale};
    Shape shape = x.shape();
    shape.back() = n / 2 + 1;
    shape.push_back(2);
    Tensor out = empty(shape, x.dtype(), x.device());
    if (rows.rows > 0) LUMEN_DISPATCH(x, rfft_forward, rows, input.data_ptr(), out.data_ptr());
    // grad_x[t] = scale Re(sum_k g[k] e^{+2 pi i k t / n}) (the adjoint of the DFT rows)
    record_backward("rfft", {x}, out, [rows, shape = x.shape()](const Tensor& grad_out) {
        Tensor g = grad_out.contiguous();
        Tensor grad_x = empty(shape, g.dtype(), g.device());
        if (rows.rows > 0) LUMEN_DISPATCH(g, rfft_backward, rows, g.data_ptr(), grad_x.data_ptr());
        return std::vector<Tensor>{grad_x};
    });
    return out;
}

// irfft along dim -2 of x (..., length, 2) -> (..., n).
Tensor irfft_rows(const Tensor& x, int64_t n, double scale) {
    profiler::Scope profile(profiler::Kind::op, "irfft", x);
    Tensor input;
    {
        NoGradGuard no_grad;
        input = x.contiguous();
    }
    int64_t length = x.size(-2), count = 1;
    for (int64_t i = 0; i + 2 < x.ndim(); ++i) count *= x.size(i);
    FftRows rows{x.dtype(), count, length, n, scale};
    Shape shape = x.shape();
    shape.pop_back();
    shape.back() = n;
    Tensor out = empty(shape, x.dtype(), x.device());
    if (rows.rows > 0) LUMEN_DISPATCH(x, irfft_forward, rows, input.data_ptr(), out.data_ptr());
    // grad_x[k] = scale m_k rfft(g)[k]: bins 0 < k < n/2 appear twice in the Hermitian sum
    record_backward("irfft", {x}, out, [rows, shape = x.shape()](const Tensor& grad_out) {
        Tensor g = grad_out.contiguous();
        Tensor grad_x = empty(shape, g.dtype(), g.device());
        if (rows.rows > 0) LUMEN_DISPATCH(g, irfft_backward, rows, g.data_ptr(), grad_x.data_ptr());
        return std::vector<Tensor>{grad_x};
    });
    return out;
}

// grad_u, grad_k (k's shape), grad_D (undefined without D) of fftconv on u's device.
std::vector<Tensor> fftconv_grads(const ConvShape& shape, const Tensor& u, const Tensor& k,
                                  const Tensor& d, const Tensor& grad_out, const Shape& k_shape) {
    Tensor g = grad_out.contiguous();
    Tensor grad_u = empty_like(u), grad_k = empty(k_shape, k.dtype(), k.device());
    Tensor grad_d = d.defined() ? empty_like(d) : Tensor();
    if (shape.channels * shape.length == 0) {  // grad_u and grad_k are empty; D gets 0
        if (d.defined()) grad_d.fill_(0.0);
        return {grad_u, grad_k, grad_d};
    }
    const void* d_data = d.defined() ? d.data_ptr() : nullptr;
    void* grad_d_data = d.defined() ? grad_d.data_ptr() : nullptr;
    LUMEN_DISPATCH(u, fftconv_backward, shape, u.data_ptr(), k.data_ptr(), d_data, g.data_ptr(),
                   grad_u.data_ptr(), grad_k.data_ptr(), grad_d_data);
    return {grad_u, grad_k, grad_d};
}

}  // namespace

Tensor rfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
    check_floating(x, "rfft");
    LUMEN_CHECK(x.ndim() >= 1, "rfft", "expects at least 1 dim, got a 0-d tensor");
    int d = wrap_dim(dim, x.ndim(), "rfft");
    int64_t length = n.value_or(x.size(d));
    LUMEN_CHECK(length >= 1, "rfft", "invalid number of data points (", length, ") along dim ", dim,
                " of shape ", x.shape(), " (expected n >= 1)");
    double scale = norm_scale(norm, length, false, "rfft");
    int last = int(x.ndim()) - 1;
    // (.., L at d, ..) -> (.., L last) -> (.., bins last, 2) -> bins back at d.
    Tensor out = rfft_rows(x.transpose(d, last), length, scale);
    return out.transpose(d, last);
}

Tensor irfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
    check_floating(x, "irfft");
    LUMEN_CHECK(x.ndim() >= 2 && x.size(-1) == 2, "irfft",
                "expects a complex tensor as (..., 2) (re, im) with at least one complex dim, "
                "got shape ",
                x.shape());
    int complex_dims = int(x.ndim()) - 1;
    int d = wrap_dim(dim, complex_dims, "irfft");
    int64_t bins = x.size(d);
    int64_t length = n.value_or(2 * (bins - 1));
    LUMEN_CHECK(length >= 1, "irfft", "invalid number of data points (", length, ") along dim ",
                dim, " of complex shape ", x.shape(), " (expected n >= 1)");
    double scale = norm_scale(norm, length, true, "irfft");
    int last = complex_dims - 1;
    Tensor out = irfft_rows(x.transpose(d, last), length, scale);
    return out.transpose(d, last);
}

Tensor fftconv(const Tensor& u, const Tensor& k, const Tensor& D) {
    profiler::Scope profile(profiler::Kind::op, "fftconv", u);
    constexpr const char* op = "fftconv";
    check_same_device(op, {u, k, D});
    check_floating(u, op);
    LUMEN_CHECK(u.ndim() >= 2, op, "u must be (..., H, L), got shape ", u.shape());
    const int64_t channels = u.size(-2), length = u.size(-1);
    bool k_ok = (k.ndim() == 2 || (k.ndim() == 3 && k.size(0) == 1)) && k.size(-2) == channels &&
                k.size(-1) == length;
    LUMEN_CHECK(k_ok, op, "k must be (H, L) or (1, H, L) = (", channels, ", ", length,
                ") for u of shape ", u.shape(), ", got shape ", k.shape());
    if (D.defined())
        LUMEN_CHECK(D.ndim() == 1 && D.size(0) == channels, op, "D must be (", channels,
                    "), got shape ", D.shape());
    for (const auto& [t, name] : {std::pair{k, "k"}, std::pair{D, "D"}}) {
        if (!t.defined()) continue;
        LUMEN_CHECK(t.dtype() == u.dtype(), op, name, " has dtype ", t.dtype(), " but u has ",
                    u.dtype());
        LUMEN_CHECK(t.device() == u.device(), op, name, " is on ", t.device(), " but u is on ",
                    u.device());
    }
    Tensor u_c, k_c, d_c;
    {
        NoGradGuard no_grad;
        u_c = u.contiguous();
        k_c = k.contiguous();
        if (D.defined()) d_c = D.contiguous();
    }
    int64_t rows = channels * length;
    ConvShape shape{u.dtype(), rows > 0 ? u.numel() / rows : 0, channels, length};
    // With no channels or length the (..., 0) shapes leave nothing to compute.
    if (rows == 0) shape.outer = 0;
    Tensor y = empty(u.shape(), u.dtype(), u.device());
    const void* d_data = d_c.defined() ? d_c.data_ptr() : nullptr;
    LUMEN_DISPATCH(u, fftconv_forward, shape, u_c.data_ptr(), k_c.data_ptr(), d_data, y.data_ptr());
    // grad_u = g correlated with k + D g; grad_k = sum over rows of g correlated with u;
    // grad_D = sum g u (ops/cpu/fft.cpp, ops/cuda/fft.cu)
    record_backward(op, {u, k, D}, y,
                    [shape, su = save(u_c), sk = save(k_c), sd = save(d_c),
                     k_shape = k.shape()](const Tensor& grad_out) {
                        Tensor d = sd.defined() ? sd.get() : Tensor();
                        return fftconv_grads(shape, su.get(), sk.get(), d, grad_out, k_shape);
                    });
    return y;
}

}  // namespace lumen
