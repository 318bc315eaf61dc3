// check_gradients: analytic gradients through autograd, numeric ones by perturbing each element in
// place (through its strides, so non-contiguous tensors stay non-contiguous).
#include "ops/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/autograd.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "ops/reduce.h"

namespace lumen {

namespace {

double* element_at(const Tensor& t, int64_t linear) {
    int64_t offset = 0;
    for (int64_t d = t.ndim() - 1; d >= 0; --d) {
        offset += (linear % t.shape()[size_t(d)]) * t.strides()[size_t(d)];
        linear /= t.shape()[size_t(d)];
    }
    return static_cast<double*>(t.data_ptr()) + offset;
}

void check_checkable(const Tensor& t, const char* what, size_t index) {
    LUMEN_CHECK(t.dtype() == DType::float64 && t.is_cpu(), "check_gradients", what, " ", index,
                " must be a float64 CPU tensor, got ", t.dtype(), " on ", t.device(), " (shape ",
                t.shape(), ")");
}

}  // namespace

GradientCheckResult check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                    const std::vector<Tensor>& inputs,
                                    const std::vector<Tensor>& params,
                                    const GradientCheckOptions& options) {
    std::vector<Tensor> leaves, checked;
    std::vector<std::string> names;
    for (size_t i = 0; i < inputs.size(); ++i) {
        Tensor leaf = inputs[i].detach();
        if (leaf.is_floating_point()) {
            check_checkable(leaf, "input", i);
            leaf.requires_grad_(true);
            checked.push_back(leaf);
            names.push_back("input " + std::to_string(i));
        }
        leaves.push_back(leaf);
    }
    for (size_t i = 0; i < params.size(); ++i) {
        check_checkable(params[i], "parameter", i);
        checked.push_back(params[i]);
        names.push_back("parameter " + std::to_string(i));
    }
    Generator generator(12345);
    Tensor weight;
    auto loss_of = [&] {
        Tensor y = f(leaves);
        if (!weight.defined())
            weight = sub(mul(rand(y.shape(), DType::float64, &generator), 2.0), 1.0);
        return sum(mul(y, weight));
    };
    std::vector<Tensor> analytic = grad({loss_of()}, checked);

    GradientCheckResult result;
    NoGradGuard no_grad;
    for (size_t k = 0; k < checked.size(); ++k) {
        const Tensor& x = checked[k];
        Tensor got =
            analytic[k].defined() ? analytic[k].contiguous() : zeros(x.shape(), DType::float64);
        const double* got_data = got.data_ptr<double>();
        bool is_param = k >= checked.size() - params.size();
        int64_t stride = is_param ? std::max<int64_t>(options.param_stride, 1) : 1;
        const int64_t last = x.numel() - 1;
        for (int64_t i = 0; i <= last; i = i == last ? last + 1 : std::min(i + stride, last)) {
            double* element = element_at(x, i);
            double saved = *element;
            *element = saved + options.eps;
            double plus = loss_of().item<double>();
            *element = saved - options.eps;
            double minus = loss_of().item<double>();
            *element = saved;
            double numeric = (plus - minus) / (2 * options.eps);
            double error = std::abs(got_data[i] - numeric);
            result.max_abs_error = std::max(result.max_abs_error, error);
            bool bad = !(error <= options.atol + options.rtol * std::abs(numeric));
            if (bad && result.passed) {
                std::ostringstream os;
                os << names[k] << " (shape " << x.shape() << "), element " << i << ": autograd "
                   << got_data[i] << ", finite differences " << numeric;
                result.failure = os.str();
                result.passed = false;
            }
        }
    }
    return result;
}

}  // namespace lumen
