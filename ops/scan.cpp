// selective_scan: argument checks, the layout the kernels need (contiguous, Bm/Cm transposed
// to (B, G, L, N)), and the autograd node whose backward runs the dedicated kernel. Kernels
// in ops/cpu/scan.cpp and ops/cuda/scan.cu.
#include "ops/scan.h"

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/scan_kernels.h"

namespace lumen {

namespace {

constexpr const char* kOp = "selective_scan";

void check_same(const Tensor& t, const char* name, const Tensor& u) {
    if (!t.defined()) return;
    LUMEN_CHECK(t.dtype() == u.dtype(), kOp, name, " has dtype ", t.dtype(), " but u has ",
                u.dtype());
    LUMEN_CHECK(t.device() == u.device(), kOp, name, " is on ", t.device(), " but u is on ",
                u.device());
}

// Checks Bm / Cm against (B, N, L) or (B, G, N, L); returns G.
int64_t check_bc(const Tensor& t, const char* name, int64_t batch, int64_t channels, int64_t state,
                 int64_t length) {
    LUMEN_CHECK(t.ndim() == 3 || t.ndim() == 4, kOp, name,
                " must be (B, N, L) or (B, G, N, L), got shape ", t.shape());
    int64_t groups = t.ndim() == 4 ? t.size(1) : 1;
    LUMEN_CHECK(t.size(0) == batch && t.size(-2) == state && t.size(-1) == length, kOp, name,
                " has shape ", t.shape(), " but u is (", batch, ", ", channels, ", ", length,
                ") and A has d_state ", state);
    LUMEN_CHECK(groups >= 1 && channels % groups == 0, kOp, name, " has ", groups,
                " groups, which must divide the ", channels, " channels");
    return groups;
}

void check_inputs(const Tensor& u, const Tensor& delta, const Tensor& A, const Tensor& Bm,
                  const Tensor& Cm, const Tensor& D, const Tensor& z, const Tensor& delta_bias) {
    LUMEN_CHECK(u.dtype() == DType::float32 || u.dtype() == DType::float64, kOp,
                "expects float32 or float64 inputs, got u of dtype ", u.dtype());
    LUMEN_CHECK(u.ndim() == 3, kOp, "u must be (B, D, L), got shape ", u.shape());
    LUMEN_CHECK(delta.shape() == u.shape(), kOp, "delta has shape ", delta.shape(),
                " but u has shape ", u.shape());
    LUMEN_CHECK(A.ndim() == 2 && A.size(0) == u.size(1), kOp,
                "A must be (D, N) with D = ", u.size(1), ", got shape ", A.shape());
    int64_t channels = u.size(1);
    for (const auto& [t, name] : {std::pair{D, "D"}, std::pair{delta_bias, "delta_bias"}}) {
        if (!t.defined()) continue;
        LUMEN_CHECK(t.ndim() == 1 && t.size(0) == channels, kOp, name, " must be (", channels,
                    "), got shape ", t.shape());
    }
    if (z.defined())
        LUMEN_CHECK(z.shape() == u.shape(), kOp, "z has shape ", z.shape(), " but u has shape ",
                    u.shape());
    for (const auto& [t, name] :
         {std::pair{delta, "delta"}, std::pair{A, "A"}, std::pair{Bm, "Bm"}, std::pair{Cm, "Cm"},
          std::pair{D, "D"}, std::pair{z, "z"}, std::pair{delta_bias, "delta_bias"}})
        check_same(t, name, u);
}

const void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace

Tensor selective_scan(const Tensor& u, const Tensor& delta, const Tensor& A, const Tensor& Bm,
                      const Tensor& Cm, const Tensor& D, const Tensor& z, const Tensor& delta_bias,
                      bool delta_softplus) {
    profiler::Scope profile(profiler::Kind::op, kOp, u);
    check_same_device(kOp, {u, delta, A, Bm, Cm, D, z, delta_bias});
    check_inputs(u, delta, A, Bm, Cm, D, z, delta_bias);
    const int64_t batch = u.size(0), channels = u.size(1), length = u.size(2);
    const int64_t state = A.size(1);
    if (u.is_cuda())
        LUMEN_CHECK(state <= cuda::kMaxScanState, kOp,
                    "the CUDA kernel takes d_state <= ", cuda::kMaxScanState, ", got A of shape ",
                    A.shape());
    int64_t groups = check_bc(Bm, "Bm", batch, channels, state, length);
    LUMEN_CHECK(
        check_bc(Cm, "Cm", batch, channels, state, length) == groups && Cm.ndim() == Bm.ndim(), kOp,
        "Bm has shape ", Bm.shape(), " but Cm has shape ", Cm.shape());
    // Kernel layout: everything contiguous, Bm and Cm as (B, G, L, N).
    Tensor u_c, delta_c, a_c, b_t, c_t, d_c, z_c, bias_c;
    {
        NoGradGuard no_grad;  // the node below maps gradients to the inputs directly
        auto to_bglN = [&](const Tensor& t) {
            return t.reshape({batch, groups, state, length}).transpose(2, 3).contiguous();
        };
        u_c = u.contiguous();
        delta_c = delta.contiguous();
        a_c = A.contiguous();
        b_t = to_bglN(Bm);
        c_t = to_bglN(Cm);
        if (D.defined()) d_c = D.contiguous();
        if (z.defined()) z_c = z.contiguous();
        if (delta_bias.defined()) bias_c = delta_bias.contiguous();
    }
    ScanInputs in;
    in.dtype = u.dtype();
    in.batch = batch;
    in.channels = channels;
    in.length = length;
    in.state = state;
    in.groups = groups;
    in.delta_softplus = delta_softplus;
    in.u = u_c.data_ptr();
    in.delta = delta_c.data_ptr();
    in.A = a_c.data_ptr();
    in.Bm = b_t.data_ptr();
    in.Cm = c_t.data_ptr();
    in.D = data_or_null(d_c);
    in.z = data_or_null(z_c);
    in.delta_bias = data_or_null(bias_c);
    Tensor y = empty(u.shape(), u.dtype(), u.device());
    LUMEN_DISPATCH(u, selective_scan_forward, in, y.data_ptr());
    // Backward: the adjoint recurrence of ops/cpu/scan.cpp (states recomputed per row).
    Shape b_shape = Bm.shape(), c_shape = Cm.shape();
    record_backward(
        kOp, {u, delta, A, Bm, Cm, D, z, delta_bias}, y,
        [in, b_shape, c_shape, su = save(u_c), sdelta = save(delta_c), sa = save(a_c),
         sb = save(b_t), sc = save(c_t), sd = save(d_c), sz = save(z_c),
         sbias = save(bias_c)](const Tensor& grad_out) {
            Tensor u = su.get(), delta = sdelta.get(), a = sa.get(), b = sb.get(), c = sc.get();
            Tensor d = sd.defined() ? sd.get() : Tensor(), z = sz.defined() ? sz.get() : Tensor();
            Tensor bias = sbias.defined() ? sbias.get() : Tensor();
            ScanInputs args = in;  // the saved tensors' pointers (same storage)
            args.u = u.data_ptr();
            args.delta = delta.data_ptr();
            args.A = a.data_ptr();
            args.Bm = b.data_ptr();
            args.Cm = c.data_ptr();
            args.D = data_or_null(d);
            args.z = data_or_null(z);
            args.delta_bias = data_or_null(bias);
            Tensor g = grad_out.contiguous();
            Tensor grad_u = empty_like(u), grad_delta = empty_like(delta), grad_a = empty_like(a);
            Tensor grad_b = empty_like(b), grad_c = empty_like(c);
            Tensor grad_d = d.defined() ? empty_like(d) : Tensor();
            Tensor grad_z = z.defined() ? empty_like(z) : Tensor();
            Tensor grad_bias = bias.defined() ? empty_like(bias) : Tensor();
            ScanGrads grads{grad_u.data_ptr(),
                            grad_delta.data_ptr(),
                            grad_a.data_ptr(),
                            grad_b.data_ptr(),
                            grad_c.data_ptr(),
                            d.defined() ? grad_d.data_ptr() : nullptr,
                            z.defined() ? grad_z.data_ptr() : nullptr,
                            bias.defined() ? grad_bias.data_ptr() : nullptr};
            LUMEN_DISPATCH(u, selective_scan_backward, args, g.data_ptr(), grads);
            // (B, G, L, N) back to the caller's layout.
            auto from_bglN = [](const Tensor& t, const Shape& shape) {
                return t.transpose(2, 3).contiguous().reshape(shape);
            };
            return std::vector<Tensor>{grad_u,
                                       grad_delta,
                                       grad_a,
                                       from_bglN(grad_b, b_shape),
                                       from_bglN(grad_c, c_shape),
                                       grad_d,
                                       grad_z,
                                       grad_bias};
        });
    return y;
}

}  // namespace lumen
