// Global gradient norm and clipping with ops (any device; per-tensor partial norms summed in
// float64 on the host), and the host-side scan of the NaN/inf guard (runs only on failure).
#include "train/grad_utils.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/autograd.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen::train {

namespace {

void check_norm_type(double norm_type) {
    LUMEN_CHECK(norm_type > 0, "clip_grad_norm_", "norm_type must be > 0 or inf, got ", norm_type);
}

}  // namespace

double total_grad_norm(const std::vector<Tensor>& params, double norm_type) {
    check_norm_type(norm_type);
    NoGradGuard no_grad;
    const bool infinity = std::isinf(norm_type);
    double total = 0.0;
    for (const Tensor& p : params) {
        Tensor g = p.grad();
        if (!g.defined() || g.numel() == 0) continue;
        if (infinity) {
            total = std::max(total, amax(abs(g)).item<double>());
        } else if (norm_type == 2.0) {
            total += sum(square(g)).item<double>();
        } else {
            total += sum(pow(abs(g), norm_type)).item<double>();
        }
    }
    return infinity ? total : std::pow(total, 1.0 / norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
    LUMEN_CHECK(max_norm > 0, "clip_grad_norm_", "max_norm must be > 0, got ", max_norm);
    const double norm = total_grad_norm(params, norm_type);
    if (!std::isfinite(norm)) {
        LUMEN_CHECK(!error_if_nonfinite, "clip_grad_norm_", "the total norm of order ", norm_type,
                    " of the gradients is ", norm);
        return norm;
    }
    // PyTorch's coefficient, with its 1e-6 guard against a zero norm.
    const double coefficient = max_norm / (norm + 1e-6);
    if (coefficient >= 1.0) return norm;
    NoGradGuard no_grad;
    for (const Tensor& p : params) {
        Tensor g = p.grad();
        if (g.defined()) g.copy_(mul(g, coefficient));
    }
    return norm;
}

NonFinite find_non_finite(const std::vector<std::pair<std::string, Tensor>>& tensors) {
    for (const auto& [name, t] : tensors) {
        if (!t.defined() || !t.is_floating_point()) continue;
        std::vector<double> values = t.detach().contiguous().cpu().to_vector<double>();
        for (size_t i = 0; i < values.size(); ++i)
            if (!std::isfinite(values[i])) return {name, int64_t(i), values[i]};
    }
    return {};
}

void check_finite(const nn::Module& module, double loss, int64_t step,
                  std::optional<double> grad_norm) {
    std::vector<std::pair<std::string, Tensor>> values = module.named_parameters();
    if (std::isfinite(loss)) {
        if (!grad_norm) {
            std::vector<Tensor> params;
            for (auto& [name, p] : values) params.push_back(p);
            grad_norm = total_grad_norm(params);
        }
        if (std::isfinite(*grad_norm)) return;
    }
    std::vector<std::pair<std::string, Tensor>> grads;
    for (auto& [name, p] : values) grads.emplace_back("gradient of " + name, p.grad());
    for (auto& [name, p] : values) name = "parameter " + name;
    NonFinite first = find_non_finite(values);
    if (!first.found()) first = find_non_finite(grads);
    std::ostringstream where;
    if (first.found())
        where << "first non-finite: " << first.name << " at index " << first.index << " = "
              << first.value;
    else
        where << "every parameter and gradient is finite";
    LUMEN_FAIL("nan_guard", "step ", step, ": loss is ", loss, "; ", where.str());
}

}  // namespace lumen::train
