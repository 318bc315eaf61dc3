// CPU/CUDA parity helpers for tests/cuda: run one computation on both devices from the same
// inputs and the same upstream gradient, then compare outputs and input gradients. The CPU
// kernels are the reference. Callers check have_gpu() first.
//   require_cuda_parity([](const Tensor& t) { return flip(t, {0}); }, random_input({3, 4}), 0, 0);
#pragma once

#include <functional>
#include <vector>

#include "support/gradcheck.h"

namespace lumen::testing {

using UnaryFunction = std::function<Tensor(const Tensor&)>;

// f's output and input gradients on `device`. Each input is copied there (undefined inputs stay
// undefined; with `noncontiguous_first` the first, of rank >= 2, reaches f through
// noncontiguous()); floating ones become leaves. The output is back-propagated with a fixed
// upstream gradient, the same on every device (random_input(y.shape(), 99) in y's dtype).
// Returns, on the CPU, the output and then the gradient of each floating input, in order.
std::vector<Tensor> output_and_grads(const Function& f, const std::vector<Tensor>& inputs,
                                     Device device, bool noncontiguous_first = false);

// REQUIREs that f gives on the GPU the output and floating-input gradients it gives on the CPU:
// |gpu - cpu| <= tol + tol |cpu| with tol = output_tol for the output, grad_tol for gradients
// (0 for ops that only move values).
void require_cuda_parity(const Function& f, const std::vector<Tensor>& inputs, double output_tol,
                         double grad_tol, bool noncontiguous_first = false);
// The same for an op of one input.
void require_cuda_parity(const UnaryFunction& f, const Tensor& x, double output_tol,
                         double grad_tol);

// REQUIREs that got, computed on the GPU, has want's dtype and shape, and its values to
// |got - want| <= tol + tol |want| (exactly with tol 0; NaN where want has NaN).
void require_same_on_gpu(const Tensor& got, const Tensor& want, double tol = 0);

// The same small non-negative integers (below 100) in every dtype that moves through the
// layout and index kernels: float32, float64, int64, int32, uint8, bool, float16, bfloat16.
std::vector<Tensor> every_dtype(const Shape& shape, uint64_t seed);

}  // namespace lumen::testing
