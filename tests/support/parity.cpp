// CPU/CUDA parity helpers; see parity.h.
#include "support/parity.h"

#include <string>

namespace lumen::testing {

std::vector<Tensor> output_and_grads(const Function& f, const std::vector<Tensor>& inputs,
                                     Device device, bool noncontiguous_first) {
    std::vector<Tensor> args;
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined()) {
            args.push_back(Tensor());
            continue;
        }
        Tensor placed = inputs[i].to(device);
        if (i == 0 && noncontiguous_first) {
            REQUIRE(placed.ndim() >= 2);
            placed = noncontiguous(placed);
            REQUIRE(!placed.is_contiguous());
        }
        if (placed.is_floating_point()) placed = placed.detach().requires_grad_();
        args.push_back(placed);
    }
    Tensor y = f(args);
    REQUIRE(y.device() == device);
    y.backward(random_input(y.shape(), 99).to(y.dtype()).to(device));
    std::vector<Tensor> out{y.detach().cpu()};
    for (const Tensor& arg : args) {
        if (!arg.defined() || !arg.requires_grad()) continue;
        REQUIRE(arg.grad().defined());
        REQUIRE(arg.grad().device() == device);
        out.push_back(arg.grad().cpu());
    }
    return out;
}

void require_cuda_parity(const Function& f, const std::vector<Tensor>& inputs, double output_tol,
                         double grad_tol, bool noncontiguous_first) {
    std::vector<Tensor> want = output_and_grads(f, inputs, Device::cpu(), noncontiguous_first);
    std::vector<Tensor> got = output_and_grads(f, inputs, Device::cuda(), noncontiguous_first);
    REQUIRE(got.size() == want.size());
    INFO("output shape " << text(want[0].shape()));
    for (size_t i = 0; i < got.size(); ++i) {
        INFO((i == 0 ? std::string("output")
                     : "gradient of floating input " + std::to_string(i) + " (counted from 1)"));
        double tol = i == 0 ? output_tol : grad_tol;
        require_close(got[i], want[i], tol, tol);
    }
}

void require_cuda_parity(const UnaryFunction& f, const Tensor& x, double output_tol,
                         double grad_tol) {
    require_cuda_parity([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x}, output_tol,
                        grad_tol);
}

void require_same_on_gpu(const Tensor& got, const Tensor& want, double tol) {
    REQUIRE(got.is_cuda());
    CHECK(got.dtype() == want.dtype());
    require_close(got.cpu().to(DType::float64), want.to(DType::float64), tol, tol);
}

std::vector<Tensor> every_dtype(const Shape& shape, uint64_t seed) {
    Tensor base = mul(random_input(shape, seed, 0, 1), 100.0).to(DType::int64);
    std::vector<Tensor> out;
    for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8,
                        DType::bool_, DType::float16, DType::bfloat16})
        out.push_back(base.to(dtype));
    return out;
}

}  // namespace lumen::testing
