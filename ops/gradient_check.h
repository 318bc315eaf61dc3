// Numerical gradient checking for anyone writing a new op or module: the analytic gradients
// that autograd computes are compared with central finite differences, in float64. This is
// how every op and module of lumen is tested, and how a researcher checks a new attention
// variant before training it (examples/custom_attention.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lumen {

struct GradientCheckOptions {
    double eps = 1e-6;   // central-difference step
    double rtol = 1e-5;  // pass when |analytic - numeric| <= atol + rtol |numeric|
    double atol = 1e-7;
    // Check every param_stride-th element (and the last) of each tensor in `params`, to keep
    // whole models affordable; inputs are always checked element by element.
    int64_t param_stride = 1;
};

struct GradientCheckResult {
    bool passed = true;
    double max_abs_error = 0;  // over every checked element
    std::string failure;       // the worst element of the first failing tensor, when not passed
};

// check_gradients: for loss = sum(f(inputs) * w) with a fixed random w, compares d loss / d t from
// autograd with (loss(t + eps) - loss(t - eps)) / (2 eps) for every element of every floating input
// and of every tensor in `params` (tensors f uses without taking them as inputs, e.g. a module's
// parameters: pass module.parameters()). Floating inputs are made leaves requiring grad; all
// checked tensors must be float64 CPU tensors (use module.to(DType::float64)). Costs two calls
// of f per element, so keep shapes small. Throws [check_gradients] for a non-float64 or CUDA
// tensor.
GradientCheckResult check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                    const std::vector<Tensor>& inputs,
                                    const std::vector<Tensor>& params = {},
                                    const GradientCheckOptions& options = {});

}  // namespace lumen
